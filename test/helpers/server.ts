// Test harness: a real server on an ephemeral port, against the real Redis and PostgreSQL
// named by REDIS_URL and DATABASE_URL. Each server gets its own throw-away database (created,
// migrated, dropped afterwards) and its own Redis key prefix, so test files can run in
// parallel against one Redis and one PostgreSQL server. serve(t) is the one way a test starts
// one in this process, torn down with `t`; server-process.ts starts the built server as a
// child process, placed (place()) and torn down (its dropState()) the same way.
import { randomBytes } from 'node:crypto';
import type { Test } from 'tap';
import pino from 'pino';
import { createLogger, type App } from '../../src/hot/app.js';
import { buildThread, type ProcessShared, type Thread, type ThreadHooks } from '../../src/hot/compose.js';
import { loadConfig, type Config } from '../../src/hot/config.js';
import { checkUwsNative } from '../../src/hot/http/native.js';
import { createRedis } from '../../src/hot/redis/client.js';
import type { Server } from '../../src/hot/server.js';
import { freshDatabase } from './database.js';
import { ADMIN_KEY, baseEnv } from './env.js';
import { assertResponse, loadDocument } from './openapi-check.js';
import type { Svc } from './svc.js';
import type { TcpProxy } from './tcp-proxy.js';
import { dropPrefix } from './test-data.js';

/** result-cache entries that outlive any test: only an invalidation message drops one */
export const HOUR_CACHE = { RESULT_CACHE_TTL_MS: '3600000' };

/** Where a test's server runs (in this process or as a child): its database and key prefix. */
export interface Placement {
  /**
   * another node of `on`'s registry: its database and Redis key prefix, which `on`'s teardown
   * drops (this one's only stops it)
   */
  on?: { cfg: Config };
  /** the test's own database (kept); default: a fresh one, dropped at the teardown */
  databaseUrl?: string;
  redisKeyPrefix?: string;
  /**
   * reach Redis and/or PostgreSQL through TCP proxies the test cuts (tcp-proxy.ts, in front
   * of the Redis it chose, and of DATABASE_URL's server); they pass again before the teardown
   */
  through?: { redis?: TcpProxy; postgres?: TcpProxy };
}

export interface Placed {
  /** DATABASE_URL, REDIS_KEY_PREFIX (and REDIS_URL through a proxy) of the server */
  env: Record<string, string>;
  /** the teardown once the server has stopped: its keys and its fresh database dropped */
  dropState(cfg: Config): Promise<void>;
  /** the teardown before the server stops: the proxies pass again */
  mend(): Promise<void>;
}

export async function place(p: Placement): Promise<Placed> {
  const on = p.on?.cfg;
  const db = on || p.databaseUrl ? null : await freshDatabase();
  const databaseUrl = on?.databaseUrl ?? p.databaseUrl ?? db!.url;
  const redisKeyPrefix = on?.redisKeyPrefix ?? p.redisKeyPrefix ?? 't' + randomBytes(4).toString('hex') + ':';
  const env: Record<string, string> = { DATABASE_URL: databaseUrl, REDIS_KEY_PREFIX: redisKeyPrefix };
  const { redis: redisProxy, postgres: pgProxy } = p.through ?? {};
  if (pgProxy) {
    const u = new URL(databaseUrl);
    u.hostname = '127.0.0.1';
    u.port = String(pgProxy.port);
    env.DATABASE_URL = u.toString();
  }
  // the proxy's Redis is a standalone one, even when the suite runs on a cluster
  if (redisProxy) Object.assign(env, { REDIS_URL: `redis://127.0.0.1:${redisProxy.port}`, REDIS_CLUSTER_NODES: '' });
  return {
    env,
    mend: async () => {
      for (const proxy of [redisProxy, pgProxy]) await proxy?.set('pass');
    },
    async dropState(cfg) {
      if (on) return;
      // the server's connections are closed: its keys go through a connection of our own
      const redis = createRedis(cfg);
      await dropPrefix(redis, cfg.redisKeyPrefix).catch(() => undefined);
      await redis.quit().catch(() => redis.disconnect());
      await db?.drop();
    },
  };
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
  /** the teardown, once however often called: stop the thread, drop its keys and fresh database */
  close(): Promise<void>;
  /** stop the thread only, keeping its database and keys (a restart on them follows) */
  stop(): Promise<void>;
}

export interface StartOptions extends Placement {
  env?: Record<string, string>;
  /** log through the production logger (redaction included) into this stream */
  logStream?: { write(line: string): void };
  /** test hooks of the thread's parts (compose.ts, ThreadHooks) */
  hooks?: ThreadHooks;
  /** this node's wall clock as the rate limiter sees it (compose.ts ThreadHooks.now) */
  now?: () => number;
  /** another thread of the same process: its shared counters (compose.ts processShared; with `on`) */
  shared?: ProcessShared;
}

/**
 * A beforeApply hook to hand to serve(t, { hooks }) whose behaviour the test sets later
 * (`set`; null: pass).
 */
export function applyHook(): { hooks: ThreadHooks; set: (fn: ((ids: string[]) => Promise<void>) | null) => void } {
  let current: ((ids: string[]) => Promise<void>) | null = null;
  return {
    hooks: { beforeApply: (ids) => (current ? current(ids) : Promise.resolve()) },
    set: (fn) => (current = fn),
  };
}

/** A server for the test `t` (a test file's root or a subtest), closed when `t` ends. */
export async function serve(t: Test, opts: StartOptions = {}): Promise<TestServer> {
  const s = await startTestServer(opts);
  t.teardown(() => s.close());
  closeClientsAtTheEnd();
  return s;
}

let clientsClosedAtTheEnd = false;

/**
 * Close fetch's pooled keep-alive connections once the test file's root ends: uWS keeps its
 * loop (and so the test process) alive while a client holds an idle connection open, which
 * would add undici's 4 s keep-alive to every test file. (fetch cannot be used afterwards.)
 */
function closeClientsAtTheEnd(): void {
  if (clientsClosedAtTheEnd) return;
  clientsClosedAtTheEnd = true;
  void import('tap').then(({ t: root }) =>
    root.teardown(async () => {
      const d = (globalThis as Record<symbol, unknown>)[Symbol.for('undici.globalDispatcher.1')] as { close?: () => Promise<void> } | undefined;
      await d?.close?.().catch(() => undefined);
    }),
  );
}

/** A server its caller closes: serve(t) in a test; this in a benchmark. */
export async function startTestServer(opts: StartOptions = {}): Promise<TestServer> {
  // the suite measures the server users run: never uWS's slow JavaScript fallback
  const native = checkUwsNative();
  if (!native.native) throw new Error(`uWebSockets.js's native binary is not the one loaded: ${native.reason}`);
  const placed = await place(opts);
  const cfg = loadConfig({ ...baseEnv(), ...placed.env, ...opts.env });
  const thread = buildThread(cfg, 'test', opts.logStream ? createLogger(cfg, {}, opts.logStream) : pino({ level: cfg.logLevel }), { port: 0, host: '127.0.0.1' }, { hooks: { waitForIndex: true, ...opts.hooks, now: opts.now }, shared: opts.shared });
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
  let closed: Promise<void> | undefined;
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
    close: () =>
      (closed ??= (async () => {
        await placed.mend();
        await thread.stop({ graceMs: opts.on ? 100 : 1000 });
        await placed.dropState(cfg);
      })()),
    stop: () => thread.stop({ graceMs: 100 }),
  };
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
