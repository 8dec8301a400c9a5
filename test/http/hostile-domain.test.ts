// Hostile input, property-based (fast-check), against the pure functions the routes use:
// the query-string canonicaliser and every body validator. No I/O here; the same kinds of
// input against the live server are in hostile-server.test.ts.
//
// Properties: nothing throws except the designed ApiError (400) of a validator; the
// canonicaliser always answers ok, redirect or error; a redirect's Location is itself
// canonical and means the same filters; any way of spelling the same parameters (percent-
// encoding any character, either hex case, '+' or '%20' for a space, any order, duplicates,
// unknown parameters) lands on the one canonical form. (Pure; it sits with the other hostile-
// input tests rather than in test/unit so that the whole hostile-input story is in one place.)
import t from 'tap';
import fc from 'fast-check';
import { canonicalize, DEVICES_SPEC, SEARCH_SPEC, serialize, toFilters } from '../../src/hot/search/canonical.js';
import { ApiError } from '../../src/hot/domain/errors.js';
import { check, parseServiceCreate, parseServicePatch, validators } from '../../src/hot/domain/validation.js';
import { nearService } from '../helpers/hostile.js';

const RUNS = 3000;

// ---- query strings ----

const NAMES = ['capability', 'property', 'deviceClass', 'protocol', 'iotReady', 'healthy', 'limit', 'after', 'x', '', 'constructor', '__proto__', 'Capability', 'capability[]', 'limit%00'];
/** fragments that hostile clients send: double encoding, NUL, overlong UTF-8, surrogates, ... */
const TRICKS = ['%252e', '%2e', '%00', '%C0%AE', '%c0%ae', '%ED%A0%80', '%F0%9F%98%80', '%EF%BF%BD', '%', '%%', '%G1', '%4', '+', '%20', '%2B', '&', '=', '%26', '%3D', ':', '%3A', '..', '\u00e9', '\ufffd', '\u0000', '\ud800', '%FF', '%E2%82', 'TRUE', '0100', '1000', '1001', '0', '-1', '1e3'];

const fragment = fc.oneof(fc.constantFrom(...TRICKS), fc.string({ maxLength: 6 }), fc.string({ unit: 'binary', maxLength: 4 }), fc.stringMatching(/^[a-z0-9._-]{1,8}$/));
const rawQuery = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.array(fc.tuple(fc.constantFrom(...NAMES), fc.array(fragment, { maxLength: 4 }), fc.constantFrom('=', '', '=='), fc.constantFrom('&', '&&', ';')), { maxLength: 6 }).map((ps) => ps.map(([n, v, eq, sep]) => n + eq + v.join('') + sep).join('')),
);

t.test('the canonicaliser never throws, and its redirects land on canonical URLs', async (t) => {
  for (const spec of [SEARCH_SPEC, DEVICES_SPEC]) {
    fc.assert(
      fc.property(rawQuery, (raw) => {
        const r = canonicalize('/services', raw, spec);
        if (r.kind === 'error') return typeof r.message === 'string' && r.message.length > 0;
        if (r.kind === 'ok') {
          // served as is: the filters are either valid or a 400, never an exception
          const f = toFilters(r.params, spec);
          return f.ok || typeof f.message === 'string';
        }
        const q = r.location.includes('?') ? r.location.slice(r.location.indexOf('?') + 1) : null;
        // spelled canonically, checked without the code under test: known names in
        // code-point order, each value unreserved characters, ':' or upper-case %XX
        if (q !== null) {
          const names = q.split('&').map((p) => p.slice(0, p.indexOf('=')));
          if (!q.split('&').every((p) => /^[A-Za-z]+=([A-Za-z0-9._~:-]|%[0-9A-F]{2})+$/.test(p) && Object.hasOwn(spec, p.slice(0, p.indexOf('='))))) return false;
          if (names.some((n, i) => i > 0 && n < names[i - 1]!)) return false;
        }
        // and a fixed point: canonicalising it again changes nothing
        const again = canonicalize('/services', q, spec);
        if (again.kind !== 'ok') return false; // a redirect must land on a canonical URL
        if (q !== null && again.canonical !== q) return false;
        return true;
      }),
      { numRuns: RUNS },
    );
  }
  t.pass(`${RUNS} hostile query strings per spec`);
});

