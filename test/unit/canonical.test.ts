// Canonical query strings (contract, "Canonical query strings"), table-driven: each row is a
// raw query and what a client must get for it — ok (served as is), a redirect to an exact
// Location, or an error (400).
import t from 'tap';
import fc from 'fast-check';
import { canonicalize, CursorMemo, DEVICES_SPEC, encodeValue, nextQuery, nextQueryOf, SEARCH_SPEC, toFilters, type QuerySpec } from '../../src/hot/search/canonical.js';

type Expect = { ok: true } | { redirect: string } | { error: true } | { invalid: true };

interface Row {
  name: string;
  raw: string | null;
  expect: Expect;
  spec?: QuerySpec;
}

const P = '/services';

const rows: Row[] = [
  // no query at all / empty query
  { name: 'no ? at all is canonical', raw: null, expect: { ok: true } },
  { name: 'a bare ? redirects to the path', raw: '', expect: { redirect: P } },
  { name: 'only separators redirect to the path', raw: '&&', expect: { redirect: P } },
  { name: 'a trailing & is not canonical', raw: 'capability=a&', expect: { redirect: P + '?capability=a' } },
  // rule 1: unknown parameters and empty values dropped, tokens lower-cased
  { name: 'unknown parameter dropped', raw: 'foo=bar&capability=a', expect: { redirect: P + '?capability=a' } },
  { name: 'only unknown parameters: redirect to the path', raw: 'foo=bar', expect: { redirect: P } },
  { name: 'parameter names are case-sensitive (Capability is unknown)', raw: 'Capability=a', expect: { redirect: P } },
  { name: 'Object.prototype names are unknown parameters', raw: 'constructor=1&toString=2&__proto__=3&hasOwnProperty=4&capability=a', expect: { redirect: P + '?capability=a' } },
  { name: 'empty value dropped', raw: 'capability=&protocol=mqtt', expect: { redirect: P + '?protocol=mqtt' } },
  { name: 'value-less parameter dropped', raw: 'capability&protocol=mqtt', expect: { redirect: P + '?protocol=mqtt' } },
  { name: 'capability lower-cased', raw: 'capability=Print', expect: { redirect: P + '?capability=print' } },
  { name: 'deviceClass lower-cased', raw: 'deviceClass=Sensor', expect: { redirect: P + '?deviceClass=sensor' } },
  { name: 'protocol lower-cased', raw: 'protocol=MQTT', expect: { redirect: P + '?protocol=mqtt' } },
  { name: 'property key lower-cased, value kept', raw: 'property=Color:Red', expect: { redirect: P + '?property=color:Red' } },
  { name: 'property value case is significant (canonical as is)', raw: 'property=color:Red', expect: { ok: true } },
  { name: 'property split at the first colon; later colons literal', raw: 'property=URL:http://x', expect: { redirect: P + '?property=url:http:%2F%2Fx' } },
  { name: 'property value with colons, canonical', raw: 'property=url:a:b:c', expect: { ok: true } },
  // rule 2: iotReady only as true
  { name: 'iotReady=true canonical', raw: 'iotReady=true', expect: { ok: true } },
  { name: 'iotReady=TRUE -> true', raw: 'iotReady=TRUE', expect: { redirect: P + '?iotReady=true' } },
  { name: 'iotReady=True -> true', raw: 'iotReady=True', expect: { redirect: P + '?iotReady=true' } },
  { name: 'iotReady=false dropped', raw: 'iotReady=false', expect: { redirect: P } },
  { name: 'iotReady=1 dropped', raw: 'iotReady=1&capability=a', expect: { redirect: P + '?capability=a' } },
  { name: 'iotReady=yes dropped', raw: 'iotReady=yes', expect: { redirect: P } },
  { name: 'iotReady twice with true in any case: one true', raw: 'iotReady=true&iotReady=TRUE', expect: { redirect: P + '?iotReady=true' } },
  // rule 2: healthy likewise (liveness)
  { name: 'healthy=true canonical', raw: 'healthy=true', expect: { ok: true } },
  { name: 'healthy=TRUE -> true', raw: 'healthy=TRUE', expect: { redirect: P + '?healthy=true' } },
  { name: 'healthy=false dropped', raw: 'healthy=false&capability=a', expect: { redirect: P + '?capability=a' } },
  { name: 'healthy sorts between deviceClass and iotReady', raw: 'iotReady=true&healthy=true&deviceClass=d', expect: { redirect: P + '?deviceClass=d&healthy=true&iotReady=true' } },
  // rule 3: limit
  { name: 'default limit dropped', raw: 'limit=100', expect: { redirect: P } },
  { name: 'default limit with leading zeros dropped', raw: 'limit=0100', expect: { redirect: P } },
  { name: 'leading zeros stripped', raw: 'limit=007', expect: { redirect: P + '?limit=7' } },
  { name: 'limit=7 canonical', raw: 'limit=7', expect: { ok: true } },
  { name: 'limit=1000 canonical', raw: 'limit=1000', expect: { ok: true } },
  { name: 'limit=00 becomes limit=0 (then invalid)', raw: 'limit=00', expect: { redirect: P + '?limit=0' } },
  { name: 'limit=0 canonical but invalid', raw: 'limit=0', expect: { invalid: true } },
  { name: 'limit=1001 canonical but invalid', raw: 'limit=1001', expect: { invalid: true } },
  { name: 'limit=abc canonical but invalid', raw: 'limit=abc', expect: { invalid: true } },
  { name: 'limit=-1 canonical but invalid', raw: 'limit=-1', expect: { invalid: true } },
  { name: 'limit twice canonical but invalid', raw: 'limit=5&limit=6', expect: { invalid: true } },
  // rule 4: de-duplication and sorting
  { name: 'repeated value de-duplicated', raw: 'capability=a&capability=a', expect: { redirect: P + '?capability=a' } },
  { name: 'de-duplicated after lower-casing', raw: 'capability=a&capability=A', expect: { redirect: P + '?capability=a' } },
  { name: 'values sorted', raw: 'capability=b&capability=a', expect: { redirect: P + '?capability=a&capability=b' } },
  { name: 'sorted values canonical', raw: 'capability=a&capability=b', expect: { ok: true } },
  { name: 'parameters sorted by name', raw: 'protocol=mqtt&capability=a', expect: { redirect: P + '?capability=a&protocol=mqtt' } },
  { name: 'names sorted in code-point order (deviceClass < iotReady < limit < property)', raw: 'property=k:v&limit=5&iotReady=true&deviceClass=d', expect: { redirect: P + '?deviceClass=d&iotReady=true&limit=5&property=k:v' } },
  { name: 'interleaved names grouped and sorted', raw: 'capability=b&protocol=p&capability=a', expect: { redirect: P + '?capability=a&capability=b&protocol=p' } },
  { name: 'properties sorted by decoded value', raw: 'property=k:b&property=k:a', expect: { redirect: P + '?property=k:a&property=k:b' } },
  { name: 'properties with upper-case letters sort before lower-case (code points)', raw: 'property=k:a&property=k:B', expect: { redirect: P + '?property=k:B&property=k:a' } },
  // astral (U+1F600) sorts after U+FFFD in code-point order, though its UTF-16 unit is smaller
  { name: 'astral vs BMP: sorted by code point, not UTF-16 unit', raw: 'property=k:%F0%9F%98%80&property=k:%EF%BF%BD', expect: { redirect: P + '?property=k:%EF%BF%BD&property=k:%F0%9F%98%80' } },
  { name: 'astral after BMP is canonical', raw: 'property=k:%EF%BF%BD&property=k:%F0%9F%98%80', expect: { ok: true } },
  { name: 'values compared decoded (%41 is A, sorts before a)', raw: 'property=k:a&property=k:%41', expect: { redirect: P + '?property=k:A&property=k:a' } },
  // rule 5: percent-encoding
  { name: 'unreserved characters literal', raw: 'property=k:AZaz09-._~', expect: { ok: true } },
  { name: 'encoded unreserved letter decoded', raw: 'capability=%61', expect: { redirect: P + '?capability=a' } },
  { name: '%7e becomes ~', raw: 'property=k:%7e', expect: { redirect: P + '?property=k:~' } },
  { name: '%7E becomes ~', raw: 'property=k:%7E', expect: { redirect: P + '?property=k:~' } },
  { name: '%3A becomes a literal colon', raw: 'property=k%3Av', expect: { redirect: P + '?property=k:v' } },
  { name: 'lower-case hex upper-cased', raw: 'property=k:%c3%a9', expect: { redirect: P + '?property=k:%C3%A9' } },
  { name: 'upper-case hex canonical', raw: 'property=k:%C3%A9', expect: { ok: true } },
  { name: 'plus means space; space is %20', raw: 'property=k:a+b', expect: { redirect: P + '?property=k:a%20b' } },
  { name: '%20 is canonical', raw: 'property=k:a%20b', expect: { ok: true } },
  { name: '%2B is a literal plus, canonical', raw: 'property=k:a%2Bb', expect: { ok: true } },
  { name: 'sub-delims are encoded', raw: "property=k:!*'()", expect: { redirect: P + '?property=k:%21%2A%27%28%29' } },
  { name: 'encoded sub-delims canonical', raw: 'property=k:%21%2A%27%28%29%2F%3F%40%24%2C%3B%3D%26', expect: { ok: true } },
  { name: 'encoded parameter name decoded', raw: 'capabilit%79=a', expect: { redirect: P + '?capability=a' } },
  // undecodable queries
  { name: 'malformed escape %zz', raw: 'capability=%zz', expect: { error: true } },
  { name: 'truncated escape at the end', raw: 'capability=a%', expect: { error: true } },
  { name: 'one hex digit escape', raw: 'capability=a%4', expect: { error: true } },
  { name: 'invalid UTF-8 (lone continuation byte)', raw: 'capability=%80', expect: { error: true } },
  { name: 'invalid UTF-8 (%FF)', raw: 'property=k:%FF', expect: { error: true } },
  { name: 'invalid UTF-8 (truncated sequence)', raw: 'property=k:%C3%28', expect: { error: true } },
  { name: 'invalid UTF-8 (encoded surrogate)', raw: 'property=k:%ED%A0%80', expect: { error: true } },
  { name: 'raw (unescaped) non-ASCII is encoded', raw: 'property=k:\u00e9', expect: { redirect: P + '?property=k:%C3%A9' } },
  { name: 'raw invalid UTF-8 (arrives as U+FFFD) is refused', raw: 'property=k:\uFFFD', expect: { error: true } },
  { name: 'undecodable unknown parameter still refused', raw: 'foo=%zz&capability=a', expect: { error: true } },
  // canonical but invalid
  { name: 'bad token', raw: 'capability=a%21', expect: { invalid: true } },
  { name: 'token longer than 64', raw: 'capability=' + 'a'.repeat(65), expect: { invalid: true } },
  { name: 'token of 64 is fine', raw: 'capability=' + 'a'.repeat(64), expect: { ok: true } },
  { name: 'property without colon', raw: 'property=novalue', expect: { invalid: true } },
  { name: 'property with empty key', raw: 'property=:v', expect: { invalid: true } },
  { name: 'property with empty value', raw: 'property=k:', expect: { invalid: true } },
  { name: 'property value over 256 characters', raw: 'property=k:' + 'v'.repeat(257), expect: { invalid: true } },
  { name: 'property value with a control character', raw: 'property=k:a%0Ab', expect: { invalid: true } },
  { name: 'deviceClass repeated with different values', raw: 'deviceClass=a&deviceClass=b', expect: { invalid: true } },
  { name: 'protocol repeated with different values', raw: 'protocol=a&protocol=b', expect: { invalid: true } },
  { name: 'after not a cursor', raw: 'after=xyz', expect: { invalid: true } },
  { name: 'after twice', raw: 'after=1&after=2', expect: { invalid: true } },
  // /devices has no iotReady and no property
  { name: '/devices drops iotReady', raw: 'iotReady=true&protocol=mqtt', spec: DEVICES_SPEC, expect: { redirect: P + '?protocol=mqtt' } },
  { name: '/devices drops property', raw: 'property=k:v', spec: DEVICES_SPEC, expect: { redirect: P } },
  { name: '/devices full canonical query', raw: 'capability=a&deviceClass=d&limit=5&protocol=p', spec: DEVICES_SPEC, expect: { ok: true } },
  { name: '/devices keeps healthy=true', raw: 'capability=a&healthy=true', spec: DEVICES_SPEC, expect: { ok: true } },
];

