// Deletions, replacement candidates and heartbeat tokens in one round trip (issue 22): each
// is one call of a server-side function (migration 0008, which says why a function and not
// one statement), prepared once per connection, that returns the states the index needs:
// the caller applies Redis from them (projector.ts, applyCommitted()) and answers from
// them, reading nothing after COMMIT. A single statement outside BEGIN/COMMIT is its own
// transaction: everything or nothing.
import { CHANGE_LOCK_ID, deletedData } from './events.js';
import { ApiError, type ErrorKey } from '../domain/errors.js';
import type { ServiceRecord } from '../domain/service.js';
import { query, retrying, type Pool } from '../pg/pool.js';
import { stateRecord, type IndexState, type StateRow, type WriteResult } from './state.js';

/** A committed write with the state (or deletion, record null) it committed, and its outbox row. */
export interface CommittedWrite extends WriteResult {
  state: IndexState;
}

interface FnRow {
  o_row: string | null;
  o_id: string;
  o_ns: string;
  o_version: string;
  /** service_state as JSON (numbers as numbers); null: deleted */
  o_state: StateRow | null;
}

/** Call a function of migration 0008; its RAISEd errors become the contract's. */
async function call(pool: Pool, name: string, text: string, params: unknown[], conflict: ErrorKey = 'CANDIDATE_EXISTS'): Promise<FnRow[]> {
  try {
    return (await query<FnRow>(pool, { name, text }, params)).rows;
  } catch (err) {
    switch ((err as { code?: string }).code) {
      case 'RG404':
        throw new ApiError('SERVICE_NOT_FOUND');
      case 'RG400':
        throw new ApiError('SELF_REPLACEMENT');
      case 'RG422':
        throw new ApiError('CANDIDATE_NOT_FOUND');
      case 'RG409':
        throw new ApiError(conflict);
      default:
        throw err;
    }
  }
}

function committed(r: FnRow): CommittedWrite {
  const version = Number(r.o_version);
  return { row: Number(r.o_row), id: r.o_id, ns: r.o_ns, state: { ns: r.o_ns, version, record: r.o_state ? stateRecord(r.o_state) : null } };
}

// The sandbox rows a deletion's count changes on (migration 0010: the trigger on services),
// locked before the function locks service rows and the change feed's lock, as a
// registration locks them (writes.ts): always sandboxes, then services, then the feed. The
// lock is a one-time filter (an uncorrelated subquery): it runs before the first call.
const LOCK_SANDBOXES = (param: string) =>
  `(SELECT count(*) FROM (SELECT 1 FROM sandboxes b WHERE b.uuid = ANY(${param}::uuid[]) ORDER BY b.uuid FOR NO KEY UPDATE) lk) >= 0`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The sandbox namespaces among `nss` (production and anything else is counted nowhere). */
export function sandboxesOf(nss: readonly string[]): string[] {
  return [...new Set(nss.filter((ns) => UUID.test(ns)))];
}

/**
 * Delete a service: its deletion (a tombstone keeps the revision, so no older state of the
 * id can come back in Redis) and every service that listed it as a candidate (their
 * candidate lists change: new versions), each with its outbox row. 404 (ApiError) for a
 * service not in `ns`. A deadlock with a concurrent write (rows locked out of order) is retried.
 */
export function deleteService(pool: Pool, ns: string, id: string): Promise<CommittedWrite[]> {
  return retrying(async () =>
    (await call(pool, 'delete-service', `SELECT * FROM registry_delete_service($1, $2, $3, $4) WHERE ${LOCK_SANDBOXES('$5')}`, [id, ns, CHANGE_LOCK_ID, deletedData(id), sandboxesOf([ns])])).map(committed),
  );
}

// Deletions of many services in one statement (group commit: group-commit.ts): the same
// function per service, in order, in one transaction. Services not in their namespace (as
// of the statement's snapshot) are left out, so that a missing id answers 404 alone instead
// of failing its neighbours; one deleted by a concurrent write after that snapshot makes the
// function raise RG404, which fails the statement (the caller then runs each alone).
const DELETE_SERVICES = `
WITH x AS MATERIALIZED (
  SELECT x.id, x.ns, x.data, x.i FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS x(id, ns, data, i)
   WHERE EXISTS (SELECT 1 FROM services s WHERE s.id = x.id AND s.ns = x.ns) AND ${LOCK_SANDBOXES('$5')} ORDER BY x.i)
SELECT x.i::int AS i, r.* FROM x CROSS JOIN LATERAL registry_delete_service(x.id, x.ns, $4, x.data) r`;

/** One deletion to commit with others: the service `id` of namespace `ns`. */
export interface DeleteItem {
  ns: string;
  id: string;
}

/**
 * Delete services (distinct ids) in one statement: per item, in order, its writes (as
 * deleteService's) or null when the service is not in its namespace (404). Throws as
 * deleteService when the statement fails; a deadlock is retried.
 */
export async function deleteServices(pool: Pool, items: DeleteItem[]): Promise<(CommittedWrite[] | null)[]> {
  const rows = await retrying(async () => {
    try {
      return (await query<FnRow & { i: number }>(pool, { name: 'delete-services', text: DELETE_SERVICES }, [items.map((d) => d.id), items.map((d) => d.ns), items.map((d) => deletedData(d.id)), CHANGE_LOCK_ID, sandboxesOf(items.map((d) => d.ns))])).rows;
    } catch (err) {
      if ((err as { code?: string }).code === 'RG404') throw new ApiError('SERVICE_NOT_FOUND');
      throw err;
    }
  });
  const out: (CommittedWrite[] | null)[] = items.map(() => null);
  for (const r of rows) (out[r.i - 1] ??= []).push(committed(r));
  return out;
}

/**
 * List `candidateId` as the last-ranked replacement of `id`. Returns the write and the
 * candidates as they stand after it, ranked (the response).
 */
export async function addReplacement(pool: Pool, ns: string, id: string, candidateId: string): Promise<CommittedWrite & { candidates: ServiceRecord[] }> {
  const rows = await retrying(() =>
    call(pool, 'add-replacement', 'SELECT * FROM registry_add_replacement($1, $2, $3, $4)', [id, ns, candidateId, CHANGE_LOCK_ID], 'CANDIDATE_EXISTS'),
  );
  return { ...committed(rows[0]!), candidates: rows.slice(1).map((r) => stateRecord(r.o_state!)) };
}

/**
 * A new heartbeat token hash for a leased service (the old one stops working once the
 * projector applied this write). The document does not change: no change event; the new
 * version carries the token to Redis. 404 without the service, 409 without a lease.
 */
export async function rotateToken(pool: Pool, ns: string, id: string, hash: Buffer): Promise<CommittedWrite> {
  const rows = await call(pool, 'rotate-token', 'SELECT * FROM registry_rotate_token($1, $2, $3)', [id, ns, hash], 'NO_LEASE');
  return committed(rows[0]!);
}
