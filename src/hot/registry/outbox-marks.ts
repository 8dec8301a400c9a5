// Where the outbox stands, for a reader that waits until the writes made up to some moment
// were applied to the index (readiness/watcher.ts: the Consul catalog's return to the index
// after Redis was away). The outbox is this room's (projector.ts applies and deletes its rows).
import type { Pool } from '../pg/pool.js';

/** The id of the newest outbox row ('0' when there is none). */
export async function lastOutboxRow(pool: Pool): Promise<string> {
  return (await pool.query<{ id: string }>('SELECT coalesce(max(id), 0)::text AS id FROM outbox')).rows[0]!.id;
}

/** Whether rows up to `id` still wait to be applied (an import's index-only rows aside: a rebuild covers them). */
export async function outboxWaitsUpTo(pool: Pool, id: string): Promise<boolean> {
  return (await pool.query<{ left: boolean }>('SELECT EXISTS (SELECT 1 FROM outbox WHERE id <= $1 AND NOT index_only) AS left', [id])).rows[0]!.left;
}
