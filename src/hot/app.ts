// The per-thread application context: configuration, connections, the index and the
// collaborators every route uses. One is built per uWS thread (see server.ts).
import pino, { type Logger } from 'pino';
import type { Config } from './config.js';
import { Keys } from './domain/keys.js';
import { Index } from './index/index.js';
import { NearCache } from './index/near.js';
import { Projector } from './index/projector.js';
import { createRedis, type RedisClient } from './redis/client.js';
import { SandboxAuth } from './sandbox/auth.js';
import { createPool, SERVING_TIMEOUTS, type Pool } from './store/pool.js';
import { ResultCache } from './cache.js';
import type { Replacements } from './index/index.js';
import { IntersectPool } from '../workers/pool.js';

export interface AppState {
  /** the index is live and PostgreSQL answered recently */
  ready: boolean;
  shuttingDown: boolean;
  rebuilding: boolean;
  pgUp: boolean;
  redisUp: boolean;
}

export interface App {
  cfg: Config;
  pool: Pool;
  redis: RedisClient;
  keys: Keys;
  index: Index;
  projector: Projector;
  auth: SandboxAuth;
  log: Logger;
  state: AppState;
  version: string;
  cache: ResultCache;
  /** in-process copies of the shared public replacements cache (Redis), per service id */
  replacements: ResultCache<Replacements>;
  /** Piscina pool of heavy intersections (null when disabled) */
  workers: IntersectPool | null;
}

/** Log redaction: no key, cookie or Authorization value ever reaches a log line. */
export const REDACT = [
  'authorization',
  'cookie',
  'apiKey',
  'req.authorization',
  'req.cookie',
  'req.headers.authorization',
  'req.headers.cookie',
  '*.authorization',
  '*.cookie',
  '*.apiKey',
  '*.key',
];

/** `dest`: where lines go (default stdout); tests pass a stream they read back. */
export function createLogger(cfg: Config, bindings: Record<string, unknown> = {}, dest?: pino.DestinationStream): Logger {
  const opts = { level: cfg.logLevel, redact: { paths: REDACT, censor: '[redacted]' }, base: { pid: process.pid, ...bindings } };
  return dest ? pino(opts, dest) : pino(opts);
}

export function createApp(cfg: Config, version: string, log = createLogger(cfg)): App {
  const pool = createPool(cfg.databaseUrl, 10, SERVING_TIMEOUTS);
  const redis = createRedis(cfg);
  const keys = new Keys(cfg.redisKeyPrefix);
  const near = new NearCache(cfg.nearCacheBytes);
  const state: AppState = { ready: false, shuttingDown: false, rebuilding: false, pgUp: false, redisUp: false };
  const index = new Index(redis, keys, near, () => state.ready);
  const intersectPool = cfg.heavyIntersectionThreshold > 0 ? new IntersectPool(cfg) : null;
  index.pool = intersectPool;
  index.heavyThreshold = cfg.heavyIntersectionThreshold;
  const cache = new ResultCache(cfg.resultCacheEntries, cfg.resultCacheTtlMs, cfg.resultCacheBytes);
  // (a small share of the budget: one entry per deprecated service that is being looked up)
  const replacements = new ResultCache<Replacements>(cfg.resultCacheEntries, cfg.resultCacheTtlMs, cfg.resultCacheBytes / 8, (r) => 2 * (r.body.length + r.etag.length + r.hdr.length));
  const projector = new Projector(pool, redis, keys);
  const app: App = {
    cfg,
    pool,
    redis,
    keys,
    index,
    projector,
    auth: new SandboxAuth(pool, redis, keys, cfg.tiers, cfg.rateCountFlushMs),
    log,
    state,
    version,
    cache,
    replacements,
    workers: intersectPool,
  };
  projector.onVersion = (base, ver) => near.require(base, ver);
  projector.onApplied = (namespaces) => {
    // this thread at once; every other thread and node through Redis pub/sub
    for (const ns of namespaces) {
      invalidateCaches(app, ns);
      redis.publish(keys.invalidationChannel(), ns).catch(() => undefined);
    }
  };
  return app;
}

export async function closeApp(app: App): Promise<void> {
  app.projector.stop();
  app.auth.flush(); // requests answered without Redis are recorded before it closes
  await Promise.allSettled([app.pool.end(), app.redis.quit(), app.workers?.close()]);
}

/** Drop what the in-process caches hold for a namespace (a write was applied there). */
export function invalidateCaches(app: App, ns: string): void {
  app.cache.invalidate(ns);
  app.replacements.invalidate(ns);
}

/** Drop everything the in-process caches hold (invalidations may have been missed). */
export function clearCaches(app: App): void {
  app.index.near?.clear();
  app.cache.clear();
  app.replacements.clear();
}
