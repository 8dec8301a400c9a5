// What every route and background duty of a serving thread reaches: the thread's parts
// (configuration, connections, the index, caches, the change hub) and its shared state.
// The parts are built and started in one place, compose.ts (buildThread); this module
// holds only their types and the logger. Features never import it: each names the parts it
// needs in a context type of its own (search/answer.ts SearchContext, ...), which App meets.
import pino, { type Logger } from 'pino';
import type { Config } from './config.js';
import type { ChangeHub } from './changes/index.js';
import type { Keys } from './domain/keys.js';
import type { Index, Replacements, ResultCache } from './search/index.js';
import type { Projector } from './registry/index.js';
import type { MetricsAggregation } from './metrics/threads.js';
import type { AppState } from './readiness/index.js';
import type { RedisClient } from './redis/client.js';
import type { PendingSandboxes, SandboxAuth } from './sandboxes/index.js';
import type { HeartbeatTokenMemory, LeaseSweeper, Liveness } from './liveness/index.js';
import type { Pool } from './pg/pool.js';
import type { GroupCommitter } from './writes/index.js';
import type { HeldRequests } from './held/index.js';
import type { IntersectPool } from '../workers/pool.js';

export type { AppState };

export interface App {
  cfg: Config;
  /** PostgreSQL (the serving pool) */
  pg: Pool;
  redis: RedisClient;
  keys: Keys;
  index: Index;
  projector: Projector;
  /** group commit of registrations (writes/group-commit.ts) */
  commits: GroupCommitter;
  auth: SandboxAuth;
  /** whether sandbox metadata waits in the outbox (creations that missed Redis, the projector's sweeps) */
  pendingSandboxes: PendingSandboxes;
  log: Logger;
  state: AppState;
  version: string;
  cache: ResultCache;
  /** in-process copies of the shared public replacements cache (Redis), per service id */
  replacements: ResultCache<Replacements>;
  /** Piscina pool of heavy intersections (null when disabled) */
  intersectPool: IntersectPool | null;
  /** the change feed's streams of this thread */
  hub: ChangeHub;
  /** requests held until their answer changes (Prefer: wait), this thread's */
  held: HeldRequests;
  /** this thread's side of GET /metrics (merges every serving thread) */
  metrics: MetricsAggregation;
  /** leases and heartbeats (its clock: `liveness.now`) */
  liveness: Liveness;
  /** this thread's lease sweeper (one node sweeps each shard at a time) */
  sweeper: LeaseSweeper;
  /** this thread's memory of heartbeat tokens Redis accepted or refused */
  heartbeatTokens: HeartbeatTokenMemory;
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
