// Sandbox key format: <prefix>_sb_<32 base62 random><6 base62 CRC32 of the rest>.
import t from 'tap';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { bearerKey, crc32, hashKey, keyChecksum, keyPrefix, keyShape, KEY_RE, LEGACY_KEY_RE, newSandboxKey, sandboxUuid } from '../../src/hot/sandboxes/keys.js';

t.test('crc32 is the IEEE/zlib one', async (t) => {
  t.equal(crc32('123456789'), 0xcbf43926, 'the standard check value');
  t.equal(crc32(''), 0);
  t.equal(crc32('The quick brown fox jumps over the lazy dog'), 0x414fa339);
});

t.test('the checksum is 6 base62 characters of the CRC32', async (t) => {
  const B62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  for (const body of ['a_sb_x', 'lab_sb_' + 'Z'.repeat(32), '']) {
    const c = keyChecksum(body);
    t.match(c, /^[0-9A-Za-z]{6}$/);
    let n = 0;
    for (const ch of c) n = n * 62 + B62.indexOf(ch);
    t.equal(n, crc32(body), `${body}: decodes back to the CRC32`);
  }
});

t.test('new keys: the documented shape, a valid checksum, >= 160 random bits, all different', async (t) => {
  const seen = new Set<string>();
  for (let i = 0; i < 200; i++) {
    const { key, prefix } = newSandboxKey('My Lab ' + i);
    t.equal(prefix, `mylab${i}`);
    if (!KEY_RE.test(key) || keyShape(key) !== 'checksummed') t.fail(`bad key ${key}`);
    // the scanner regex of docs/api.md, "Sandbox keys"
    if (!/\b[a-z0-9]{1,16}_sb_[0-9A-Za-z]{38}\b/.test(`token: ${key} end`)) t.fail('scanner regex');
    seen.add(key.split('_sb_')[1]!.slice(0, 32));
  }
  t.equal(seen.size, 200);
  t.ok(32 * Math.log2(62) >= 160, '32 base62 characters carry >= 160 bits');
});

t.test('a key with any one character changed is recognised as invalid without a look-up', async (t) => {
  const { key } = newSandboxKey('typo');
  let caught = 0;
  let total = 0;
  const tail = key.indexOf('_sb_') + 4;
  for (let i = tail; i < key.length; i++) {
    for (const ch of ['0', 'a', 'Z']) {
      if (key[i] === ch) continue;
      total++;
      if (keyShape(key.slice(0, i) + ch + key.slice(i + 1)) === 'invalid') caught++;
    }
  }
  t.equal(caught, total, `${caught}/${total} single-character typos caught`);
  // a swap of two neighbours
  const swapped = key.slice(0, tail) + key[tail + 1] + key[tail] + key.slice(tail + 2);
  if (swapped !== key) t.equal(keyShape(swapped), 'invalid');
});

t.test('pre-checksum keys (32 characters after _sb_) are legacy; other lengths are not keys', async (t) => {
  const legacy = 'oldlab_sb_' + 'aB3'.repeat(10) + 'xy';
  t.ok(LEGACY_KEY_RE.test(legacy));
  t.equal(keyShape(legacy), 'legacy');
  for (const k of ['x_sb_short', 'x_sb_' + 'a'.repeat(31), 'x_sb_' + 'a'.repeat(33), 'x_sb_' + 'a'.repeat(37), 'x_sb_' + 'a'.repeat(39), 'X_sb_' + 'a'.repeat(32), 'x_xx_' + 'a'.repeat(32), '', 'x_sb_' + 'a'.repeat(31) + '!']) {
    t.equal(keyShape(k), 'invalid', k);
  }
});

t.test('every checksum character flipped in case is refused (the checksum is case-sensitive)', async (t) => {
  // base62 tells 'a' from 'A': a key whose checksum differs only in the case of one
  // character is mistyped or forged, and must not pass for the real one
  let flipped = 0;
  for (let i = 0; flipped < 60; i++) {
    const { key } = newSandboxKey('case ' + i);
    const cut = key.length - 6;
    for (let j = cut; j < key.length; j++) {
      const c = key[j]!;
      const other = c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase();
      if (other === c) continue; // a digit has no case
      const forged = key.slice(0, j) + other + key.slice(j + 1);
      t.equal(keyShape(forged), 'invalid', `${key}: checksum character ${j - cut} as ${other}`);
      flipped++;
    }
  }
  t.ok(flipped >= 60, `${flipped} flipped characters checked`);
});

