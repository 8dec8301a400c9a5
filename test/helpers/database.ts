// Throw-away databases for tests: a fresh one per server (or a pool on one, for a test of the
// store), made by copying a migrated template, on the PostgreSQL server of DATABASE_URL.
import { createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { loadConfig } from '../../src/hot/config.js';
import type { Test } from 'tap';
import { createPool, type Pool } from '../../src/hot/pg/pool.js';
import { MIGRATIONS_DIR, migrationFiles } from '../../src/hot/pg/migrator.js';
import { migrate } from '../../src/hot/migrate.js';
import { MEMBER_RULE } from '../../src/hot/domain/dimensions.js';
import { baseEnv } from './env.js';
import { sleep } from './wait.js';

/**
 * A fresh database on the server of DATABASE_URL; returns its URL and a drop function.
 * `upTo`: migrated up to that version only (a migration's test starts from the one before).
 * A fully migrated one is a copy of a template database (templateDatabase()): CREATE
 * DATABASE … TEMPLATE copies the migrated schema faster than the migrations run, and the
 * suite makes one for nearly every server it starts.
 */
export async function freshDatabase(upTo?: number): Promise<{ url: string; drop: () => Promise<void> }> {
  const base = loadConfig(baseEnv()).databaseUrl;
  const name = 't_' + randomBytes(6).toString('hex');
  const adminUrl = new URL(base);
  adminUrl.pathname = '/postgres';
  const template = upTo === undefined ? await templateDatabase(adminUrl) : null;
  const admin = new pg.Client({ connectionString: adminUrl.toString() });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`);
  await admin.end();
  const url = new URL(base);
  url.pathname = '/' + name;
  const pool = createPool(url.toString(), 1);
  // on a copy of the template this finds every version applied and the index text current:
  // one read (a template made by other code than this checkout's would be caught up here)
  await migrate(pool, undefined, { upTo });
  await pool.end();
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: adminUrl.toString() });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/** A pool of `size` on a fresh database (`upTo` as for freshDatabase()), both gone when `t` ends. */
export async function freshPool(t: Test, size: number, upTo?: number): Promise<{ pool: Pool; url: string }> {
  const db = await freshDatabase(upTo);
  const pool = createPool(db.url, size);
  t.teardown(async () => {
    await pool.end();
    await db.drop();
  });
  return { pool, url: db.url };
}

let templateName: Promise<string> | null = null;

/**
 * The name of a fully migrated database that no one connects to, to copy: t_tmpl_<hash> where
 * the hash covers the migration files and the member rule (ensureIndexText()), so a changed
 * migration gets a template of its own. Made once per PostgreSQL server by whichever test
 * process needs it first: migrated under a name of its own, then renamed (atomic; the loser
 * of a race drops its copy).
 */
function templateDatabase(adminUrl: URL): Promise<string> {
  templateName ??= (async () => {
    const files = await migrationFiles();
    const h = createHash('sha256').update(MEMBER_RULE);
    for (const f of files) h.update(f).update(await readFile(join(MIGRATIONS_DIR, f)));
    const name = 't_tmpl_' + h.digest('hex').slice(0, 16);
    const admin = new pg.Client({ connectionString: adminUrl.toString() });
    await admin.connect();
    try {
      if ((await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount) return name;
      const work = 't_tmpw_' + randomBytes(6).toString('hex');
      await admin.query(`CREATE DATABASE ${work}`);
      const url = new URL(adminUrl);
      url.pathname = '/' + work;
      const pool = createPool(url.toString(), 1);
      await migrate(pool);
      await pool.end();
      for (let attempt = 1; ; attempt++) {
        try {
          await admin.query(`ALTER DATABASE ${work} RENAME TO ${name}`);
          return name;
        } catch (e) {
          const code = (e as { code?: string }).code;
          // 55006: the migrator's backend has not quite exited yet (pool.end() does not wait for it)
          if (code === '55006' && attempt < 50) {
            await sleep(20);
            continue;
          }
          await admin.query(`DROP DATABASE IF EXISTS ${work} WITH (FORCE)`);
          // another process made it first: 42P04, or 23505 when both renames ran at once
          // (pg_database's unique index caught the second)
          if (code === '42P04' || code === '23505') return name;
          throw e;
        }
      }
    } finally {
      await admin.end();
    }
  })();
  templateName.catch(() => (templateName = null)); // a failure is not remembered: the next call tries again
  return templateName;
}
