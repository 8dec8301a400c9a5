// A sandbox namespace's marker in a generation: created where PostgreSQL has the namespace
// and Redis lacks it (a sandbox created while Redis was away), by the projector's apply
// (apply-services.ts) and by a read that found the namespace missing (live-index.ts).
import { Keys, PRODUCTION } from '../domain/keys.js';
import type { RedisClient } from '../redis/client.js';

/**
 * Create a sandbox's namespace marker in the live generation `gen` unless it has one. The
 * production marker is checked before and after the SET: a FLUSHALL between reading
 * reg:gen and the SET would otherwise resurrect a marker in a dead generation, and a reader
 * still holding that generation would serve the namespace empty. Production's marker is
 * only ever made by a rebuild.
 */
export async function markNamespace(redis: RedisClient, keys: Keys, ns: string, gen: string): Promise<boolean> {
  if (ns === PRODUCTION || !(await redis.exists(keys.ver(PRODUCTION, gen)))) return false;
  const created = (await redis.set(keys.ver(ns, gen), '1', 'NX')) === 'OK';
  if (created && !(await redis.exists(keys.ver(PRODUCTION, gen)))) {
    await redis.del(keys.ver(ns, gen));
    return false;
  }
  return true;
}
