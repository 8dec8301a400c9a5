// fast-check arbitraries of service bodies with hostile strings, for the tests that hold the
// write path's bytes and the rebuild's (and the stored index text) to each other:
// unicode beyond the BMP, quotes, backslashes, U+2028, DEL, maximal lengths, keys that are
// array indices or "__proto__", IoT or none, any sunset date from year 1 to 9999.
import fc from 'fast-check';

export const token = fc.oneof(
  fc.stringMatching(/^[a-z0-9._-]{1,12}$/),
  // array-index keys come first in a JSON object, numerically; near misses do not
  fc.constantFrom('0', '1', '2', '10', '007', '4294967294', '4294967295', '99999999999', '__proto__', 'constructor', 'x'.repeat(64)),
);
export const hostileText = fc.oneof(
  fc.string({ minLength: 1, maxLength: 40, unit: 'grapheme' }),
  fc.string({ minLength: 1, maxLength: 40, unit: 'binary' }),
  fc.constantFrom('"', '\\', '\\"', '\u2028\u2029', '\u007f', '</script>', '{"a":1}', 'ünïcödé', '𝄞😀', 'a:b:c', ' ', 'x'.repeat(256), '\u00a0\ufeff', 'null'),
);
// property values: 1-256 chars, no control characters (the API refuses them)
// eslint-disable-next-line no-control-regex
export const value = hostileText.filter((v) => v.length <= 256 && !/[\u0000-\u001f\u007f-\u009f]/.test(v) && v.length > 0);
export const endpoint = fc.oneof(
  fc.constantFrom('https://a.example.com', 'http://x', 'https://a.example.com/p?q="x"&r=\\', 'https://ünï.example/😀', 'https://a.example.com/' + 'x'.repeat(2000)),
  fc.webUrl({ withQueryParameters: true, withFragments: true }),
);
export const iot = fc.option(fc.record({ deviceClasses: fc.uniqueArray(token, { minLength: 1, maxLength: 4 }), protocols: fc.uniqueArray(token, { minLength: 1, maxLength: 4 }) }), { nil: null });
export const date = fc.option(
  fc.date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10)),
  { nil: null },
);
/** a POST /services body */
export const serviceBody = fc.record({
  endpoint,
  capabilities: fc.uniqueArray(token, { minLength: 1, maxLength: 5 }),
  properties: fc.dictionary(token, value, { maxKeys: 6 }),
  iot,
  deprecated: fc.boolean(),
  locked: fc.boolean(),
  sunset_date: date,
});

/** a PATCH body: every field optional, any subset changed */
export const servicePatch = fc.record(
  { endpoint, capabilities: fc.uniqueArray(token, { minLength: 1, maxLength: 4 }), properties: fc.dictionary(token, value, { maxKeys: 4 }), iot, deprecated: fc.boolean(), locked: fc.boolean(), sunset_date: date },
  { requiredKeys: [] },
);