t.test('the key regexes are anchored: a key inside other text is not a key', async (t) => {
  const { key } = newSandboxKey('anchors');
  t.ok(KEY_RE.test(key));
  t.notOk(KEY_RE.test(`-${key}`), 'text before');
  t.notOk(KEY_RE.test(`${key}x`), 'text after');
  const legacy = `anchors_sb_${'a'.repeat(32)}`;
  t.equal(keyShape(legacy), 'legacy');
  t.equal(keyShape(`-${legacy}`), 'invalid', 'a legacy key with text before is no key');
  t.equal(keyShape(`${legacy}-`), 'invalid', 'nor with text after');
  t.notOk(LEGACY_KEY_RE.test(`-${legacy}`));
});

t.test('the prefix: the name folded to [a-z0-9], at most 16 characters, "sandbox" when nothing is left', async (t) => {
  t.equal(keyPrefix('My Lab!'), 'mylab');
  t.equal(keyPrefix('Ünïcødé Fleet'), 'unicdefleet', 'accents dropped by NFKD (ø has no decomposition)');
  t.equal(keyPrefix('abcdefghijklmnopqrstuvwxyz'), 'abcdefghijklmnop', 'cut at 16');
  t.equal(keyPrefix('—— ✓ ——'), 'sandbox', 'nothing left');
  t.equal(keyPrefix(''), 'sandbox');
  const { key, prefix } = newSandboxKey('—');
  t.equal(prefix, 'sandbox');
  t.ok(key.startsWith('sandbox_sb_'));
});

