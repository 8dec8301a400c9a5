// Applies migrations/NNNN_name.sql in order, each in its own transaction, under an
// advisory lock so that concurrent starters do not race; applied ones are recorded in the
// schema_migrations ledger. Steps written in TypeScript (a migration that needs code SQL
// lacks, and a step run on every start) are handed in by the caller (src/hot/migrate.ts), so
// this module knows no feature.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Client, Pool } from './pool.js';
import { ROOT } from '../paths.js';

const LOCK_ID = 7_242_001; // arbitrary, fixed: the migrator's advisory lock

export const MIGRATIONS_DIR = join(ROOT, 'src/hot/pg/migrations');

/** A migration step written in TypeScript: runs on the migrator's connection. */
export type CodeStep = (c: Client, log: (msg: string) => void) => Promise<unknown>;

export interface CodeSteps {
  /** by version: run in the same transaction right after the SQL file of that version */
  code: Record<number, CodeStep>;
  /** after every migration, under the same lock, on every start (skipped with `upTo`) */
  always: CodeStep;
}

export interface MigrateOptions {
  /**
   * apply versions up to this one only, and skip the `always` step (the schema it needs may
   * not be there yet): a migration's test starts from the version before it
   */
  upTo?: number;
}

/**
 * The migration files in order. Two files with one number would have the second skipped as
 * applied (the ledger is keyed by number): that is refused here, before anything runs.
 */
export async function migrationFiles(dir = MIGRATIONS_DIR): Promise<string[]> {
  const files = (await readdir(dir)).filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f)).sort();
  const seen = new Map<string, string>();
  for (const f of files) {
    const other = seen.get(f.slice(0, 4));
    if (other) throw new Error(`migrations ${other} and ${f} share the number ${f.slice(0, 4)}: renumber one`);
    seen.set(f.slice(0, 4), f);
  }
  return files;
}

export async function runMigrations(pool: Pool, steps: CodeSteps, log: (msg: string) => void = () => undefined, opts: MigrateOptions = {}): Promise<string[]> {
  const files = await migrationFiles();
  const client = await pool.connect();
  const applied: string[] = [];
  try {
    await client.query('SELECT pg_advisory_lock($1)', [LOCK_ID]);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set((await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) => r.version));
    for (const f of files) {
      const version = Number(f.slice(0, 4));
      if (done.has(version) || version > (opts.upTo ?? Infinity)) continue;
      const sql = await readFile(join(MIGRATIONS_DIR, f), 'utf8');
      await client.query('BEGIN');
      try {
        // a migration rewrites what the registry holds, which takes as long as it takes (the
        // pool's statement timeout is for one operator statement, not a schema change at 10M)
        await client.query('SET LOCAL statement_timeout = 0');
        await client.query(sql);
        await steps.code[version]?.(client, log);
        await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [version, f]);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK');
        throw new Error(`migration ${f} failed: ${(err as Error).message}`, { cause: err });
      }
      applied.push(f);
      log(`applied migration ${f}`);
    }
    if (opts.upTo === undefined) await steps.always(client, log);
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [LOCK_ID]).catch(() => undefined);
    client.release();
  }
  return applied;
}
