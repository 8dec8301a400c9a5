// The ioredis connection (standalone, or cluster when REDIS_CLUSTER_NODES is set) with every
// Lua script of redis/ defined once as a command (model: BullMQ src/commands).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis, Cluster, type RedisOptions } from 'ioredis';
import type { Config } from '../config.js';
import { ROOT } from '../paths.js';

export type RedisClient = Redis | Cluster;

/** Script results are typed where they are used (index/search.ts, index/projector.ts). */
type Cmd = (...args: (string | number)[]) => Promise<unknown>;
declare module 'ioredis' {
  interface RedisCommander {
    applyService: Cmd;
    search: Cmd;
    searchBuffer: Cmd;
    nearLoad: Cmd;
    getService: Cmd;
    replacements: Cmd;
    rateLimit: Cmd;
    rateCount: Cmd;
    pollData: Cmd;
    delIfEqual: Cmd;
    pexpireIfEqual: Cmd;
  }
}

export const SCRIPTS_DIR = join(ROOT, 'redis');

function camel(name: string): string {
  return name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

/** name-<numKeys>.lua has a fixed key count; name.lua takes numKeys as its first argument. */
export function loadScripts(client: RedisClient): string[] {
  const names: string[] = [];
  for (const f of readdirSync(SCRIPTS_DIR).filter((x) => x.endsWith('.lua')).sort()) {
    const m = /^([a-z-]+?)(?:-(\d+))?\.lua$/.exec(f);
    if (!m) continue;
    const lua = readFileSync(join(SCRIPTS_DIR, f), 'utf8');
    const numberOfKeys = m[2] === undefined ? undefined : Number(m[2]);
    client.defineCommand(camel(m[1]!), numberOfKeys === undefined ? { lua } : { lua, numberOfKeys });
    names.push(camel(m[1]!));
  }
  return names;
}

// Replies that mean "this Redis cannot serve right now" (loading a dataset, cluster
// reconfiguring, a replica promoted), as opposed to a bug in a script or a command.
const UNAVAILABLE_REPLY = /^(LOADING|CLUSTERDOWN|TRYAGAIN|MASTERDOWN|READONLY|BUSY) /;
const UNAVAILABLE_MESSAGE = /^(Connection is closed\.|Command timed out|Stream isn't writeable|None of startup nodes is available|Failed to refresh slots cache|Cluster isn't ready|Reached the max retries per request limit)/;

/** Is `err` ioredis saying Redis is unreachable or not serving (→ 503, not 500)? */
export function isRedisUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const e = err as Error & { code?: string };
  if (e.name === 'MaxRetriesPerRequestError' || e.name === 'ClusterAllFailedError') return true;
  if (e.code && ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTCONN'].includes(e.code)) return true;
  return UNAVAILABLE_MESSAGE.test(e.message) || (e.name === 'ReplyError' && UNAVAILABLE_REPLY.test(e.message));
}

export function createRedis(cfg: Config, extra: RedisOptions = {}): RedisClient {
  const opts: RedisOptions = {
    // fail fast while Redis is away instead of queueing requests without bound: a command
    // waits for at most two reconnection attempts (ioredis flushes its offline queue with an
    // error every maxRetriesPerRequest + 1 attempts), and never longer than commandTimeout
    // (which counts from when the command was issued, offline queue included)
    maxRetriesPerRequest: 1,
    enableOfflineQueue: true,
    connectTimeout: 2000,
    commandTimeout: 5000,
    retryStrategy: (times) => Math.min(times * 100, 1000),
    enableAutoPipelining: true,
    lazyConnect: false,
    ...extra,
  };
  let client: RedisClient;
  if (cfg.redisClusterNodes.length) {
    client = new Cluster(
      cfg.redisClusterNodes.map((n) => {
        const [host, port] = n.split(':');
        return { host: host!, port: Number(port) };
      }),
      { redisOptions: opts, enableAutoPipelining: true, scaleReads: 'master' },
    );
  } else {
    client = new Redis(cfg.redisUrl, opts);
  }
  client.on('error', () => {
    /* reported through readiness and request errors; reconnects by itself */
  });
  // While the connection is down, a command fails at once (→ 503 with Retry-After) instead of
  // waiting in the offline queue through reconnection attempts; while it is up, and at
  // start-up before the first connection, commands queue as usual.
  const live = client.options as { enableOfflineQueue?: boolean };
  client.on('ready', () => (live.enableOfflineQueue = true));
  client.on('close', () => (live.enableOfflineQueue = false));
  // a duplicate (the invalidation subscriber) copies the options as they are at that moment
  // but not these listeners: it starts queueing, so its SUBSCRIBE waits for its connection
  const duplicate = client.duplicate.bind(client) as (...a: unknown[]) => RedisClient;
  (client as { duplicate: unknown }).duplicate = (...a: unknown[]) => {
    const d = duplicate(...a);
    (d.options as { enableOfflineQueue?: boolean }).enableOfflineQueue = true;
    return d;
  };
  loadScripts(client);
  return client;
}
