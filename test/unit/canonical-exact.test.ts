// Canonical queries (src/hot/search/canonical.ts) to the letter: the exact 400 message of each
// undecodable query, percent-encoding at the edges of UTF-16 (surrogate pairs), `limit` values
// that only look numeric, every filter message, and the cursor memo's bounds. canonical.test.ts
// holds the contract's table; this file pins what a client reads in each answer. Every
// expected value is written out by hand.
import t from 'tap';
import { canonicalize, CursorMemo, encodeValue, nextQueryOf, SEARCH_SPEC, toFilters, type Canonical } from '../../src/hot/search/canonical.js';

const P = '/services';

t.test('each undecodable query is refused with its own message', async (t) => {
  const bad = (raw: string) => {
    const c = canonicalize(P, raw, SEARCH_SPEC);
    return c.kind === 'error' ? c.message : `not an error: ${c.kind}`;
  };
  const malformed = 'the query string has a malformed percent-escape';
  for (const raw of ['capability=a%', 'capability=a%4', 'capability=%4g', 'capability=%zz', 'capability=a%%41']) t.equal(bad(raw), malformed, raw);
  const notUtf8 = 'the query string does not decode to UTF-8';
  for (const raw of ['capability=%80', 'property=k:%FF', 'property=k:%C3%28', 'property=k:%ED%A0%80']) t.equal(bad(raw), notUtf8, raw);
  const invalid = 'the query string is not valid UTF-8';
  t.equal(bad('property=k:\uFFFD'), invalid, 'U+FFFD (an invalid byte as uWS hands it over)');
  t.equal(bad('property=k:\uD800'), invalid, 'a lone high surrogate');
  t.equal(bad('property=k:\uDC00x'), invalid, 'a lone low surrogate');
});

t.test('encodeValue: four-byte characters at both ends of the surrogate range, and what follows them', async (t) => {
  t.equal(encodeValue('\u{10000}'), '%F0%90%80%80', 'U+10000: high surrogate D800');
  t.equal(encodeValue('\u{10FFFF}'), '%F4%8F%BF%BF', 'U+10FFFF: high surrogate DBFF');
  t.equal(encodeValue('\u{10000}a\u{10FFFF}b'), '%F0%90%80%80a%F4%8F%BF%BFb', 'the character after a pair is kept');
  t.equal(encodeValue('\uD7FFa'), '%ED%9F%BFa', 'U+D7FF, just below the surrogates: one unit');
  t.equal(encodeValue('\uE000a'), '%EE%80%80a', 'U+E000, just above them: one unit');
  t.equal(encodeValue('\uFFFDa'), '%EF%BF%BDa');
  t.equal(encodeValue("a!b'c(d)e*f"), 'a%21b%27c%28d%29e%2Af', 'the characters encodeURIComponent leaves alone, among others');
});

t.test('limit: only a run of digits loses its leading zeros', async (t) => {
  const c = (raw: string) => canonicalize(P, raw, SEARCH_SPEC);
  t.same(c('limit=007x'), { kind: 'ok', canonical: 'limit=007x', params: new Map([['limit', ['007x']]]) }, 'digits then a letter: kept as is (refused later)');
  t.same(c('limit=00a1'), { kind: 'ok', canonical: 'limit=00a1', params: new Map([['limit', ['00a1']]]) }, 'zeros, a letter, a digit: kept as is');
  t.same(c('limit=x007'), { kind: 'ok', canonical: 'limit=x007', params: new Map([['limit', ['x007']]]) });
  t.same(c('limit=0007'), { kind: 'redirect', location: P + '?limit=7' });
  t.same(c('limit=0'), { kind: 'ok', canonical: 'limit=0', params: new Map([['limit', ['0']]]) }, 'a single 0 stays (and is refused later)');
});

t.test('no query at all: canonical, empty, nothing parsed', async (t) => {
  t.strictSame(canonicalize(P, null, SEARCH_SPEC), { kind: 'ok', canonical: '', params: new Map() });
});

