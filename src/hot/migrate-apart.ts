// The start's migrations on a thread of their own (docs/decisions/index-text.md, "At start"):
// a backfill of the stored index text serialises every row it fills, and in the serving
// isolate its objects and its type feedback stayed behind, a server that filled 100,000 rows
// at start answering cold pages at half its speed for as long as it ran. The thread's isolate
// goes with it; the serving one starts as clean as after a start with nothing to fill.
import { Worker } from 'node:worker_threads';

/** Messages of the migration thread (migrate-worker.ts). */
export type MigrateMessage = { log: string } | { error: string };

/**
 * migrate() (migrate.ts) on a worker thread; resolves with that thread's id once it ended,
 * rejects with the migration's own error message.
 */
export function migrateApart(databaseUrl: string, log: (msg: string) => void = () => undefined): Promise<number> {
  return new Promise((resolve, reject) => {
    const w = new Worker(new URL('./migrate-worker.js', import.meta.url), { workerData: { databaseUrl } });
    const id = w.threadId;
    let failed: Error | null = null;
    w.on('message', (m: MigrateMessage) => ('log' in m ? log(m.log) : (failed = new Error(m.error))));
    w.on('error', (e) => (failed ??= e));
    w.on('exit', (code) => (failed ? reject(failed) : code ? reject(new Error(`the migration thread exited with status ${code}`)) : resolve(id)));
  });
}
