// Test harness: a real server on an ephemeral port, against the real Redis and PostgreSQL
// named by REDIS_URL and DATABASE_URL. Each call gets its own throw-away database (created,
// migrated, dropped afterwards) and its own Redis key prefix, so test files can run in
// parallel against one Redis and one PostgreSQL server.
import { createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { createLogger, type App } from '../../src/hot/app.js';
import { buildThread, type Thread, type ThreadHooks } from '../../src/hot/compose.js';
import { loadConfig, type Config } from '../../src/hot/config.js';
import { checkUwsNative } from '../../src/hot/http/native.js';
import { createRedis, type RedisClient } from '../../src/hot/redis/client.js';
import type { Server } from '../../src/hot/server.js';
import { createPool } from '../../src/hot/pg/pool.js';
import { MIGRATIONS_DIR, migrationFiles } from '../../src/hot/pg/migrator.js';
import { migrate } from '../../src/hot/migrate.js';
import { MEMBER_RULE } from '../../src/hot/domain/dimensions.js';
import pino from 'pino';
import { assertResponse, loadDocument } from './openapi-check.js';
import type { Svc } from './svc.js';
import { sleep } from './wait.js';

export const ADMIN_KEY = 'test-admin-key-0123456789abcdef';

export function baseEnv(): Record<string, string | undefined> {
  return {
    ...process.env,
    NODE_ENV: 'test',
    ADMIN_API_KEY: ADMIN_KEY,
    PORT: '0',
    METRICS_PORT: '0', // each test server's /metrics listener on an ephemeral port
    DNS_PORT: 'off', // tests of the DNS server ask for one (DNS_PORT: '0'); 8600 would clash
    WORKERS: '1',
    COOKIE_SECURE: 'false',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    PROXY_SOCKET_DIR: '', // a test that wants proxy sockets gives a directory of its own
  };
}

/**
 * A fresh database on the server of DATABASE_URL; returns its URL and a drop function.
 * `upTo`: migrated up to that version only (a migration's test starts from the one before).
 * A fully migrated one is a copy of a template database (templateDatabase()): CREATE
 * DATABASE … TEMPLATE copies the migrated schema in ~0.3 s where running the migrations took
 * another ~0.5-0.9 s, and the suite makes about 150 of them.
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

export interface TestServer {
  url: string;
  app: App;
  server: Server;
  /** the thread as main.ts builds it (compose.ts) */
  thread: Thread;
  cfg: Config;
  /** fetch a path on this server; never follows redirects; throws when the answer does not match /openapi.json */
  req(path: string, init?: RequestInit): Promise<Response>;
  /** port of this server's /metrics listener (null with METRICS_ENABLED=false) */
  metricsPort: number | null;
  /** GET on this server's /metrics listener (its own port, not the public one) */
  metrics(path?: string): Promise<Response>;
  /** JSON request with the admin Bearer key */
  admin(method: string, path: string, body?: unknown): Promise<Response>;
  /** stop the thread, dropping its database and Redis keys */
  close(): Promise<void>;
  /** stop the thread only (a second server on the database and prefix of another) */
  stop(): Promise<void>;
}

export interface StartOptions {
  env?: Record<string, string>;
  /** reuse a database (for restart tests); default: a fresh one, dropped on close */
  databaseUrl?: string;
  redisKeyPrefix?: string;
  /** log through the production logger (redaction included) into this stream */
  logStream?: { write(line: string): void };
  /** test hooks of the thread's parts (compose.ts, ThreadHooks) */
  hooks?: ThreadHooks;
  /** this node's wall clock as the rate limiter sees it (compose.ts ThreadHooks.now) */
  now?: () => number;
}

/**
 * A beforeApply hook to hand to startTestServer({ hooks }) whose behaviour the test sets
 * later (`set`; null: pass).
 */
export function applyHook(): { hooks: ThreadHooks; set: (fn: ((ids: string[]) => Promise<void>) | null) => void } {
  let current: ((ids: string[]) => Promise<void>) | null = null;
  return {
    hooks: { beforeApply: (ids) => (current ? current(ids) : Promise.resolve()) },
    set: (fn) => (current = fn),
  };
}

export async function startTestServer(opts: StartOptions = {}): Promise<TestServer> {
  // the suite measures the server users run: never uWS's slow JavaScript fallback
  const native = checkUwsNative();
  if (!native.native) throw new Error(`uWebSockets.js's native binary is not the one loaded: ${native.reason}`);
  const db = opts.databaseUrl ? { url: opts.databaseUrl, drop: async () => undefined } : await freshDatabase();
  const prefix = opts.redisKeyPrefix ?? 't' + randomBytes(4).toString('hex') + ':';
  const cfg = loadConfig({ ...baseEnv(), DATABASE_URL: db.url, REDIS_KEY_PREFIX: prefix, ...opts.env });
  const thread = buildThread(cfg, 'test', opts.logStream ? createLogger(cfg, {}, opts.logStream) : pino({ level: cfg.logLevel }), { port: 0, host: '127.0.0.1' }, { hooks: { waitForIndex: true, ...opts.hooks, now: opts.now } });
  await thread.start();
  const { app, server } = thread;
  const url = `http://127.0.0.1:${server.port}`;
  // every answer is checked against the served /openapi.json (openapi-check.ts)
  await loadDocument(server.port);
  const req = async (path: string, init: RequestInit = {}) => {
    const r = await fetch(url + path, { redirect: 'manual', ...init });
    await assertResponse(server.port, (init.method ?? 'GET').toUpperCase(), path, r);
    return r;
  };
  return {
    url,
    app,
    server,
    thread,
    cfg,
    req,
    metricsPort: thread.metricsPort(),
    metrics: (path = '/metrics') => fetch(`http://127.0.0.1:${thread.metricsPort() ?? 0}${path}`),
    admin: (method, path, body) =>
      req(path, {
        method,
        headers: { authorization: `Bearer ${ADMIN_KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    async close() {
      await thread.stop({ graceMs: 1000 });
      // the thread's connections are closed: drop its keys through a connection of our own
      const redis = createRedis(cfg);
      await dropPrefix(redis, prefix).catch(() => undefined);
      await redis.quit().catch(() => redis.disconnect());
      await db.drop();
    },
    stop: () => thread.stop({ graceMs: 100 }),
  };
}

async function dropPrefix(r: RedisClient, prefix: string): Promise<void> {
  // in a Redis Cluster SCAN sees one node, and a multi-key UNLINK must stay in one slot:
  // scan every primary, unlink key by key (auto-pipelined)
  const nodes = 'nodes' in r && typeof r.nodes === 'function' ? r.nodes('master') : [r];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', prefix + '*', 'COUNT', 1000);
      cursor = next;
      await Promise.all(keys.map((k) => node.unlink(k)));
    } while (cursor !== '0');
  }
}

/** Register a production service through the admin API; returns the service object. */
export async function registerProduction(t: TestServer, body: Record<string, unknown>): Promise<Svc> {
  const r = await t.admin('POST', '/admin/api/services', body);
  if (r.status !== 201) throw new Error(`register failed: ${r.status} ${await r.text()}`);
  return (await r.json()) as Svc;
}

export async function createSandbox(t: TestServer, name = 'Test Sandbox', location?: { lat: number; lon: number }): Promise<{ uuid: string; apiKey: string; tier: string; rateLimit: number }> {
  const r = await t.req('/sandboxes', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(location ? { name, location } : { name }) });
  if (r.status !== 201) throw new Error(`sandbox create failed: ${r.status} ${await r.text()}`);
  return (await r.json()) as { uuid: string; apiKey: string; tier: string; rateLimit: number };
}
