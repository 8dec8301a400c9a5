// Sandbox API keys (contract, "Sandbox API key"), in the GitHub token style:
//
//   <prefix>_sb_<random><checksum>
//
// prefix   from the sandbox name, [a-z0-9]{1,16}
// random   32 base62 characters from a CSPRNG (~190 bits; the contract asks for >= 160)
// checksum 6 base62 characters: CRC32 (IEEE, as zlib) of everything before it, i.e. of
//          "<prefix>_sb_<random>", as an unsigned number in base62, left-padded with '0'
//          (alphabet 0-9A-Za-z; 62^6 > 2^32, so 6 characters always suffice)
//
// Secret scanners can match issued keys with  \b[a-z0-9]{1,16}_sb_[0-9A-Za-z]{38}\b
//
// Keys issued before the checksum (pre-checksum, "legacy") have exactly 32 base62
// characters after `_sb_` and no checksum; they keep working. The rule that tells them
// apart is the length of the part after `_sb_`: 38 = checksummed (verified, and refused
// without any look-up when the checksum is wrong), 32 = legacy (looked up as before),
// anything else is not a key. Only sha256(key) is stored: the key has far more entropy than
// a password, so a fast hash is the right one.
import { hash } from 'node:crypto';
import { randomBase62 } from '../domain/tokens.js';

const B62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const RANDOM_CHARS = 32;
export const CHECKSUM_CHARS = 6;

/** A checksummed key (the format issued now): the regex secret scanners can use. */
export const KEY_RE = /^[a-z0-9]{1,16}_sb_[0-9A-Za-z]{38}$/;
/** A key issued before the checksum existed. */
export const LEGACY_KEY_RE = /^[a-z0-9]{1,16}_sb_[0-9A-Za-z]{32}$/;

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  // Stryker disable next-line EqualityOperator: `n <= 256` writes t[256], which a Uint32Array(256) ignores: equivalent
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

/** CRC-32 (IEEE 802.3, the one of zlib and PNG) of the UTF-8 bytes of `s`. */
export function crc32(s: string): number {
  let c = 0xffffffff;
  // Stryker disable next-line StringLiteral: Buffer.from(s, '') falls back to UTF-8, the default: equivalent
  for (const b of Buffer.from(s, 'utf8')) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** The 6-character base62 checksum of `body` ("<prefix>_sb_<random>"). */
export function keyChecksum(body: string): string {
  let n = crc32(body);
  let out = '';
  for (let i = 0; i < CHECKSUM_CHARS; i++) {
    out = B62[n % 62]! + out;
    n = Math.floor(n / 62);
  }
  return out;
}

export type KeyShape = 'checksummed' | 'legacy' | 'invalid';

/**
 * What a presented key is, from its text alone (no look-up): a checksummed key whose
 * checksum matches, a pre-checksum key, or not a key at all (a checksummed-length key
 * whose checksum is wrong is 'invalid': mistyped or forged).
 */
export function keyShape(key: string): KeyShape {
  if (KEY_RE.test(key)) {
    const cut = key.length - CHECKSUM_CHARS;
    return keyChecksum(key.slice(0, cut)) === key.slice(cut) ? 'checksummed' : 'invalid';
  }
  return LEGACY_KEY_RE.test(key) ? 'legacy' : 'invalid';
}

export function keyPrefix(name: string): string {
  const p = name
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '')
    .slice(0, 16);
  return p || 'sandbox';
}

export function newSandboxKey(name: string): { key: string; prefix: string } {
  const prefix = keyPrefix(name);
  const body = `${prefix}_sb_${randomBase62(RANDOM_CHARS)}`;
  return { key: body + keyChecksum(body), prefix };
}

export function hashKey(key: string): Buffer {
  // one-shot: a Hash object (createHash, update, digest) costs a visible share of a local 429
  return hash('sha256', key, 'buffer');
}

/** "bearer", the scheme's letters (compared without case) */
const BEARER = [98, 101, 97, 114, 101, 114];

/** JavaScript's white space (`\s`): the characters a credential never contains */
function isSpace(c: number): boolean {
  // a fast path for the printable ASCII of a credential (any bound from 33 to 160 answers the same)
  // Stryker disable next-line all: equivalent mutants of that bound
  if (c > 32 && c < 160) return false;
  return c === 32 || (c >= 9 && c <= 13) || c === 160 || c === 5760 || (c >= 8192 && c <= 8202) || c === 8232 || c === 8233 || c === 8239 || c === 8287 || c === 12288 || c === 65279;
}

/**
 * The credential of an Authorization value `Bearer <credential>` (the scheme in any case,
 * spaces or tabs around the credential, none inside it), or "" when the value has another
 * shape. Exactly /^Bearer[ \t]+(\S+)[ \t]*$/i, read without a regular expression: it runs
 * on every heartbeat and every keyed request (test/unit/sandbox-keys.test.ts checks the two
 * agree).
 */
export function bearerKey(authorization: string): string {
  const a = authorization;
  const n = a.length;
  let i = 0;
  // (charCodeAt past the end is NaN: equal to nothing)
  for (; i < 6; i++) if ((a.charCodeAt(i) | 0x20) !== BEARER[i]) return '';
  const gap = i;
  while (a.charCodeAt(i) === 32 || a.charCodeAt(i) === 9) i++;
  if (i === gap) return '';
  const start = i;
  while (i < n && !isSpace(a.charCodeAt(i))) i++;
  const end = i;
  // no credential (end === start) reads "" either way: the slice is empty, or the white
  // space that stopped it is not a space or tab and stays unread
  while (a.charCodeAt(i) === 32 || a.charCodeAt(i) === 9) i++;
  return i === n ? a.slice(start, end) : '';
}

/**
 * A sandbox uuid from a path segment, in lower case (the form it is stored under), or null
 * when the segment is not 8-4-4-4-12 hex digits (either case). Exactly
 * /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i on the segment, read
 * without a regular expression or a lower-cased copy when it is lower case already: every
 * sandbox heartbeat reads one (test/unit/sandbox-keys.test.ts checks the two agree).
 */
export function sandboxUuid(s: string): string | null {
  if (s.length !== 36) return null;
  // Stryker disable next-line BooleanLiteral: equivalent (lower-casing a lower-case uuid gives the same string: only the copy is saved)
  let upper = false;
  for (let i = 0; i < 36; i++) {
    const c = s.charCodeAt(i);
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      if (c !== 45) return null; // '-'
    } else if (c >= 65 && c <= 70) upper = true; // A-F
    else if (!((c >= 48 && c <= 57) || (c >= 97 && c <= 102))) return null; // 0-9, a-f
  }
  return upper ? s.toLowerCase() : s;
}
