// The schema's migrations with their TypeScript steps: the SQL files (pg/migrator.ts), the
// endpoint rewrite of migration 0007 and the stored index text brought up to today's member
// rule on every start (both reindex/). The one place that puts the two together.
import { runMigrations, type MigrateOptions } from './pg/migrator.js';
import type { Pool } from './pg/pool.js';
import { ensureIndexText, normaliseStoredEndpoints } from './reindex/index.js';

export function migrate(pool: Pool, log: (msg: string) => void = () => undefined, opts: MigrateOptions = {}): Promise<string[]> {
  return runMigrations(pool, { code: { 7: normaliseStoredEndpoints }, always: ensureIndexText }, log, opts);
}