/** the answer for a query that must be canonical as it is */
function filters(raw: string) {
  const c = canonicalize(P, raw, SEARCH_SPEC);
  if (c.kind !== 'ok') throw new Error(`${raw}: ${JSON.stringify(c)}`);
  return toFilters(c.params, SEARCH_SPEC);
}

t.test('toFilters: each refusal names the parameter and the value', async (t) => {
  const refused: [string, string][] = [
    ['limit=5&limit=6', 'limit may be given only once'],
    ['deviceClass=a&deviceClass=b', 'deviceClass may be given only once'],
    ['iotReady=true&limit=5&protocol=a&protocol=b', 'protocol may be given only once'],
    ['after=1&after=2', 'after may be given only once'],
    ['capability=a%21', 'capability "a!" is not a valid token ([a-z0-9._-], 1-64 chars)'],
    ['capability=a&capability=b%21', 'capability "b!" is not a valid token ([a-z0-9._-], 1-64 chars)'],
    ['deviceClass=a%21', 'deviceClass "a!" is not a valid token ([a-z0-9._-], 1-64 chars)'],
    ['protocol=' + 'p'.repeat(65), `protocol "${'p'.repeat(65)}" is not a valid token ([a-z0-9._-], 1-64 chars)`],
    ['property=novalue', 'property "novalue" must be key:value with a token key and a 1-256 character value'],
    ['property=k:v&property=x%21:v', 'property "x!:v" must be key:value with a token key and a 1-256 character value'],
    ['limit=0', 'limit must be an integer from 1 to 1000'],
    ['limit=1001', 'limit must be an integer from 1 to 1000'],
    ['limit=10000', 'limit must be an integer from 1 to 1000'],
    ['limit=5x', 'limit must be an integer from 1 to 1000'],
    ['limit=1e2', 'limit must be an integer from 1 to 1000'],
    ['limit=-1', 'limit must be an integer from 1 to 1000'],
    ['after=xyz', 'after is not a cursor from a next link'],
    ['after=1.a', 'after is not a cursor from a next link'],
    ['after=1.23456', 'after is not a cursor from a next link'],
    ['after=1234567890123456', 'after is not a cursor from a next link'],
    ['after=1.', 'after is not a cursor from a next link'],
  ];
  for (const [raw, message] of refused) t.strictSame(filters(raw), { ok: false, message }, raw);
});

t.test('toFilters: the cursors and limits a next link can carry', async (t) => {
  const at = (raw: string) => {
    const f = filters(raw);
    return f.ok ? [f.filters.after, f.filters.limit] : f.message;
  };
  t.strictSame(at('after=0'), ['0', 100]);
  t.strictSame(at('after=1.2345'), ['1.2345', 100], 'four decimals');
  t.strictSame(at('after=123456789012345.6789&limit=1000'), ['123456789012345.6789', 1000], 'fifteen digits, four decimals, the largest page');
  t.strictSame(at('after=5.3&limit=1'), ['5.3', 1]);
  t.strictSame(at('limit=999'), [null, 999]);
});

/** a query through the full path, as the search route learns it */
function full(raw: string): Canonical {
  const c = canonicalize(P, raw, SEARCH_SPEC);
  if (c.kind !== 'ok') throw new Error(`${raw}: ${JSON.stringify(c)}`);
  const f = toFilters(c.params, SEARCH_SPEC);
  if (!f.ok) throw new Error(f.message);
  return { canonical: c.canonical, params: c.params, filters: f.filters };
}

