// Sandbox API keys: `<prefix>_sb_<random>`, prefix from the sandbox name ([a-z0-9]{1,16}),
// random = 32 base62 characters from a CSPRNG (~190 bits). Only sha256(key) is stored:
// the key has far more entropy than a password, so a fast hash is the right one.
import { createHash } from 'node:crypto';
import { randomBase62 } from '../domain/tokens.js';

export const KEY_RE = /^[a-z0-9]{1,16}_sb_[0-9A-Za-z]{27,64}$/;

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
  return { key: `${prefix}_sb_${randomBase62(32)}`, prefix };
}

export function hashKey(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}
