// The migration thread's entry (migrate-apart.ts): migrate() over a pool of its own, its log
// lines and its failure posted to the thread that started it.
import { parentPort, workerData } from 'node:worker_threads';
import { createPool } from './pg/pool.js';
import { migrate } from './migrate.js';
import type { MigrateMessage } from './migrate-apart.js';

const post = (m: MigrateMessage) => parentPort!.postMessage(m);
const pool = createPool((workerData as { databaseUrl: string }).databaseUrl, 2);
try {
  await migrate(pool, (msg) => post({ log: msg }));
} catch (e) {
  post({ error: (e as Error).message });
} finally {
  await pool.end();
}
