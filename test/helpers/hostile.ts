// Hostile request bodies shared by the property tests: objects shaped almost like a service
// (or sandbox, or candidate) body, each field a near miss or something else entirely.
import fc from 'fast-check';

/** near-token strings: valid tokens, long and odd strings, upper case, control characters */
export const tokenish = fc.oneof(
  fc.stringMatching(/^[a-z0-9._-]{1,12}$/),
  fc.string({ maxLength: 70 }),
  fc.constantFrom('A', 'UPPER', 'a.b-c_d', 'x'.repeat(64), 'x'.repeat(65), '', ' ', '\u0000', '__proto__', 'constructor'),
);

/**
 * A body with every field the API knows, each a near miss or `other` (fc.anything() for
 * validators called directly; fc.jsonValue() for bodies sent as JSON).
 */
export function nearService(other: fc.Arbitrary<unknown>): fc.Arbitrary<Record<string, unknown>> {
  return fc.record(
    {
      endpoint: fc.oneof(fc.constantFrom('https://a.example.com', 'http://x', 'https://', 'HTTPS://A.EXAMPLE.COM/p?q', 'ftp://x.example.com', 'https://[::1', 'http:// spaces .com', 'https://a.example.com/' + 'x'.repeat(3000)), fc.string()),
      capabilities: fc.oneof(fc.array(tokenish, { maxLength: 34 }), other),
      capability: tokenish,
      properties: fc.oneof(fc.dictionary(tokenish, fc.oneof(fc.string({ maxLength: 300 }), other), { maxKeys: 34 }), other),
      iot: fc.oneof(fc.constant(null), fc.record({ deviceClasses: fc.array(tokenish, { maxLength: 33 }), protocols: fc.array(tokenish, { maxLength: 33 }) }, { requiredKeys: [] }), other),
      deprecated: fc.oneof(fc.boolean(), other),
      locked: fc.oneof(fc.boolean(), other),
      sunset_date: fc.oneof(fc.constantFrom(null, '2030-01-01', '2030-02-30', '2030-13-01', '0000-00-00', '9999-12-31', '2030-1-1'), other),
      serviceId: fc.oneof(tokenish, other),
      name: fc.oneof(fc.string({ maxLength: 70 }), other),
      location: fc.oneof(fc.record({ lat: fc.double(), lon: fc.double() }), other),
      tier: fc.oneof(tokenish, other),
      apiKey: fc.oneof(fc.string(), other),
      // leases (liveness): bounds, their neighbours, non-integers; heartbeat statuses
      ttl: fc.oneof(fc.constantFrom(null, 4, 5, 30, 86400, 86401, 5.5, -1, 0, 1e20, '30'), fc.integer(), other),
      deregisterAfter: fc.oneof(fc.constantFrom(null, 59, 60, 604800, 604801, 60.5, '60'), fc.integer(), other),
      status: fc.oneof(fc.constantFrom('passing', 'critical', 'unknown', 'PASSING', '', null), other),
    },
    { requiredKeys: [] },
  );
}