for (const r of rows) {
  t.test(r.name, async (t) => {
    const spec = r.spec ?? SEARCH_SPEC;
    const c = canonicalize(P, r.raw, spec);
    const e = r.expect;
    if ('redirect' in e) {
      t.same(c, { kind: 'redirect', location: e.redirect });
      // the Location is itself canonical (no redirect loop)
      const q = e.redirect.includes('?') ? e.redirect.slice(e.redirect.indexOf('?') + 1) : null;
      const again = canonicalize(P, q, spec);
      t.equal(again.kind === 'redirect' ? 'redirect' : 'not a redirect', 'not a redirect', 'the Location is canonical');
    } else if ('error' in e) {
      t.equal(c.kind, 'error', 'undecodable: 400 without a redirect');
    } else {
      t.equal(c.kind, 'ok', 'canonical as is');
      if (c.kind !== 'ok') return;
      const f = toFilters(c.params, spec);
      if ('invalid' in e) t.equal(f.ok, false, 'canonical but invalid');
      else t.equal(f.ok, true, f.ok ? 'valid' : f.message);
    }
  });
}

t.test('filters parsed from a canonical query', async (t) => {
  const c = canonicalize(P, 'after=42&capability=a&capability=b&deviceClass=d&healthy=true&iotReady=true&limit=5&property=k:v:w&property=z:Q&protocol=p', SEARCH_SPEC);
  t.equal(c.kind, 'ok');
  if (c.kind !== 'ok') return;
  const f = toFilters(c.params, SEARCH_SPEC);
  t.same(f, {
    ok: true,
    filters: {
      capabilities: ['a', 'b'],
      properties: [
        { key: 'k', value: 'v:w' },
        { key: 'z', value: 'Q' },
      ],
      deviceClass: 'd',
      protocol: 'p',
      iotReady: true,
      healthy: true,
      limit: 5,
      after: '42',
    },
  });
});

