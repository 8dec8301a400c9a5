// The Redis copy of a sandbox's metadata that the hot path reads: the key-hash -> uuid
// mapping and the name/tier/limit hash the rate-limit script uses. Derived from PostgreSQL,
// and applied with the row's version (apply-sandbox-1.lua): a copy read before a newer tier
// change committed never replaces the newer one, whoever writes it.
import type { Keys } from '../domain/keys.js';
import type { RedisClient } from '../redis/client.js';
import { integer } from '../redis/replies.js';

export interface SandboxMeta {
  uuid: string;
  name: string;
  tier: string;
  /** sandboxes.version, as a number or pg's decimal string */
  version: number | string;
}

/** Returns 1 applied, 0 when Redis already holds a newer version. */
export async function writeSandboxMeta(redis: RedisClient, keys: Keys, s: SandboxMeta, limit: number, keyHashHex: string): Promise<number> {
  const r = integer(await redis.applySandbox(keys.sandbox(s.uuid), String(s.version), s.name, s.tier, limit), 'apply-sandbox');
  if (keyHashHex) await redis.set(keys.sandboxKey(keyHashHex), s.uuid);
  return r;
}
