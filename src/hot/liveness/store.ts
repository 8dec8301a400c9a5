// The durable side of leases (contract "Liveness"): status transitions, token rotation and
// the pages a rebuild reseeds Redis from. Every write here is a write like the ones of
// services.ts (row lock, new version, stored index text, outbox row, change event), so the
// projector carries it to the index and to the lease in Redis.
import { appendChanges, bumpVersionsWithText, CHANGE_LOCK_ID, type CommittedWrite, indexText, type IndexText, loadStatesWhere, stateRecord, type StateRow, type WriteResult } from '../registry/index.js';
import { EXPIRY_PATCH } from './expiry-patch.js';
import { PRODUCTION } from '../domain/keys.js';
import type { ServiceRecord } from '../domain/service.js';
import { HEALTH_PATCH } from './health-patch.js';
import { query, withTx, type Client, type Pool } from '../pg/pool.js';

/** A status change as committed: the state the index and the lease in Redis need, and its stored index text. */
export interface HealthWrite extends CommittedWrite {
  text: IndexText;
}

type SetHealthRow = { o_row: string | null; o_version: string | null; o_state: StateRow | null; o_doc: string | null; o_members: string | null; o_hdr: string | null };

const SET_HEALTH = 'SELECT * FROM registry_set_health($1, $2, $3, $4, $5, $6, $7, $8)';

/**
 * Set a leased service's status (a heartbeat that reports a change). Null when there is
 * nothing to write: no such service in `ns`, no lease, or the status is already that one.
 * `now`: ms on the caller's clock (critical_since). One round trip: a prepared call of
 * registry_set_health (migration 0009), which writes the status, a new version, the patched
 * index text (liveness/health-patch.ts), the outbox row and the change event in one
 * transaction and returns the state: apply it with the projector's applyCommitted(), no
 * read back. A row whose stored text cannot be patched goes the general way (setHealthByState).
 */
export async function setHealth(pool: Pool, ns: string, id: string, status: 'passing' | 'critical', now: number): Promise<HealthWrite | null> {
  const r = await query<SetHealthRow>(pool, { name: 'set-health', text: SET_HEALTH }, [id, ns, status, now, HEALTH_PATCH.passing, HEALTH_PATCH.critical, HEALTH_PATCH.sets, CHANGE_LOCK_ID]);
  const x = r.rows[0];
  if (!x) return null;
  if (x.o_row === null) return setHealthByState(pool, ns, id, status, now);
  const version = Number(x.o_version);
  return { row: Number(x.o_row), id, ns, state: { ns, version, record: stateRecord(x.o_state!) }, text: { doc: x.o_doc!, members: x.o_members!, hdr: x.o_hdr! } };
}

/** setHealth() for a row without patchable stored text (written before migration 0004 and not backfilled): its state read, indexText(). */
async function setHealthByState(pool: Pool, ns: string, id: string, status: 'passing' | 'critical', now: number): Promise<HealthWrite | null> {
  return withTx(pool, async (c) => {
    const cur = await c.query<{ hs: string; ttl: number | null }>('SELECT health_status AS hs, ttl FROM services WHERE id = $1 AND ns = $2 FOR UPDATE', [id, ns]);
    const row = cur.rows[0];
    if (!row || row.ttl === null || row.hs === status) return null;
    await c.query(`UPDATE services SET health_status = $2, critical_since = CASE WHEN $2 = 'critical' THEN $3::bigint END, updated_at = now() WHERE id = $1`, [id, status, now]);
    // the state as it now stands: its index text stored with a new version (drawn holding the row lock)
    const [st] = await loadStatesWhere(c, 'WHERE s.id = $1', [id]);
    const text = indexText(st!);
    await bumpVersionsWithText(c, [{ id, text }]);
    const v = await c.query<{ version: string }>('SELECT version::text FROM services WHERE id = $1', [id]);
    const o = await c.query<{ id: string }>('INSERT INTO outbox (ns, service_id) VALUES ($1, $2) RETURNING id', [ns, id]);
    await appendChanges(c, [{ ns, serviceId: id, type: 'service.updated', data: text.doc }]);
    const version = Number(v.rows[0]!.version);
    return { row: Number(o.rows[0]!.id), id, ns, state: { ns, version, record: { ...st!, version } }, text };
  });
}