t.test('defaults when nothing is given', async (t) => {
  const c = canonicalize(P, null, SEARCH_SPEC);
  if (c.kind !== 'ok') return t.fail('not ok');
  const f = toFilters(c.params, SEARCH_SPEC);
  t.ok(f.ok);
  if (f.ok) {
    t.equal(f.filters.limit, 100);
    t.equal(f.filters.iotReady, false);
    t.same(f.filters.capabilities, []);
  }
});

t.test('next link query: same parameters, after replaced, canonical', async (t) => {
  const c = canonicalize(P, 'after=3&capability=a&limit=2', SEARCH_SPEC);
  if (c.kind !== 'ok') return t.fail('not ok');
  const q = nextQuery(c.params, '17');
  t.equal(q, 'after=17&capability=a&limit=2');
  t.equal(canonicalize(P, q, SEARCH_SPEC).kind, 'ok');
});

t.test('encodeValue', async (t) => {
  const cases: [string, string][] = [
    ['abcXYZ019-._~:', 'abcXYZ019-._~:'],
    [' ', '%20'],
    ['+', '%2B'],
    ['/', '%2F'],
    ['%', '%25'],
    ['é', '%C3%A9'],
    ['\u{1F600}', '%F0%9F%98%80'],
    ["!'()*", '%21%27%28%29%2A'],
    ['\u0000', '%00'],
  ];
  for (const [i, o] of cases) t.equal(encodeValue(i), o, JSON.stringify(i));
});

