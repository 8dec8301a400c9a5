// Token and property-value rules of the contract ("Tokens").
import t from 'tap';
import { compareCodePoints, isPropertyPair, isPropertyValue, isToken, splitProperty } from '../../src/hot/domain/tokens.js';

t.test('tokens: 1-64 chars of [a-z0-9._-]', async (t) => {
  for (const ok of ['a', 'print', 'a.b_c-d', '0', 'x'.repeat(64), '...', '-']) t.ok(isToken(ok), ok);
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
});
