// The Redis copy of a sandbox's metadata that the hot path reads: the key-hash -> uuid
// mapping and the name/tier/limit hash the rate-limit script uses. Derived from PostgreSQL.
import type { Keys } from '../domain/keys.js';
import type { RedisClient } from '../redis/client.js';

export async function writeSandboxMeta(
  redis: RedisClient,
  keys: Keys,
  uuid: string,
  name: string,
  tier: string,
  limit: number,
  keyHashHex: string,
): Promise<void> {
  await redis.hset(keys.sandbox(uuid), 'name', name, 'tier', tier, 'limit', String(limit));
  if (keyHashHex) await redis.set(keys.sandboxKey(keyHashHex), uuid);
}