t.test('CursorMemo: a paged query it answers is exactly what the full path gives', async (t) => {
  // queries from a small alphabet of names and values (valid and not, escapes, repeats), so
  // that the same cursor-less forms come back with other cursors, as paging does
  const name = fc.constantFrom('after', 'capability', 'deviceClass', 'iotReady', 'limit', 'property', 'protocol', 'foo', 'Capability');
  const value = fc.constantFrom('a', 'b', 'print', 'Print', 'zone:z1', 'zone:Z', '7', '0', '100', '1001', 'true', 'x%20y', '%zz', '', '5.2', '12', 'é');
  const query = fc.array(fc.tuple(name, value), { maxLength: 5 }).map((ps) => ps.map(([n, v]) => `${n}=${v}`).join('&'));
  const cursor = fc.oneof(fc.constantFrom('1', '42', '5.3', '007', '1e3', '-1', '%31', '', '9999999999999999', '1.23456', '0&', '3&&', '4&capability=a'), fc.string({ maxLength: 6 }));
  let answered = 0;
  for (const spec of [SEARCH_SPEC, DEVICES_SPEC]) {
    const memo = new CursorMemo(64);
    const full = (raw: string) => {
      const c = canonicalize(P, raw, spec);
      if (c.kind !== 'ok') return null;
      const f = toFilters(c.params, spec);
      return f.ok ? { canonical: c.canonical, params: c.params, filters: f.filters } : null;
    };
    fc.assert(
      fc.property(query, cursor, fc.boolean(), (q0, cur, withRest) => {
        // most random queries redirect: follow to their canonical form (as a client does)
        const c0 = canonicalize(P, q0, spec);
        const q = c0.kind === 'redirect' ? c0.location.slice(P.length + 1) : q0;
        const learned = full(q);
        if (learned) memo.learn(learned);
        const c2 = full(`after=${cur}`);
        if (c2) memo.learn(c2);
        for (const raw of [q, `after=${cur}${withRest && q ? '&' + q : ''}`, learned ? `after=${cur}&${learned.canonical}` : '']) {
          const hit = memo.lookup(raw);
          if (!hit) continue;
          answered++;
          const want = full(raw);
          if (!want) throw new Error(`memo answered ${raw}, the full path refuses or redirects it`);
          if (hit.canonical !== want.canonical) throw new Error(`canonical differs for ${raw}`);
          if (JSON.stringify(hit.filters) !== JSON.stringify(want.filters)) throw new Error(`filters differ for ${raw}: ${JSON.stringify(hit.filters)} vs ${JSON.stringify(want.filters)}`);
          if (nextQueryOf(hit, '77') !== nextQuery(want.params, '77')) throw new Error(`next link differs for ${raw}`);
        }
      }),
      { numRuns: 4000 },
    );
  }
  // found by this property in CI (seed -1829270613): "after=0&" after "after=5" was learned
  const memo = new CursorMemo();
  const c = canonicalize(P, 'after=5', SEARCH_SPEC);
  const f = c.kind === 'ok' ? toFilters(c.params, SEARCH_SPEC) : null;
  if (c.kind === 'ok' && f?.ok) memo.learn({ canonical: c.canonical, params: c.params, filters: f.filters });
  t.ok(memo.lookup('after=6'), 'a known cursor-less form: answered');
  t.equal(memo.lookup('after=6&'), null, 'the same with a trailing "&" (a redirect): not answered');
  t.ok(answered > 500, `the memo answered ${answered} paged queries, each as the full path does`);
});

t.test('CursorMemo: bounded by bytes as well as entries (a key is as long as a query may be)', async (t) => {
  const memo = new CursorMemo(1_000_000, 64 * 1024);
  let most = 0;
  let learnt = 0;
  for (let i = 0; i < 500; i++) {
    const q = `after=7&capability=${'c'.repeat(60)}.${i}&property=${'k'.repeat(60)}:${'v'.repeat(200)}`;
    const c = canonicalize('/services', q, SEARCH_SPEC);
    if (c.kind !== 'ok') throw new Error(`not canonical: ${c.kind}`);
    const f = toFilters(c.params, SEARCH_SPEC);
    if (!f.ok) throw new Error(f.message);
    memo.learn({ params: c.params, filters: f.filters, canonical: c.canonical });
    most = Math.max(most, memo.bytes);
    if (memo.lookup(q)) learnt++;
  }
  t.equal(learnt, 500, 'each one answered from the memo right after it was learnt');
  t.ok(most <= 64 * 1024, `never above its bytes (at most ${most})`);
  t.ok(most > 32 * 1024, '(and it filled them)');
});
