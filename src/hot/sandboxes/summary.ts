// What the sandbox routes and the admin API show of a sandbox: its public summary (from
// the PostgreSQL row and the tier's limits) and its poll data (counters from Redis).
import type { Keys } from '../domain/keys.js';
import { RATE_WINDOW } from '../ratelimit/index.js';
import type { RedisClient } from '../redis/client.js';
import type { SandboxRow } from './store.js';
import { pollReply } from '../redis/replies.js';

export function sandboxSummary(tiers: Record<string, number>, s: SandboxRow): Record<string, unknown> {
  return {
    uuid: s.uuid,
    name: s.name,
    tier: s.tier,
    rateLimit: tiers[s.tier] ?? 0,
    location: s.lat === null || s.lon === null ? null : { lat: s.lat, lon: s.lon },
    createdAt: s.created_at.toISOString(),
  };
}

/**
 * The quota and its use, as the dashboard data and the admin detail show them: the tier's
 * TIER_MAX_SERVICES (0 for a tier no longer configured: no room, as it has no rate either)
 * and the count the last write committed (migration 0010).
 */
export function serviceQuota(tierMaxServices: Readonly<Record<string, number>>, s: SandboxRow): { serviceQuota: number; serviceCount: number } {
  return { serviceQuota: tierMaxServices[s.tier] ?? 0, serviceCount: s.service_count };
}

export const POLL_BUCKETS = RATE_WINDOW.historyBuckets;

/**
 * Counters of a sandbox from Redis: totals and the last `n` 5-second buckets. `counted`:
 * this thread's rate limiter's records, whose requests answered without Redis (leased,
 * refused locally) are sent first, on the same connection, so that the totals count every
 * one; and records already carried by heartbeat calls in flight (on the heartbeat
 * connection, liveness/heartbeat-batch.ts) are waited for.
 */
export async function pollData(redis: RedisClient, k: Keys, uuid: string, n: number = POLL_BUCKETS, counted: { flush(): void; landed?(): Promise<void> | null } | null = null): Promise<{ limit: number; total: number; rejected: number; tier: string; buckets: number[] } | null> {
  // the waiting records first (on this connection, before the poll), then those in flight
  counted?.flush();
  const inFlight = counted?.landed?.();
  if (inFlight) await inFlight;
  return pollReply(await redis.pollData(k.sandbox(uuid), k.rateHistory(uuid), k.rateTotals(uuid), n, RATE_WINDOW.bucketMs));
}
