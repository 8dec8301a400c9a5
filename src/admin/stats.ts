// GET /admin/api/stats: registry counts from PostgreSQL (the source of truth) and request
// totals summed from the per-sandbox Redis counters.
import { Cluster } from 'ioredis';
import type { App } from '../hot/app.js';
import { registryCounts, sandboxUuids, type RegistryCounts } from './queries.js';

export interface RequestTotals {
  total: number;
  rejected: number;
}

/**
 * Sum `total`/`rejected` of every sandbox's rl:{uuid}:t hash. One HMGET per sandbox, sent
 * as one pipeline per batch: thousands of sandboxes cost a handful of round trips. A
 * Cluster cannot pipeline keys of many slots through one pipeline, so there the commands
 * go out together and ioredis's auto-pipelining groups them per node.
 */
export async function requestTotals(app: App, batch = 1000): Promise<RequestTotals> {
  const out = { total: 0, rejected: 0 };
  const add = (v: (string | null)[] | null | undefined) => {
    out.total += Number(v?.[0] ?? 0) || 0;
    out.rejected += Number(v?.[1] ?? 0) || 0;
  };
  for await (const uuids of sandboxUuids(app.pg, batch)) {
    const keys = uuids.map((u) => app.keys.rateTotals(u));
    if (app.redis instanceof Cluster) {
      const rs = await Promise.all(keys.map((k) => app.redis.hmget(k, 'total', 'rejected')));
      rs.forEach(add);
    } else {
      const p = app.redis.pipeline();
      for (const k of keys) p.hmget(k, 'total', 'rejected');
      const rs = (await p.exec()) ?? [];
      for (const [err, v] of rs) {
        if (err) throw err;
        add(v as (string | null)[]);
      }
    }
  }
  return out;
}

export interface Stats extends RegistryCounts {
  requests: RequestTotals;
  tiers: Record<string, number>;
  defaultTier: string;
  generatedAt: string;
}

export async function stats(app: App): Promise<Stats> {
  const [counts, requests] = await Promise.all([registryCounts(app.pg), requestTotals(app)]);
  // every configured tier appears, with 0 when no sandbox has it
  const byTier: Record<string, number> = {};
  for (const t of Object.keys(app.cfg.tiers)) byTier[t] = 0;
  Object.assign(byTier, counts.sandboxesByTier);
  return {
    ...counts,
    sandboxesByTier: byTier,
    requests,
    tiers: { ...app.cfg.tiers },
    defaultTier: app.cfg.defaultTier,
    generatedAt: new Date().toISOString(),
  };
}
