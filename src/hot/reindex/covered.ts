// The outbox rows a rebuild covers. Every write commits an outbox row (registry/projector.ts);
// a rebuild reads PostgreSQL after its start, so the index part of each row committed before
// that start is in the generation it builds. The lease part is not always (a rebuild seeds
// only the leases Redis lacks): the rows a rebuild may delete are the index-only ones
// (outbox.index_only, migration 0014: `registry import` marks its rows so). Without this, an
// import with --no-reindex left 10,188,500 rows that every server's sweeper applied again,
// one by one, after `registry reindex` had indexed them.
// Which rows are covered is decided by the snapshot the rebuild starts with: a row counts
// when the transaction that inserted it is visible in it (committed before the start), not
// by id or time, since a transaction can hold an older id and commit later. (The snapshot
// lists open transactions, not their subtransactions: no outbox row is written in a savepoint.)
import type { Pool } from '../pg/pool.js';
import { OUTBOX_ROW_WRITES } from '../registry/index.js';

/** Where a rebuild started: PostgreSQL's snapshot then and the range of outbox ids it saw. */
export interface OutboxMark {
  snapshot: string;
  minId: number;
  maxId: number;
}

/**
 * Ids a statement deletes in (a short lock on each, the sweeper can run between them); rows a
 * sweeper holds are skipped, not waited for (it is deleting them).
 */
const ID_WINDOW = 50_000;
/** windows deleted at once (connections of the pool): the machine's two cores */
const DROP_PARALLEL = 2;

/** Taken before the rebuild reads anything: what it reads later includes every row visible here. */
export async function markOutbox(pool: Pool): Promise<OutboxMark> {
  const r = await pool.query<{ snapshot: string; min_id: string | null; max_id: string | null }>('SELECT pg_current_snapshot()::text AS snapshot, min(id)::text AS min_id, max(id)::text AS max_id FROM outbox');
  const { snapshot, min_id, max_id } = r.rows[0]!;
  return { snapshot, minId: Number(min_id ?? 1), maxId: Number(max_id ?? 0) };
}

// A row's xmin (32 bits) as the full transaction id (xid8) of the current epoch, or of the
// one before when it is higher than the current id's low bits (the counter wrapped since).
const XMIN8 = `(((pg_current_xact_id()::text::bigint >> 32) - (xmin::text::bigint > (pg_current_xact_id()::text::bigint & 4294967295))::int) << 32 | xmin::text::bigint)::text::xid8`;

/**
 * Delete the index-only outbox rows the rebuild that took `mark` covered (call it once that
 * generation is live). Returns how many writes they stood for. Rows of transactions still
 * open at the mark, committed after it, or not index-only stay for the sweeper.
 */
export async function dropCovered(pool: Pool, mark: OutboxMark): Promise<number> {
  let n = 0;
  // by windows of ids, each an index range: a statement with a LIMIT would read again, every
  // time, past the rows the ones before it deleted: quadratic in a large backlog. DROP_PARALLEL
  // windows at once: after a large import, `registry reindex` waits for them before it exits.
  let next = mark.minId - 1;
  const worker = async () => {
    while (next < mark.maxId) {
      const lo = next;
      next += ID_WINDOW;
      // counted in writes (OUTBOX_ROW_WRITES: a row of an import's chunk counts each service)
      const r = await pool.query<{ n: number }>(
        `WITH d AS (DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE id > $1 AND id <= $2 AND index_only AND pg_visible_in_snapshot(${XMIN8}, $3::pg_snapshot) FOR UPDATE SKIP LOCKED)
                    RETURNING ${OUTBOX_ROW_WRITES} AS n)
         SELECT coalesce(sum(n), 0)::int AS n FROM d`,
        [lo, Math.min(lo + ID_WINDOW, mark.maxId), mark.snapshot],
      );
      n += r.rows[0]!.n;
    }
  };
  await Promise.all(Array.from({ length: DROP_PARALLEL }, worker));
  return n;
}