// values as a client means them (decoded); then many spellings of the same thing
const tokenValue = fc.stringMatching(/^[a-z0-9._-]{1,12}$/);
const anyValue = fc.string({ minLength: 1, maxLength: 12, unit: 'grapheme' });
const meaning = fc.record({
  capability: fc.uniqueArray(tokenValue, { maxLength: 3 }),
  property: fc.uniqueArray(fc.tuple(tokenValue, anyValue).map(([k, v]) => `${k}:${v}`), { maxLength: 3, selector: (p) => p.slice(0, p.indexOf(':')) }),
  protocol: fc.option(tokenValue, { nil: undefined }),
  limit: fc.option(fc.integer({ min: 1, max: 1000 }).map(String), { nil: undefined }),
});

/** Spell `s` in one of the many legal ways: each byte literal or %XX in either case, space as + or %20. */
function respell(s: string, choices: number[]): string {
  let out = '';
  let i = 0;
  for (const ch of s) {
    const c = choices[i++ % choices.length]!;
    const bytes = [...Buffer.from(ch, 'utf8')];
    const literalOk = /^[A-Za-z0-9._~:-]$/.test(ch) || (ch === ' ' && c % 3 === 0);
    if (literalOk && c % 2 === 0) out += ch === ' ' ? '+' : ch;
    else out += bytes.map((b) => '%' + (c % 4 < 2 ? b.toString(16).toUpperCase() : b.toString(16)).padStart(2, '0')).join('');
  }
  return out;
}

