// The Redis side of leases: which shard holds a service's lease, and lease-apply-2.lua's
// arguments from a state read in PostgreSQL (the projector after each write, the rebuild's
// reseed). The record format is redis/lib/lease.lua's.
import { LEASE_SHARDS, type Keys } from '../domain/keys.js';
import type { ServiceRecord } from '../domain/service.js';
import type { RedisClient } from '../redis/client.js';
import { integer } from '../redis/replies.js';
import { loadLeasePage, type LeaseRow } from './store.js';
import type { Pool } from '../pg/pool.js';

/** FNV-1a of the id's UTF-16 units, mod LEASE_SHARDS (ids are ASCII) */
export function shardOf(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193) >>> 0;
  return h % LEASE_SHARDS;
}

/** [leases hash, deadlines zset] of the shard holding `id` */
export function leaseKeys(keys: Keys, id: string): [string, string] {
  const s = shardOf(id);
  return [keys.leases(s), keys.deadlines(s)];
}

type Lease = Pick<LeaseRow, 'ttl' | 'deregisterAfter' | 'status' | 'criticalSince' | 'tokenHash'>;

/** The lease of a state read with services.ts's SELECT_STATE (null: none, or the service is gone). */
export function leaseOf(s: ServiceRecord | null): Lease | null {
  if (!s?.health || s.health.ttl === null || !s.lease || s.health.status === 'unknown') return null;
  return { ttl: s.health.ttl, deregisterAfter: s.lease.deregisterAfter, status: s.health.status, criticalSince: s.lease.criticalSince, tokenHash: s.lease.tokenHash };
}

/** Make the lease of `id` in Redis the one of this state (revision `rev`); `fresh`: only where there is none. */
export async function applyLease(redis: RedisClient, keys: Keys, id: string, ns: string, rev: number, l: Lease | null, now: number, fresh = false): Promise<number> {
  const args = l
    ? [id, rev, ns, l.tokenHash, l.ttl, l.status === 'critical' ? 'c' : 'p', l.deregisterAfter ?? 0, l.criticalSince ?? '', now, fresh ? '1' : '0']
    : [id, rev, ns, '', 0, 'p', 0, '', now, fresh ? '1' : '0'];
  return integer(await redis.leaseApply(...leaseKeys(keys, id), ...args), 'lease-apply');
}

/**
 * After the index was rebuilt (Redis lost, or a reindex): every leased service that has no
 * lease in Redis gets one with a full fresh ttl from `now` (contract: no mass "critical"
 * after a loss of Redis); leases still there keep their deadlines. Returns the leases seen.
 */
export async function reseedLeases(pool: Pool, redis: RedisClient, keys: Keys, now: () => number, pageSize = 1000): Promise<number> {
  let n = 0;
  for (let after = ''; ; ) {
    const page = await loadLeasePage(pool, after, pageSize);
    if (!page.length) return n;
    after = page[page.length - 1]!.id;
    const t = now();
    await Promise.all(page.map((l) => applyLease(redis, keys, l.id, l.ns, l.version, l, t, true)));
    n += page.length;
  }
}
