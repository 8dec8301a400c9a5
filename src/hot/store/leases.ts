// The durable side of leases (contract "Liveness"): status transitions, token rotation and
// the pages a rebuild reseeds Redis from. Every write here is a write like the ones of
// services.ts (row lock, new version, stored index text, outbox row, change event), so the
// projector carries it to the index and to the lease in Redis.
import { appendChanges } from '../changes/events.js';
import { PRODUCTION } from '../domain/keys.js';
import { serializeService } from '../domain/service.js';
import { bumpVersionsWithText, indexText, loadStatesWhere, type WriteResult } from './services.js';
import { withTx, type Pool } from './pool.js';

/**
 * Set a leased service's status (a heartbeat that reports a change, or the sweeper). Null
 * when there is nothing to write: no such service in `ns`, no lease, the status is already
 * that one, or `confirm` (run holding the row lock, before anything is written) said no.
 * `now`: ms on the caller's clock (critical_since).
 */
export async function setHealth(pool: Pool, ns: string, id: string, status: 'passing' | 'critical', now: number, confirm?: () => Promise<boolean>): Promise<WriteResult | null> {
  return withTx(pool, async (c) => {
    const cur = await c.query<{ hs: string; ttl: number | null }>('SELECT health_status AS hs, ttl FROM services WHERE id = $1 AND ns = $2 FOR UPDATE', [id, ns]);
    const row = cur.rows[0];
    if (!row || row.ttl === null || row.hs === status) return null;
    if (confirm && !(await confirm())) return null;
    await c.query(`UPDATE services SET health_status = $2, critical_since = CASE WHEN $2 = 'critical' THEN $3::bigint END, updated_at = now() WHERE id = $1`, [id, status, now]);
    // the state as it now stands: its index text stored with a new version (drawn holding the row lock)
    const [st] = await loadStatesWhere(c, 'WHERE s.id = $1', [id]);
    const text = indexText(st!);
    await bumpVersionsWithText(c, [{ id, text }]);
    const o = await c.query<{ id: string }>('INSERT INTO outbox (ns, service_id) VALUES ($1, $2) RETURNING id', [ns, id]);
    await appendChanges(c, [{ ns, serviceId: id, type: 'service.updated', data: text.doc }]);
    return { id, ns, row: Number(o.rows[0]!.id) };
  });
}

/**
 * Turn the leased services among `ids` that are still passing critical, in one
 * transaction (the sweeper's set-based expiry: a shard's due batch). Their rows are locked
 * in id order; `confirm` (run holding the locks, before anything is written) returns the
 * ids whose leases are still past their deadline (lease-expire-2.lua). One statement each
 * for the status, the versions with the stored index text, the outbox rows and the change
 * events. `now`: ms on the caller's clock (critical_since).
 */
export async function expireMany(pool: Pool, ids: string[], now: number, confirm: (ids: string[]) => Promise<string[]>): Promise<WriteResult[]> {
  if (!ids.length) return [];
  return withTx(pool, async (c) => {
    const locked = await c.query<{ id: string }>(
      "SELECT id FROM services WHERE id = ANY($1) AND ttl IS NOT NULL AND health_status = 'passing' ORDER BY id FOR UPDATE",
      [ids],
    );
    if (!locked.rows.length) return [];
    const ok = await confirm(locked.rows.map((r) => r.id));
    if (!ok.length) return [];
    await c.query("UPDATE services SET health_status = 'critical', critical_since = $2, updated_at = now() WHERE id = ANY($1)", [ok, now]);
    const states = await loadStatesWhere(c, 'WHERE s.id = ANY($1)', [ok]);
    await bumpVersionsWithText(c, states.map((s) => ({ id: s.id, text: indexText(s) })));
    const o = await c.query<{ id: string; service_id: string; ns: string }>(
      'INSERT INTO outbox (ns, service_id) SELECT * FROM unnest($1::text[], $2::text[]) RETURNING id, service_id, ns',
      [states.map((s) => s.ns), states.map((s) => s.id)],
    );
    await appendChanges(c, states.map((s) => ({ ns: s.ns, serviceId: s.id, type: 'service.updated' as const, data: serializeService(s) })));
    return o.rows.map((r) => ({ id: r.service_id, ns: r.ns, row: Number(r.id) }));
  });
}

// (a new heartbeat token: rotateToken(), write-functions.ts: one round trip)

/** The key prefix heartbeat tokens of a namespace start with (the sandbox key's; `prod`). */
export async function tokenPrefix(pool: Pool, ns: string): Promise<string> {
  if (ns === PRODUCTION) return 'prod';
  const r = await pool.query<{ prefix: string }>('SELECT prefix FROM sandboxes WHERE uuid = $1', [ns]);
  return r.rows[0]?.prefix ?? 'sandbox';
}

/** A lease as PostgreSQL holds it (rebuild reseed, the sweeper's deregistration check). */
export interface LeaseRow {
  id: string;
  ns: string;
  version: number;
  ttl: number;
  deregisterAfter: number | null;
  status: 'passing' | 'critical';
  criticalSince: number | null;
  tokenHash: string;
}

const LEASE_COLS = `id, ns, version::text, ttl, deregister_after, health_status, critical_since::text, encode(hb_token_hash, 'hex') AS tok`;
type Raw = { id: string; ns: string; version: string; ttl: number; deregister_after: number | null; health_status: 'passing' | 'critical'; critical_since: string | null; tok: string | null };
const toLease = (r: Raw): LeaseRow => ({
  id: r.id,
  ns: r.ns,
  version: Number(r.version),
  ttl: r.ttl,
  deregisterAfter: r.deregister_after,
  status: r.health_status,
  criticalSince: r.critical_since === null ? null : Number(r.critical_since),
  tokenHash: r.tok ?? '',
});

/** Leased services in id order after `afterId`, `n` at most. */
export async function loadLeasePage(pool: Pool, afterId: string, n: number): Promise<LeaseRow[]> {
  const r = await pool.query<Raw>(`SELECT ${LEASE_COLS} FROM services WHERE ttl IS NOT NULL AND id > $1 ORDER BY id LIMIT $2`, [afterId, n]);
  return r.rows.map(toLease);
}

export async function loadLease(pool: Pool, id: string): Promise<LeaseRow | null> {
  const r = await pool.query<Raw>(`SELECT ${LEASE_COLS} FROM services WHERE id = $1 AND ttl IS NOT NULL`, [id]);
  return r.rows[0] ? toLease(r.rows[0]) : null;
}

/** Services per health status, production and sandboxes apart (dashboard), or of one sandbox. */
export async function healthCounts(pool: Pool, ns?: string): Promise<Record<'production' | 'sandboxes', Record<'passing' | 'critical' | 'unknown', number>>> {
  const r = await pool.query<{ prod: boolean; hs: 'passing' | 'critical' | 'unknown'; n: string }>(
    `SELECT ns = 'production' AS prod, health_status AS hs, count(*) AS n FROM services ${ns ? 'WHERE ns = $1' : ''} GROUP BY 1, 2`,
    ns ? [ns] : [],
  );
  const out = { production: { passing: 0, critical: 0, unknown: 0 }, sandboxes: { passing: 0, critical: 0, unknown: 0 } };
  for (const x of r.rows) out[x.prod ? 'production' : 'sandboxes'][x.hs] = Number(x.n);
  return out;
}
