// Rebuild the Redis index from PostgreSQL into a fresh generation of keys, then switch the
// live generation in one SET. Readers never see a half-built index: until the switch they
// keep the old generation (or, when Redis lost everything, answer 503). Writers apply to
// the building generation too, and revisions make the rebuild's older states lose to them.
import { randomBytes } from 'node:crypto';
import type { Keys } from '../hot/domain/keys.js';
import { PRODUCTION } from '../hot/domain/keys.js';
import { applyArgs } from '../hot/index/projector.js';
import type { RedisClient } from '../hot/redis/client.js';
import type { Pool } from '../hot/store/pool.js';
import { loadServicePage } from '../hot/store/services.js';
import { writeSandboxMeta } from '../hot/store/sandbox-meta.js';
import type { TierConfig } from '../hot/config.js';

export interface RebuildResult {
  gen: string;
  services: number;
  sandboxes: number;
  ms: number;
}

const LOCK_MS = 10 * 60_000;
const BATCH = 1000;

export async function rebuildIndex(
  pool: Pool,
  redis: RedisClient,
  keys: Keys,
  tiers: TierConfig,
  onProgress: (done: number) => void = () => undefined,
): Promise<RebuildResult | null> {
  const t0 = Date.now();
  const token = randomBytes(8).toString('hex');
  if ((await redis.set(keys.rebuildLock(), token, 'PX', LOCK_MS, 'NX')) !== 'OK') return null; // another node rebuilds
  try {
    const gen = randomBytes(5).toString('hex');
    const oldGen = await redis.get(keys.gen());
    await redis.set(keys.building(), gen);
    // namespaces first, so that writers can apply to the building generation
    const sbs = await pool.query<{ uuid: string; name: string; tier: string; key_hash: Buffer }>('SELECT uuid, name, tier, key_hash FROM sandboxes');
    await redis.set(keys.ver(PRODUCTION, gen), '1');
    await Promise.all(sbs.rows.map((s) => redis.set(keys.ver(s.uuid, gen), '1')));
    await Promise.all(sbs.rows.map((s) => writeSandboxMeta(redis, keys, s.uuid, s.name, s.tier, tiers[s.tier] ?? 0, s.key_hash.toString('hex'))));
    let after = 0;
    let n = 0;
    for (;;) {
      const page = await loadServicePage(pool, after, BATCH);
      if (!page.length) break;
      // revision 0: any write applied meanwhile (revision = outbox id > 0) wins over it
      await Promise.all(page.map((s) => redis.applyService(...applyArgs(keys, gen, s.ns, s.id, 0, s))));
      after = page[page.length - 1]!.seq;
      n += page.length;
      onProgress(n);
    }
    await redis.set(keys.gen(), gen);
    await redis.del(keys.building());
    await redis.publish(keys.invalidationChannel(), 'gen:' + gen);
    if (oldGen && oldGen !== gen) void dropGeneration(redis, keys, oldGen).catch(() => undefined);
    return { gen, services: n, sandboxes: sbs.rowCount ?? 0, ms: Date.now() - t0 };
  } finally {
    // release only our own lock
    if ((await redis.get(keys.rebuildLock())) === token) await redis.del(keys.rebuildLock());
  }
}

/** Delete every key of an old generation (SCAN on each primary; UNLINK frees in background). */
export async function dropGeneration(redis: RedisClient, keys: Keys, gen: string): Promise<number> {
  const nodes = 'nodes' in redis && typeof redis.nodes === 'function' ? redis.nodes('master') : [redis];
  let n = 0;
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', keys.genPattern(gen), 'COUNT', 1000);
      cursor = next;
      if (batch.length) {
        for (const k of batch) await node.unlink(k);
        n += batch.length;
      }
    } while (cursor !== '0');
  }
  return n;
}