t.test('hashKey: the SHA-256 of the key text, 32 bytes (only this is stored)', async (t) => {
  const k = 'lab_sb_0123456789abcdefghijABCDEFGHIJ0123456789';
  const h = hashKey(k);
  t.ok(Buffer.isBuffer(h));
  t.equal(h.length, 32);
  t.equal(h.toString('hex'), createHash('sha256').update(k, 'utf8').digest('hex'));
  t.equal(hashKey('').toString('hex'), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855', 'the SHA-256 of nothing');
});

// the rule bearerKey reads without a regular expression (sandboxes/keys.ts)
const BEARER_RE = /^Bearer[ \t]+(\S+)[ \t]*$/i;
const byRegex = (a: string) => BEARER_RE.exec(a)?.[1] ?? '';
// every white space character of \s, and neighbours of each range that are not
const SPACES = ['\t', '\n', '\v', '\f', '\r', ' ', '\u00a0', '\u1680', '\u2000', '\u2005', '\u200a', '\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff'];
const NEAR = ['\b', '\u000e', '!', '\u009f', '\u00a1', '\u167f', '\u1681', '\u1fff', '\u200b', '\u2027', '\u202a', '\u202e', '\u2030', '\u205e', '\u2060', '\u2fff', '\u3001', '\ufefe', '\uff00', 'é', '_'];

t.test('bearerKey: the credential of "Bearer <credential>", exactly as /^Bearer[ \\t]+(\\S+)[ \\t]*$/i', async (t) => {
  t.equal(bearerKey('Bearer abc'), 'abc');
  t.equal(bearerKey('bEaReR \t abc_hb_X1 \t'), 'abc_hb_X1', 'any case, spaces and tabs around');
  t.equal(bearerKey('Bearer'), '', 'no credential');
  t.equal(bearerKey('Bearer '), '', 'no credential after the space');
  t.equal(bearerKey('Bearerabc'), '', 'no space after the scheme');
  t.equal(bearerKey('Basic abc'), '');
  t.equal(bearerKey('Bearer a b'), '', 'a space inside');
  t.equal(bearerKey('Bearer a\u00a0b'), '', 'a no-break space inside');
  t.equal(bearerKey('Bearer\u00a0abc'), '', 'only space or tab after the scheme');
  t.equal(bearerKey('Bearer abc\n'), '', 'a line feed after');
  t.equal(bearerKey(' Bearer abc'), '', 'nothing before the scheme');
  t.equal(bearerKey('Bearer\tabc'), 'abc');
  t.equal(bearerKey('Bearer abc\u00e9'), 'abc\u00e9', 'any character but white space');
  t.equal(bearerKey('Bearer \u1680'), '');
  t.equal(bearerKey(''), '');
  t.equal(bearerKey('B'), '');
  for (const c of SPACES) t.equal(bearerKey(`Bearer a${c}b`), byRegex(`Bearer a${c}b`), `U+${c.charCodeAt(0).toString(16)} inside`);
  for (const c of NEAR) t.equal(bearerKey(`Bearer a${c}b`), `a${c}b`, `U+${c.charCodeAt(0).toString(16)} is not white space`);
  // every letter of the scheme in both cases, and its neighbours in the code table (not letters of it)
  for (let i = 0; i < 6; i++) {
    for (const d of [-1, 1, 0x20, -0x20]) {
      const s = 'Bearer'.slice(0, i) + String.fromCharCode('Bearer'.charCodeAt(i) + d) + 'Bearer'.slice(i + 1) + ' k';
      t.equal(bearerKey(s), byRegex(s), JSON.stringify(s));
    }
  }
  // random values built from the pieces that matter, and arbitrary strings
  const piece = fc.constantFrom('Bearer', 'bearer', 'BEARER', 'Bear', 'Bearerx', ' ', '\t', '  ', 'k', 'abc_hb_1', '=', ...SPACES, ...NEAR);
  fc.assert(
    fc.property(fc.oneof(fc.array(piece, { maxLength: 8 }).map((p) => p.join('')), fc.string(), fc.string({ unit: 'binary' })), (a) => bearerKey(a) === byRegex(a)),
    { numRuns: 5000, examples: [['Bearer k'], ['Bearer  k \t'], ['bearer\tk\u3000'], ['Bearer k k']] },
  );
});

// the rule sandboxUuid reads without a regular expression (sandboxes/keys.ts)
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const uuidByRe = (s: string) => (UUID_RE.test(s) ? s.toLowerCase() : null);

t.test('sandboxUuid: a path segment as /^[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}$/i, lower-cased', async (t) => {
  const u = '0f6c1a52-1b7e-4a61-9a0f-3f2b1c0d9e8a';
  t.equal(sandboxUuid(u), u, 'lower case: itself');
  t.equal(sandboxUuid(u.toUpperCase()), u, 'upper case: lower-cased');
  t.equal(sandboxUuid('0F6c1a52-1b7e-4a61-9a0f-3f2b1c0d9e8A'), u, 'mixed');
  for (const bad of ['', u.slice(1), u + '0', u.replace(/-/g, '0'), u.replace('0f6c', '0g6c'), u.replace('-1b7e', '_1b7e'), u.replace('1b7e-', '1b7e0'), u.replace('9a0f-', '9a0f0'), u.replace('4a61-', '4a61:'), ' ' + u.slice(1), u.slice(0, 35) + '/', u.slice(0, 35) + '`', u.slice(0, 35) + 'G', u.slice(0, 35) + '@']) {
    t.equal(sandboxUuid(bad), null, JSON.stringify(bad));
  }
  // the boundaries of each character class, at every position
  for (let i = 0; i < 36; i++) {
    for (const c of '/09:@AFG`afg-_ ') {
      const s = u.slice(0, i) + c + u.slice(i + 1);
      t.equal(sandboxUuid(s), uuidByRe(s), `${JSON.stringify(c)} at ${i}`);
    }
  }
  const hex = fc.constantFrom(...'0123456789abcdefABCDEF');
  const near = fc.constantFrom(...'0123456789abcdefABCDEFgG-_ /:@`\u00e9');
  const shaped = fc.array(hex, { minLength: 32, maxLength: 32 }).map((h) => [8, 4, 4, 4, 12].reduce((a, n, i) => (i ? a + '-' : '') + h.splice(0, n).join(''), ''));
  // a uuid with a character or two changed, a string of the alphabet around it, anything
  const arb = fc.oneof(
    shaped,
    fc.tuple(shaped, fc.nat(35), near).map(([s, i, c]) => s.slice(0, i) + c + s.slice(i + 1)),
    fc.array(near, { minLength: 34, maxLength: 38 }).map((a) => a.join('')),
    fc.string({ maxLength: 40 }),
  );
  fc.assert(fc.property(arb, (s) => sandboxUuid(s) === uuidByRe(s)), { numRuns: 5000 });
});
