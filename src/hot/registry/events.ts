// Change events: written by every service write inside its own transaction (registry/state.ts,
// writes/bulk.ts), read by the change feed (changes/hub.ts). Why the advisory lock: a bigserial
// id is drawn at INSERT but becomes visible at COMMIT, so two writers can commit out of id
// order and a reader that has moved past id 7 would never see a late-committing id 6.
// Holding one transaction-scoped lock from the id draw until COMMIT hands ids out in commit
// order; the insert is the last statement of each write, so the lock is held for one
// statement and the COMMIT round trip only.
import type { Client, Pool } from '../pg/pool.js';

export type ChangeType = 'service.created' | 'service.updated' | 'service.deprecated' | 'service.deleted';

export const CHANGE_TYPES: readonly ChangeType[] = ['service.created', 'service.updated', 'service.deprecated', 'service.deleted'];

export interface ChangeInput {
  ns: string;
  serviceId: string;
  type: ChangeType;
  /** JSON: the service object, or {"id"} for a deletion */
  data: string;
}

export interface ChangeEvent {
  /** bigint: pg hands it over as a decimal string (never order or compare these as text) */
  id: string;
  ns: string;
  type: ChangeType;
  data: string;
}

/** fixed, arbitrary: the change feed's ordering lock (the migrator uses 7_242_001) */
export const CHANGE_LOCK_ID = 7_242_002;

/**
 * Append change events; call it as the LAST statement of a write transaction (the lock it
 * takes is held until COMMIT). One statement for any number of events.
 */
export async function appendChanges(c: Client, events: ChangeInput[]): Promise<void> {
  if (!events.length) return;
  // The lock is taken in the FROM item, before the SELECT list (and with it nextval) is
  // evaluated for any row.
  await c.query(
    `INSERT INTO change_events (id, ns, service_id, type, data)
     SELECT nextval('change_events_id_seq'), e.ns, e.sid, e.type, e.data
       FROM (SELECT pg_advisory_xact_lock($1)) l,
            unnest($2::text[], $3::text[], $4::text[], $5::text[]) AS e(ns, sid, type, data)`,
    [CHANGE_LOCK_ID, events.map((e) => e.ns), events.map((e) => e.serviceId), events.map((e) => e.type), events.map((e) => e.data)],
  );
}

export function deletedData(id: string): string {
  return JSON.stringify({ id });
}

/** Events of one namespace after `after` (exclusive) and up to `upTo` (inclusive), in order. */
export async function readChanges(pool: Pool, ns: string, after: string, upTo: string, limit: number): Promise<ChangeEvent[]> {
  const r = await pool.query<ChangeEvent>(
    'SELECT id, ns, type, data FROM change_events WHERE ns = $1 AND id > $2 AND id <= $3 ORDER BY id LIMIT $4',
    [ns, after, upTo, limit],
  );
  return r.rows;
}

/** Events of every namespace after `after`, in order (the per-thread poller). */
export async function readAllChanges(pool: Pool, after: string, limit: number): Promise<ChangeEvent[]> {
  const r = await pool.query<ChangeEvent>('SELECT id, ns, type, data FROM change_events WHERE id > $1 ORDER BY id LIMIT $2', [after, limit]);
  return r.rows;
}

export async function lastChangeId(pool: Pool): Promise<string> {
  const r = await pool.query<{ id: string | null }>('SELECT max(id)::text AS id FROM change_events');
  return r.rows[0]?.id ?? '0';
}

/** Drop events older than `hours`; returns how many went. */
export async function pruneChanges(pool: Pool, hours: number): Promise<number> {
  const r = await pool.query('DELETE FROM change_events WHERE created_at < now() - make_interval(hours => $1)', [hours]);
  return r.rowCount ?? 0;
}
