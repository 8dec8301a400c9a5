// PostgreSQL reads behind the admin API: the paged sandbox list, a sandbox's tier history,
// registry-wide counts, and a keyset walk over every sandbox uuid (for the request totals).
// Writes stay in src/hot/store (setTier records who/when there).
import { query, type Pool } from '../hot/pg/pool.js';
import type { SandboxRow } from '../hot/sandboxes/index.js';

/** One page in the stable order (created_at, uuid), plus the total for the filter. */
export async function listSandboxes(pool: Pool, tier: string | null, limit: number, offset: number): Promise<{ rows: SandboxRow[]; total: number }> {
  const where = tier === null ? '' : 'WHERE s.tier = $3';
  const params: unknown[] = [limit, offset];
  if (tier !== null) params.push(tier);
  // count and page in one round trip; the count is over the same filter
  const r = await query<SandboxRow & { total: string }>(
    pool,
    `WITH f AS (SELECT * FROM sandboxes s ${where})
     SELECT p.uuid, p.name, p.tier, p.lat, p.lon, p.created_at, p.version, p.service_count,
            (SELECT count(*) FROM f) AS total
       FROM (SELECT * FROM f ORDER BY created_at, uuid LIMIT $1 OFFSET $2) p
      ORDER BY p.created_at, p.uuid`,
    params,
  );
  if (r.rows.length > 0) return { rows: r.rows, total: Number(r.rows[0]!.total) };
  // an empty page (past the end) still needs the total
  const c = await query<{ n: string }>(pool, `SELECT count(*) AS n FROM sandboxes s ${tier === null ? '' : 'WHERE s.tier = $1'}`, tier === null ? [] : [tier]);
  return { rows: [], total: Number(c.rows[0]!.n) };
}

export interface TierChangeRow {
  old_tier: string;
  new_tier: string;
  changed_by: string;
  changed_at: Date;
}

export async function tierHistory(pool: Pool, uuid: string, limit = 50): Promise<TierChangeRow[]> {
  const r = await query<TierChangeRow>(
    pool,
    'SELECT old_tier, new_tier, changed_by, changed_at FROM tier_changes WHERE sandbox = $1 ORDER BY changed_at DESC, id DESC LIMIT $2',
    [uuid, limit],
  );
  return r.rows;
}

export interface RegistryCounts {
  services: { production: number; sandboxes: number };
  deprecated: { production: number; sandboxes: number };
  locked: { production: number; sandboxes: number };
  iotReady: { production: number; sandboxes: number };
  /** services per health status (liveness): passing and critical hold a lease, unknown has none */
  health: Record<'passing' | 'critical' | 'unknown', { production: number; sandboxes: number }>;
  sandboxesByTier: Record<string, number>;
  sandboxes: number;
  locatedSandboxes: number;
}

export async function registryCounts(pool: Pool): Promise<RegistryCounts> {
  const [svc, sb] = await Promise.all([
    query<{ prod: boolean; n: string; dep: string; lck: string; iot: string; passing: string; critical: string; unknown: string }>(
      pool,
      `SELECT s.ns = 'production' AS prod, count(*) AS n,
              count(*) FILTER (WHERE s.deprecated) AS dep,
              count(*) FILTER (WHERE s.locked) AS lck,
              count(i.service_id) AS iot,
              count(*) FILTER (WHERE s.health_status = 'passing') AS passing,
              count(*) FILTER (WHERE s.health_status = 'critical') AS critical,
              count(*) FILTER (WHERE s.health_status = 'unknown') AS unknown
         FROM services s LEFT JOIN iot_profiles i ON i.service_id = s.id
        GROUP BY 1`,
    ),
    query<{ tier: string; n: string; located: string }>(pool, 'SELECT tier, count(*) AS n, count(lat) AS located FROM sandboxes GROUP BY tier ORDER BY tier'),
  ]);
  const out: RegistryCounts = {
    services: { production: 0, sandboxes: 0 },
    deprecated: { production: 0, sandboxes: 0 },
    locked: { production: 0, sandboxes: 0 },
    iotReady: { production: 0, sandboxes: 0 },
    health: { passing: { production: 0, sandboxes: 0 }, critical: { production: 0, sandboxes: 0 }, unknown: { production: 0, sandboxes: 0 } },
    sandboxesByTier: {},
    sandboxes: 0,
    locatedSandboxes: 0,
  };
  for (const r of svc.rows) {
    const k = r.prod ? 'production' : 'sandboxes';
    out.services[k] = Number(r.n);
    out.deprecated[k] = Number(r.dep);
    out.locked[k] = Number(r.lck);
    out.iotReady[k] = Number(r.iot);
    for (const h of ['passing', 'critical', 'unknown'] as const) out.health[h][k] = Number(r[h]);
  }
  for (const r of sb.rows) {
    out.sandboxesByTier[r.tier] = Number(r.n);
    out.sandboxes += Number(r.n);
    out.locatedSandboxes += Number(r.located);
  }
  return out;
}

/** Every sandbox uuid, `batch` at a time (keyset on the primary key: no OFFSET scans). */
export async function* sandboxUuids(pool: Pool, batch = 1000): AsyncGenerator<string[]> {
  let after = '00000000-0000-0000-0000-000000000000';
  for (;;) {
    const r = await query<{ uuid: string }>(pool, 'SELECT uuid FROM sandboxes WHERE uuid > $1 ORDER BY uuid LIMIT $2', [after, batch]);
    if (r.rows.length === 0) return;
    yield r.rows.map((x) => x.uuid);
    if (r.rows.length < batch) return;
    after = r.rows[r.rows.length - 1]!.uuid;
  }
}

export interface LocatedSandbox {
  uuid: string;
  name: string;
  tier: string;
  lat: number;
  lon: number;
}

/** Located sandboxes for the overview map, newest first, capped so the page stays light. */
export async function locatedSandboxes(pool: Pool, max: number): Promise<LocatedSandbox[]> {
  const r = await query<LocatedSandbox>(pool, 'SELECT uuid, name, tier, lat, lon FROM sandboxes WHERE lat IS NOT NULL ORDER BY created_at DESC, uuid LIMIT $1', [max]);
  return r.rows;
}
