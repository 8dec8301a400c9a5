// Token and value rules of the contract ("Tokens"), pure functions, and the random tokens
// the registry hands out (service ids, sandbox keys).
import { randomBytes } from 'node:crypto';

export const TOKEN_RE = /^[a-z0-9._-]{1,64}$/;
// Property values: 1..256 chars, case-sensitive, no control characters (C0, DEL, C1).
// eslint-disable-next-line no-control-regex
const CONTROL_RE = /[\u0000-\u001f\u007f-\u009f]/;

/** a high surrogate not followed by a low one, or a low one not preceded by a high one */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Does `s` hold an unpaired UTF-16 surrogate (no Unicode character, no UTF-8 form)? */
export function hasLoneSurrogate(s: string): boolean {
  return LONE_SURROGATE.test(s);
}

export function normToken(s: string): string {
  return s.toLowerCase();
}

export function isToken(s: string): boolean {
  return TOKEN_RE.test(s);
}

export function isPropertyValue(s: string): boolean {
  // length counted in code points so a 256-emoji value is accepted like 256 letters
  if (s.length === 0) return false;
  let n = 0;
  for (const _ of s) {
    if (++n > 256) return false;
  }
  return !CONTROL_RE.test(s);
}

/** `key:value`, split at the first ':'; the key part is lower-cased (it is a token). */
export function splitProperty(s: string): { key: string; value: string } | null {
  const i = s.indexOf(':');
  if (i < 0) return null;
  return { key: s.slice(0, i).toLowerCase(), value: s.slice(i + 1) };
}

export function isPropertyPair(s: string): boolean {
  const p = splitProperty(s);
  return p !== null && isToken(p.key) && isPropertyValue(p.value);
}

/** Compare strings by Unicode code point (JS `<` compares UTF-16 code units). */
export function compareCodePoints(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(i)!;
    if (x !== y) return x < y ? -1 : 1;
    if (x > 0xffff) i++; // skip the low surrogate; both strings had the same pair
  }
  return a.length - b.length < 0 ? -1 : a.length === b.length ? 0 : 1;
}

const B62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** base62 string from a CSPRNG, by rejection sampling (no modulo bias) */
export function randomBase62(len: number): string {
  let out = '';
  while (out.length < len) {
    for (const b of randomBytes(len * 2)) {
      if (b < 248 && out.length < len) out += B62[b % 62];
    }
  }
  return out;
}