// The expected canonical form of a meaning, written from the contract's rules alone (never
// with canonicalize, the code under test): names in code-point order, values de-duplicated
// and sorted by code point, the default limit dropped, unreserved characters and ':' literal,
// every other UTF-8 byte as %XX in upper case.
const byCodePoint = (a: string, b: string) => {
  const x = [...a].map((c) => c.codePointAt(0)!);
  const y = [...b].map((c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
};
const byHand = (v: string) =>
  [...Buffer.from(v, 'utf8')].map((b) => (/[A-Za-z0-9._~:-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : '%' + b.toString(16).toUpperCase().padStart(2, '0'))).join('');
function expectedQuery(m: { capability: string[]; property: string[]; protocol?: string; limit?: string }): string {
  const parts: string[] = [];
  for (const c of [...new Set(m.capability)].sort(byCodePoint)) parts.push('capability=' + byHand(c));
  if (m.limit !== undefined && m.limit !== '100') parts.push('limit=' + m.limit);
  for (const p of [...new Set(m.property)].sort(byCodePoint)) parts.push('property=' + byHand(p));
  if (m.protocol !== undefined) parts.push('protocol=' + byHand(m.protocol));
  return parts.join('&');
}

t.test('every spelling of the same query lands on the canonical form written from the rules', async (t) => {
  fc.assert(
    fc.property(meaning, fc.array(fc.nat(7), { minLength: 1, maxLength: 16 }), fc.boolean(), fc.nat(100), (m, choices, withUnknown, seed) => {
      const pairs: [string, string][] = [];
      for (const c of m.capability) pairs.push(['capability', c]);
      for (const p of m.property) pairs.push(['property', p]);
      if (m.protocol) pairs.push(['protocol', m.protocol]);
      if (m.limit) pairs.push(['limit', m.limit]);
      const canonicalQuery = expectedQuery(m);
      // a respelled, shuffled, duplicated spelling with noise
      const spelled = pairs.map(([n, v]) => `${respell(n, choices)}=${respell(v, choices)}`);
      if (spelled.length) spelled.push(spelled[seed % spelled.length]!);
      if (withUnknown) spelled.push('utm_source=' + respell('x y', choices));
      spelled.sort((a, b) => ((a.length * 31 + seed) % 7) - ((b.length * 31 + seed) % 7));
      const raw = spelled.join('&') || null;
      const r = canonicalize('/services', raw, SEARCH_SPEC);
      if (r.kind === 'ok') return (raw ?? '') === canonicalQuery && r.canonical === canonicalQuery;
      if (r.kind === 'redirect') return raw !== canonicalQuery && r.location === (canonicalQuery ? '/services?' + canonicalQuery : '/services');
      return false;
    }),
    { numRuns: RUNS },
  );
  t.pass(`${RUNS} meanings, each spelled differently`);
});

t.test('canonical forms written out by hand', async (t) => {
  // [path, raw query (null: no '?'), expected: 'ok' (served as is) or the redirect's Location]
  const table: [string, string | null, string][] = [
    ['/services', null, 'ok'],
    ['/services', '', '/services'], // a bare '?'
    ['/services', 'capability=x', 'ok'],
    ['/services', 'capability=X', '/services?capability=x'],
    ['/services', 'capability=b&capability=a', '/services?capability=a&capability=b'],
    ['/services', 'capability=a&capability=a', '/services?capability=a'],
    ['/services', 'capability=', '/services'],
    ['/services', 'capability=x&utm_source=mail', '/services?capability=x'],
    ['/services', 'protocol=mqtt&deviceClass=sensor', '/services?deviceClass=sensor&protocol=mqtt'],
    ['/services', 'deviceClass=sensor&protocol=mqtt', 'ok'],
    ['/services', 'limit=100', '/services'],
    ['/services', 'limit=0100', '/services'],
    ['/services', 'limit=007', '/services?limit=7'],
    ['/services', 'limit=1000', 'ok'],
    ['/services', 'limit=abc', 'ok'], // kept as it is, then refused (400) by toFilters
    ['/services', 'iotReady=true', 'ok'],
    ['/services', 'iotReady=TRUE', '/services?iotReady=true'],
    ['/services', 'iotReady=false', '/services'],
    ['/services', 'iotReady=1', '/services'],
    ['/services', 'property=Zone:EU', '/services?property=zone:EU'],
    ['/services', 'property=k%3Av', '/services?property=k:v'],
    ['/services', 'property=k:%e2%82%ac', '/services?property=k:%E2%82%AC'],
    ['/services', 'property=k:%E2%82%AC', 'ok'],
    ['/services', 'property=k:!', '/services?property=k:%21'],
    ['/services', 'property=k:a~', 'ok'],
    ['/services', 'property=k:a%7E', '/services?property=k:a~'],
    ['/services', 'property=k:a+b', '/services?property=k:a%20b'],
    ['/services', 'property=k:b&property=k:B', '/services?property=k:B&property=k:b'], // values are case-sensitive
    // U+FFFF before U+10000: code points, not UTF-16 code units
    ['/services', 'property=k:%F0%90%80%80&property=k:%EF%BF%BF', '/services?property=k:%EF%BF%BF&property=k:%F0%90%80%80'],
    ['/services', 'after=12&capability=x', 'ok'],
    ['/services', 'capability=x&after=12', '/services?after=12&capability=x'],
    ['/devices', 'iotReady=true&capability=x', '/devices?capability=x'], // not a /devices parameter
    ['/devices', 'property=k:v', '/devices'],
    ['/devices', 'capability=x&deviceClass=sensor&limit=5&protocol=mqtt', 'ok'],
  ];
  for (const [path, raw, want] of table) {
    const r = canonicalize(path, raw, path === '/devices' ? DEVICES_SPEC : SEARCH_SPEC);
    const got = r.kind === 'ok' ? 'ok' : r.kind === 'redirect' ? r.location : `error: ${r.message}`;
    t.equal(got, want, `${path}?${raw ?? ''}`);
    if (r.kind === 'ok') t.equal(r.canonical, raw ?? '', `${path}?${raw ?? ''}: served with its own query`);
  }
  t.same(
    table.filter(([, , w]) => w !== 'ok').map(([, , w]) => w.split('?')[1] ?? '').filter((q) => q !== '' && !/^([A-Za-z]+=([A-Za-z0-9._~:-]|%[0-9A-F]{2})+)(&[A-Za-z]+=([A-Za-z0-9._~:-]|%[0-9A-F]{2})+)*$/.test(q)),
    [],
    'every hand-written Location is itself spelled canonically',
  );
});

t.test('the encoding tricks named in the brief: canonicalised or 400, never anything else', async (t) => {
  const cases: [string, 'redirect' | 'error' | 'ok'][] = [
    ['capability=%252e', 'ok'], // the value "%2e": canonical as sent, never decoded twice (then 400: not a token)
    ['capability=%2E', 'redirect'], // "." is unreserved: literal in the canonical form
    ['capability=%00', 'ok'], // decodes to NUL: canonical as %00, then refused as a token
    ['property=k:%C0%AE', 'error'], // overlong UTF-8 for '.': does not decode
    ['property=k:%ED%A0%80', 'error'], // a UTF-16 surrogate in UTF-8: does not decode
    ['property=k:a+b', 'redirect'], // '+' means a space: canonical %20
    ['property=k:a%20b', 'ok'],
    ['property=k:%FF', 'error'],
    ['capability=%', 'error'],
  ];
  for (const [raw, kind] of cases) t.equal(canonicalize('/services', raw, SEARCH_SPEC).kind, kind, raw);
  const dbl = canonicalize('/services', 'capability=%252e', SEARCH_SPEC);
  t.same(dbl.kind === 'ok' && dbl.params.get('capability'), ['%2e'], 'double encoding is decoded once');
  t.ok(dbl.kind === 'ok' && !toFilters(dbl.params, SEARCH_SPEC).ok, '... and "%2e" is not a token: 400');
  const dot = canonicalize('/services', 'capability=%2E', SEARCH_SPEC);
  t.equal(dot.kind === 'redirect' && dot.location, '/services?capability=.');
  const nul = canonicalize('/services', 'capability=%00', SEARCH_SPEC);
  t.ok(nul.kind === 'ok' && !toFilters(nul.params, SEARCH_SPEC).ok, 'a NUL token is a 400 once canonical');
  const nulValue = canonicalize('/services', 'property=k:%00', SEARCH_SPEC);
  t.ok(nulValue.kind === 'ok' && !toFilters(nulValue.params, SEARCH_SPEC).ok, 'a NUL in a property value is a 400 (control character)');
  t.equal(canonicalize('/services', 'capability=\ud800', SEARCH_SPEC).kind, 'error', 'a lone surrogate is refused, not thrown');
  const plus = canonicalize('/services', 'property=k:a+b', SEARCH_SPEC);
  t.equal(plus.kind === 'redirect' && plus.location, '/services?property=k:a%20b');
  t.equal(serialize(new Map([['capability', ['a b']]])), 'capability=a%20b');
});

// ---- bodies ----

const nearBody = nearService(fc.anything());
const hostileBody = fc.oneof(fc.anything({ withObjectString: true, withNullPrototype: true, withBigInt: false }), fc.jsonValue(), nearBody, nearBody.map((b) => JSON.parse(JSON.stringify(b)) as unknown));

/** Only the designed failure: an ApiError with a 4xx status. */
function designed(fn: () => unknown): boolean {
  try {
    fn();
    return true;
  } catch (e) {
    return e instanceof ApiError && e.status >= 400 && e.status < 500;
  }
}

t.test('every validator refuses hostile bodies only with its designed 400', async (t) => {
  const all: [string, (b: unknown) => unknown][] = [
    ['parseServiceCreate', parseServiceCreate],
    ['parseServicePatch', parseServicePatch],
    ...Object.entries(validators).map(([name, v]) => [name, (b: unknown) => check(v as never, b)] as [string, (b: unknown) => unknown]),
  ];
  for (const [name, fn] of all) {
    fc.assert(
      fc.property(hostileBody, (b) => designed(() => fn(b))),
      { numRuns: RUNS / 3 },
    );
    t.pass(`${name}: ${RUNS / 3} hostile bodies`);
  }
});

t.test('lease fields: accepted exactly when whole seconds within their bounds', async (t) => {
  const value = fc.oneof(fc.integer({ min: -10, max: 700_000 }), fc.double(), fc.constantFrom(null, '30', true, [], {}, 5, 86400, 60, 604800, 4, 86401, 59, 604801));
  fc.assert(
    fc.property(value, value, (ttl, dereg) => {
      const body = { endpoint: 'https://lease.example.com', capability: 'x', ttl, deregisterAfter: dereg };
      const okTtl = Number.isInteger(ttl) && (ttl as number) >= 5 && (ttl as number) <= 86400;
      const okDereg = Number.isInteger(dereg) && (dereg as number) >= 60 && (dereg as number) <= 604800;
      let created = false;
      try {
        const s = parseServiceCreate(body);
        created = s.ttl === ttl && s.deregisterAfter === dereg;
      } catch (e) {
        if (!(e instanceof ApiError) || e.status !== 400) return false;
      }
      if (created !== (okTtl && okDereg)) return false;
      // PATCH also takes null (drops the lease)
      let patched = false;
      try {
        const c = parseServicePatch({ ttl, deregisterAfter: dereg });
        patched = c.ttl === ttl && c.deregisterAfter === dereg;
      } catch (e) {
        if (!(e instanceof ApiError) || e.status !== 400) return false;
      }
      return patched === ((okTtl || ttl === null) && (okDereg || dereg === null));
    }),
    { numRuns: RUNS },
  );
  t.pass(`${RUNS} lease bodies`);
});