/** A lease the sweeper turned critical in Redis, to be made durable by expireMany(). */
export interface ExpiryItem {
  id: string;
  /** the version the lease was made from (its record's revision): only that state expires */
  rev: number;
  /** ms since when it is critical (the sweeper's flip: critical_since) */
  crit: number;
}

/** An expiry committed by expireMany(): what the index and the lease in Redis need, without a read back. */
export interface ExpiredEntry {
  /** outbox row */
  row: number;
  id: string;
  ns: string;
  /** the version it expired from, and the one the expiry committed */
  from: number;
  version: number;
  /** the lease as committed (critical) */
  lease: Pick<LeaseRow, 'ttl' | 'deregisterAfter' | 'status' | 'criticalSince' | 'tokenHash'>;
}

type ExpiredRaw = { row: string; id: string; ns: string; from_rev: string; version: string; ttl: number; deregister_after: number | null; crit: string; tok: string | null };

/**
 * Make the sweeper's expiries durable, in one transaction: each of `items` whose service is
 * still passing at exactly the version its lease was made from turns critical (a heartbeat
 * or a write since then drew a newer version: that one stands, and its own apply restores
 * the index and the lease). The rows are locked in id order first; then ONE statement
 * changes the rows, their stored index text (EXPIRY_PATCH: the document's health and the
 * health-dependent member lines, the rest as stored), draws their versions and inserts their
 * outbox rows and change events (the change feed's ordering lock taken in it, as
 * appendChanges() does). A row without stored index text goes the general way (its state
 * read, indexText()). Returns what committed, for the expiry's own apply to Redis.
 */
export async function expireMany(pool: Pool, items: ExpiryItem[]): Promise<ExpiredEntry[]> {
  if (!items.length) return [];
  return withTx(pool, async (c) => {
    // lock first (id order, as every multi-row writer); the next statement reads in a new snapshot
    const locked = await c.query<{ id: string }>("SELECT id FROM services WHERE id = ANY($1) AND ttl IS NOT NULL AND health_status = 'passing' ORDER BY id FOR UPDATE", [items.map((x) => x.id)]);
    if (!locked.rowCount) return [];
    const r = await c.query<ExpiredRaw>(
      `WITH t AS (SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS t(id, rev, crit)),
       u AS (
         UPDATE services s
            SET health_status = 'critical', critical_since = t.crit, updated_at = now(), version = nextval('service_version_seq'),
                idx_doc = replace(s.idx_doc, $4, $5),
                idx_members = array_to_string(ARRAY(SELECT x.m FROM unnest(string_to_array(s.idx_members, E'\\n')) WITH ORDINALITY AS x(m, i) WHERE x.m <> ALL($6::text[]) ORDER BY x.i), E'\\n')
           FROM t
          WHERE s.id = t.id AND s.version = t.rev AND s.ttl IS NOT NULL AND s.health_status = 'passing'
            AND s.idx_doc IS NOT NULL AND strpos(s.idx_doc, $4) > 0
         RETURNING s.id, s.ns, t.rev::text AS from_rev, s.version::text AS version, s.idx_doc AS doc, s.ttl, s.deregister_after, s.critical_since::text AS crit, encode(s.hb_token_hash, 'hex') AS tok
       ),
       o AS (INSERT INTO outbox (ns, service_id) SELECT ns, id FROM u RETURNING id, service_id),
       e AS (
         INSERT INTO change_events (id, ns, service_id, type, data)
         SELECT nextval('change_events_id_seq'), u.ns, u.id, 'service.updated', u.doc FROM (SELECT pg_advisory_xact_lock($7)) l, u
       )
       SELECT o.id::text AS row, u.id, u.ns, u.from_rev, u.version, u.ttl, u.deregister_after, u.crit, u.tok FROM u JOIN o ON o.service_id = u.id`,
      [items.map((x) => x.id), items.map((x) => x.rev), items.map((x) => x.crit), EXPIRY_PATCH.oldTail, EXPIRY_PATCH.newTail, EXPIRY_PATCH.left, CHANGE_LOCK_ID],
    );
    const out = r.rows.map(
      (x): ExpiredEntry => ({
        row: Number(x.row),
        id: x.id,
        ns: x.ns,
        from: Number(x.from_rev),
        version: Number(x.version),
        lease: { ttl: x.ttl, deregisterAfter: x.deregister_after, status: 'critical', criticalSince: Number(x.crit), tokenHash: x.tok ?? '' },
      }),
    );
    if (out.length === locked.rowCount) return out;
    // the rest: a newer version (nothing to do), or no stored index text (the general way)
    const done = new Set(out.map((x) => x.id));
    const rest = items.filter((x) => !done.has(x.id));
    return out.concat(await expireByState(c, rest));
  });
}