t.test('CursorMemo: what a hit carries', async (t) => {
  const memo = new CursorMemo();
  t.equal(memo.lookup(null), null, 'no query');
  t.equal(memo.lookup('capability=a'), null, 'no cursor first');
  memo.learn(full('after=3&capability=a&limit=7'));
  const hit = memo.lookup('after=12&capability=a&limit=7');
  t.ok(hit, 'another cursor over the learnt rest');
  t.equal(hit?.canonical, 'after=12&capability=a&limit=7');
  t.equal(hit?.rest, 'capability=a&limit=7');
  t.strictSame([...(hit?.params.keys() ?? [])], ['capability', 'limit'], 'its params have no cursor');
  t.equal(hit?.filters.after, '12');
  t.equal(hit?.filters.limit, 7);
  t.strictSame(hit?.filters.capabilities, ['a']);
  t.equal(hit && nextQueryOf(hit, '20'), 'after=20&capability=a&limit=7');
  t.equal(memo.lookup('after=1.5x&capability=a&limit=7'), null, 'a cursor that is not one');
  t.equal(memo.lookup('after=12&capability=b'), null, 'an unknown rest');
  t.equal(memo.lookup('after=12'), null, 'a bare cursor before one was learnt');
  memo.learn(full('after=3'));
  t.equal(memo.lookup('after=12')?.rest, '', 'then known: an empty rest');
  t.equal(nextQueryOf(memo.lookup('after=12')!, '13'), 'after=13');
});

t.test('CursorMemo: learns only queries with one cursor first, each rest once', async (t) => {
  const memo = new CursorMemo();
  memo.learn(full('capability=a'));
  t.equal(memo.bytes, 0, 'nothing without a cursor');
  t.equal(memo.lookup('after=1&capability=a'), null);
  memo.learn(full('after=3&capability=a'));
  t.equal(memo.bytes, 1024 + 3 * 'capability=a'.length, 'an entry: 1024 + 3 per character of its rest');
  memo.learn(full('after=4&capability=a'));
  t.equal(memo.bytes, 1060, 'the same rest again: not counted twice');
  memo.learn(full('after=4&protocol=p'));
  t.equal(memo.bytes, 1060 + 1024 + 3 * 'protocol=p'.length);
  t.ok(memo.lookup('after=9&capability=a') && memo.lookup('after=9&protocol=p'), 'both answered (the default bounds hold many)');
});

t.test('CursorMemo: full by entries or by bytes, it starts over', async (t) => {
  const two = new CursorMemo(2);
  two.learn(full('after=1&capability=a'));
  two.learn(full('after=1&capability=b'));
  t.ok(two.lookup('after=2&capability=a') && two.lookup('after=2&capability=b'), 'two entries fit');
  two.learn(full('after=1&capability=c'));
  t.equal(two.lookup('after=2&capability=a'), null, 'a third empties it');
  t.equal(two.lookup('after=2&capability=b'), null);
  t.ok(two.lookup('after=2&capability=c'), 'and is kept');
  t.equal(two.bytes, 1060, 'bytes start over with it');
  // two entries of 1,060 bytes each fit exactly in 2,120 bytes; not in one byte less
  const exact = new CursorMemo(100, 2120);
  exact.learn(full('after=1&capability=a'));
  exact.learn(full('after=1&capability=b'));
  t.ok(exact.lookup('after=2&capability=a'), 'exactly at the byte bound: kept');
  t.equal(exact.bytes, 2120);
  const short = new CursorMemo(100, 2119);
  short.learn(full('after=1&capability=a'));
  short.learn(full('after=1&capability=b'));
  t.equal(short.lookup('after=2&capability=a'), null, 'one byte over: emptied first');
  t.equal(short.bytes, 1060);
});

t.test('nextQueryOf: a full-path query (no memo rest) is serialised with the new cursor', async (t) => {
  const c = full('capability=a&limit=7');
  t.equal(nextQueryOf(c, '42'), 'after=42&capability=a&limit=7');
  t.equal(nextQueryOf(full('after=3&protocol=p'), '4.5'), 'after=4.5&protocol=p', 'the old cursor replaced');
  t.equal(nextQueryOf({ ...c, rest: 'capability=a&limit=7' }, '42'), 'after=42&capability=a&limit=7', 'the memo rest gives the same');
  t.equal(nextQueryOf({ ...full('after=3'), rest: '' }, '8'), 'after=8', 'an empty rest: the cursor alone');
});
