// Token and property-value rules of the contract ("Tokens").
import t from 'tap';
import { compareCodePoints, hasLoneSurrogate, isPropertyPair, isPropertyValue, isToken, normToken, randomBase62, splitProperty } from '../../src/hot/domain/tokens.js';

t.test('tokens: 1-64 chars of [a-z0-9._-]', async (t) => {
  for (const ok of ['a', 'print', 'a.b_c-d', '0', 'z9', 'x'.repeat(64), '...', '-', '_']) t.ok(isToken(ok), ok);
  for (const bad of ['', 'A', 'Print', 'a b', 'a:b', 'a/b', 'é', 'x'.repeat(65), 'a\n', 'a+b']) t.notOk(isToken(bad), JSON.stringify(bad));
});

t.test('property values: 1-256 chars, case kept, no control characters', async (t) => {
  t.ok(isPropertyValue('Red'));
  t.ok(isPropertyValue('v'.repeat(256)));
  t.ok(isPropertyValue('\u{1F600}'.repeat(256)), '256 astral characters are 256 characters');
  t.ok(isPropertyValue('a:b:c / é'));
  t.notOk(isPropertyValue(''));
  t.notOk(isPropertyValue('v'.repeat(257)));
  t.notOk(isPropertyValue('\u{1F600}'.repeat(257)));
  for (const c of ['\u0000', '\t', '\n', '\u001f', '\u007f', '\u0085', '\u009f']) t.notOk(isPropertyValue('a' + c + 'b'), JSON.stringify(c));
});

t.test('properties split at the first colon, key lower-cased', async (t) => {
  t.same(splitProperty('Color:Red'), { key: 'color', value: 'Red' });
  t.same(splitProperty('url:http://x:80/'), { key: 'url', value: 'http://x:80/' });
  t.same(splitProperty('k:'), { key: 'k', value: '' });
  t.equal(splitProperty('novalue'), null);
  t.same(splitProperty(':v'), { key: '', value: 'v' }, 'a colon first: an empty key (refused by isPropertyPair)');
  t.same(splitProperty('A:B:C'), { key: 'a', value: 'B:C' });
  t.ok(isPropertyPair('k:v'));
  t.ok(isPropertyPair('K:v'), 'the key is lower-cased before the token check');
  t.notOk(isPropertyPair('k:'));
  t.notOk(isPropertyPair(':v'));
  t.notOk(isPropertyPair('bad key:v'));
  t.notOk(isPropertyPair('nocolon'));
});

t.test('code-point order', async (t) => {
  t.equal(compareCodePoints('a', 'a'), 0);
  t.ok(compareCodePoints('a', 'b') < 0);
  t.ok(compareCodePoints('B', 'a') < 0, 'upper-case before lower-case');
  t.ok(compareCodePoints('a', 'ab') < 0, 'prefix first');
  t.ok(compareCodePoints('\uFFFD', '\u{1F600}') < 0, 'U+FFFD before U+1F600 (UTF-16 order says the opposite)');
  t.ok(compareCodePoints('\u{1F600}', '\uFFFD') > 0);
  t.ok(compareCodePoints('x\u{1F600}', 'x\u{1F601}') < 0);
  t.same(['\u{1F600}', '\uFFFD', 'z', 'A'].sort(compareCodePoints), ['A', 'z', '\uFFFD', '\u{1F600}']);
  t.equal(compareCodePoints('ab', 'a'), 1, 'longer after its prefix');
  t.equal(compareCodePoints('a', 'ab'), -1);
  t.equal(compareCodePoints('ab', 'ac'), -1, 'the second character decides');
  t.equal(compareCodePoints('b', 'a'), 1);
  t.equal(compareCodePoints('', 'a'), -1);
  t.equal(compareCodePoints('\uFFFFa', '\uFFFFb'), -1, 'U+FFFF is one unit: the next one is compared');
  t.equal(compareCodePoints('\u{1F600}a', '\u{1F600}b'), -1, 'after an equal astral character');
  t.equal(compareCodePoints('\u{1F600}b', '\u{1F600}a'), 1);
  t.equal(compareCodePoints('\u{1F600}', '\u{1F600}'), 0);
});

t.test('lone surrogates: a high one not followed by a low one, a low one not after a high one', async (t) => {
  for (const s of ['\uD800', '\uDBFF', '\uDC00', '\uDFFF', 'a\uD800', '\uD800a', 'a\uDC00', '\uDC00a', '\uD800\uD800', '\uDC00\uDC00', '\uDC00\uD800', '\uD83D\uDE00\uDE00', 'x\uDBFF']) {
    t.ok(hasLoneSurrogate(s), JSON.stringify(s));
  }
  for (const s of ['', 'abc', '\uD800\uDC00', '\uDBFF\uDFFF', '\uD83D\uDE00', 'a\u{1F600}b', '\uD7FF', '\uE000', '\uFFFD', '\u{10FFFF}']) {
    t.notOk(hasLoneSurrogate(s), JSON.stringify(s));
  }
});

t.test('normToken lower-cases', async (t) => {
  t.equal(normToken('PrInt.X_1'), 'print.x_1');
  t.equal(normToken('scan'), 'scan');
});

t.test('randomBase62: the length asked for, every base62 character, no modulo bias', async (t) => {
  t.equal(randomBase62(0), '');
  t.equal(randomBase62(1).length, 1);
  t.match(randomBase62(22), /^[0-9A-Za-z]{22}$/);
  t.match(randomBase62(7), /^[0-9A-Za-z]{7}$/, 'an odd length');
  t.not(randomBase62(32), randomBase62(32), 'two draws differ');
  // 248 of the 256 byte values are used (4 per character); taking all 256 would give '0'..'7'
  // 5/256 each instead of 1/62. Over 200,000 characters a fair '0' appears ~3,226 times
  // (sd ~57), a biased one ~3,906; '0'..'7' together ~25,806 (sd ~150) against ~31,250.
  const s = randomBase62(200_000);
  t.equal(s.length, 200_000);
  t.match(s, /^[0-9A-Za-z]+$/);
  const count = new Map<string, number>();
  for (const c of s) count.set(c, (count.get(c) ?? 0) + 1);
  t.equal(count.size, 62, 'all 62 characters appear');
  t.ok(count.get('0')! < 3_600, `'0' appears ${count.get('0')} times`);
  let low = 0;
  for (const c of '01234567') low += count.get(c)!;
  t.ok(low < 28_500, `'0'..'7' appear ${low} times`);
});