/** expireMany() for rows whose index text is not stored: their state read, indexText() of the critical one. */
async function expireByState(c: Client, items: ExpiryItem[]): Promise<ExpiredEntry[]> {
  const want = new Map(items.map((x) => [x.id, x]));
  const states = (await loadStatesWhere(c, "WHERE s.id = ANY($1) AND s.ttl IS NOT NULL AND s.hs = 'passing' ORDER BY s.id", [items.map((x) => x.id)]))
    .filter((r) => r.version === want.get(r.id)!.rev)
    .map((r): ServiceRecord => ({ ...r, health: { status: 'critical', ttl: r.health!.ttl }, lease: { ...r.lease!, criticalSince: want.get(r.id)!.crit } }));
  if (!states.length) return [];
  const texts = states.map(indexText);
  const v = await c.query<{ id: string; version: string }>(
    `UPDATE services s SET health_status = 'critical', critical_since = t.crit, updated_at = now(),
            version = nextval('service_version_seq'), idx_doc = t.d, idx_members = t.m, idx_hdr = t.h
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[]) AS t(id, d, m, h, crit) WHERE s.id = t.id
     RETURNING s.id, s.version::text`,
    [states.map((s) => s.id), texts.map((t) => t.doc), texts.map((t) => t.members), texts.map((t) => t.hdr), states.map((s) => s.lease!.criticalSince)],
  );
  const version = new Map(v.rows.map((r) => [r.id, Number(r.version)]));
  const o = await c.query<{ id: string; service_id: string }>('INSERT INTO outbox (ns, service_id) SELECT * FROM unnest($1::text[], $2::text[]) RETURNING id, service_id', [states.map((s) => s.ns), states.map((s) => s.id)]);
  await appendChanges(c, states.map((s, i) => ({ ns: s.ns, serviceId: s.id, type: 'service.updated' as const, data: texts[i]!.doc })));
  const byId = new Map(states.map((s) => [s.id, s]));
  return o.rows.map((r) => {
    const s = byId.get(r.service_id)!;
    return { row: Number(r.id), id: s.id, ns: s.ns, from: s.version!, version: version.get(s.id)!, lease: { ttl: s.health!.ttl!, deregisterAfter: s.lease!.deregisterAfter, status: 'critical', criticalSince: s.lease!.criticalSince, tokenHash: s.lease!.tokenHash } };
  });
}

/**
 * A new version of a leased service that still has `status`, with an outbox row and no other
 * change: a passing heartbeat found PostgreSQL passing while Redis said critical (the
 * sweeper's provisional flip, not yet durable, or one whose commit failed). The new version
 * makes the pending expiry (made from the old one) a no-op, and its apply puts the index
 * and the lease back to the state PostgreSQL holds. Null: the status is no longer that one.
 */
export async function renewVersion(pool: Pool, ns: string, id: string, status: 'passing' | 'critical'): Promise<WriteResult | null> {
  return withTx(pool, async (c) => {
    const u = await c.query("UPDATE services SET version = nextval('service_version_seq'), updated_at = now() WHERE id = $1 AND ns = $2 AND ttl IS NOT NULL AND health_status = $3", [id, ns, status]);
    if (!u.rowCount) return null;
    const o = await c.query<{ id: string }>('INSERT INTO outbox (ns, service_id) VALUES ($1, $2) RETURNING id', [ns, id]);
    return { id, ns, row: Number(o.rows[0]!.id) };
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
