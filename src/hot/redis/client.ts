// The ioredis connection (standalone, or cluster when REDIS_CLUSTER_NODES is set) with every
// Lua script of redis/ defined once as a command (model: BullMQ src/commands).
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis, Cluster, type RedisOptions } from 'ioredis';
import type { Config } from '../config.js';
import { ScriptLine, type LineTarget, type ScriptLineOptions } from './script-line.js';
import { capabilityLua, memberRuleLua } from '../domain/dimensions.js';
import { docCodecLua } from '../domain/doc-codec.js';
import { ROOT } from '../paths.js';

export type RedisClient = Redis | Cluster;

/** Script replies are `unknown` here: redis/replies.ts turns them into typed values (one place). */
type Cmd = (...args: (string | number | Buffer)[]) => Promise<unknown>;
declare module 'ioredis' {
  interface RedisCommander {
    applyService: Cmd;
    applyServices: Cmd;
    indexPage: Cmd;
    indexSets: Cmd;
    applySandbox: Cmd;
    count: Cmd;
    search: Cmd;
    searchBuffer: Cmd;
    nearLoad: Cmd;
    nearLoadBuffer: Cmd;
    getService: Cmd;
    replacements: Cmd;
    rateLimit: Cmd;
    rateAhead: Cmd;
    rateCount: Cmd;
    pollData: Cmd;
    delIfEqual: Cmd;
    pexpireIfEqual: Cmd;
    leaseApply: Cmd;
    heartbeat: Cmd;
    heartbeats: Cmd;
    leaseSweep: Cmd;
    healthFlip: Cmd;
    leaseSettle: Cmd;
    catalog: Cmd;
    capabilityTombstones: Cmd;
  }
}

export const SCRIPTS_DIR = join(ROOT, 'redis');

function camel(name: string): string {
  return name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

/** Included code generated from TypeScript: the member rule of the search dimensions, the capability set's prefix, the documents' stored form. */
const GENERATED: Readonly<Record<string, () => string>> = { 'dimensions.lua': memberRuleLua, 'capability.lua': capabilityLua, 'doc-codec.lua': docCodecLua };

/**
 * A script's text with each `--@include <file>` line replaced by redis/lib/<file> (code
 * several scripts share: lib/buckets.lua; Redis has no include of its own), or by the code
 * GENERATED under that name.
 */
export function scriptText(file: string): string {
  return readFileSync(join(SCRIPTS_DIR, file), 'utf8').replace(/^--@include ([a-z-]+\.lua)$/gm, (_, lib: string) =>
    Object.hasOwn(GENERATED, lib) ? GENERATED[lib]!() : readFileSync(join(SCRIPTS_DIR, 'lib', lib), 'utf8'),
  );
}

/**
 * A script file as a command: name-<numKeys>.lua has a fixed key count; name.lua takes
 * numKeys as its first argument (numberOfKeys undefined). Null for a file of another name.
 */
function scriptCommand(file: string): { name: string; lua: string; numberOfKeys: number | undefined } | null {
  const m = /^([a-z-]+?)(?:-(\d+))?\.lua$/.exec(file);
  if (!m) return null;
  return { name: camel(m[1]!), lua: scriptText(file), numberOfKeys: m[2] === undefined ? undefined : Number(m[2]) };
}

/** A script's text and SHA1, for a call sent on a ScriptLine (EVALSHA, EVAL after NOSCRIPT). */
export interface ScriptSource {
  readonly lua: string;
  readonly sha: string;
}

/** A script's SHA1, as Redis names it for EVALSHA. */
function scriptSha(lua: string): string {
  return createHash('sha1').update(lua).digest('hex');
}

/** The source of the script file `file` of redis/ (as defineCommand() loads it). */
export function scriptSource(file: string): ScriptSource {
  const lua = scriptCommand(file)!.lua;
  return { lua, sha: scriptSha(lua) };
}

/**
 * A lean connection for the heartbeat call (redis/script-line.ts) to the server of a
 * standalone client, as it connects (host or Unix socket, TLS, user, password, database);
 * null for a cluster client (the heartbeat batch keeps ioredis there). Not connected yet.
 */
export function scriptLineFor(client: RedisClient, o: ScriptLineOptions = {}): ScriptLine | null {
  if (client instanceof Cluster) return null;
  const c = client.options;
  const target: LineTarget = { host: c.host, port: c.port, path: c.path, username: c.username, password: c.password, db: c.db };
  if (c.tls) target.tls = c.tls;
  return new ScriptLine(target, { timeoutMs: c.commandTimeout ?? 5000, connectTimeoutMs: c.connectTimeout ?? 2000, name: 'registry-heartbeats', ...o });
}

/**
 * Second names of a script's command, for calls of it sent another way (DIRECT_COMMANDS):
 * rateAhead is rate-limit's, for a sandbox's next batch asked for ahead (ratelimit/admission.ts),
 * which no request waits on and which comes once per batch, not once per request.
 */
export const SCRIPT_ALIASES: Readonly<Record<string, string>> = { rateAhead: 'rateLimit' };

export function loadScripts(client: RedisClient): string[] {
  const names: string[] = [];
  for (const f of readdirSync(SCRIPTS_DIR).filter((x) => x.endsWith('.lua')).sort()) {
    const s = scriptCommand(f);
    if (!s) continue;
    const def = s.numberOfKeys === undefined ? { lua: s.lua } : { lua: s.lua, numberOfKeys: s.numberOfKeys };
    for (const name of [s.name, ...Object.keys(SCRIPT_ALIASES).filter((a) => SCRIPT_ALIASES[a] === s.name)]) {
      client.defineCommand(name, def);
      names.push(name);
    }
  }
  return names;
}

/**
 * Connections to read-only replicas for the index's pure reads (LiveIndex.read()): those of
 * REDIS_URL (REDIS_REPLICA_URLS), or in cluster mode, with REDIS_CLUSTER_REPLICA_READS, one
 * cluster client that sends them to the replicas of each key's primary. Only scripts that
 * never write are called on them. None by default.
 */
export function createReplicas(cfg: Config): RedisClient[] {
  if (cfg.redisClusterNodes.length) return cfg.redisClusterReplicaReads ? [createClusterReader(cfg)] : [];
  return cfg.redisReplicaUrls.map((url) => createRedis({ ...cfg, redisUrl: url }));
}

/**
 * WAIT for the replicas to have what `writer` wrote, at most `ms`: standalone, on its one
 * connection for the `replicas` of REDIS_REPLICA_URLS; in cluster mode on each primary's
 * connection of `writer` for that primary's replicas (from the cluster's slot map; WAIT on
 * a primary this client wrote nothing to returns at once).
 */
export function replicaWaiter(writer: RedisClient, replicas: number, ms: number): () => Promise<unknown> {
  if (!(writer instanceof Cluster)) return () => writer.wait(replicas, ms);
  return () => {
    const counts = new Map<string, number>();
    for (const nodes of writer.slots) if (nodes?.length) counts.set(nodes[0]!, nodes.length - 1);
    return Promise.all(
      writer.nodes('master').map((node) => {
        const n = counts.get(`${node.options.host}:${node.options.port}`) ?? 0;
        return n > 0 ? node.wait(n, ms) : null;
      }),
    );
  };
}

/** The scripts that never write (redis/README.md): the ones a replica may run. */
const READ_ONLY_SCRIPTS = ['search.lua', 'near-load-2.lua', 'get-service-1.lua'];

/**
 * A cluster client whose read-only scripts go to replicas (scaleReads "slave"; a slot
 * without a replica is read from its primary). A cluster replica serves only commands
 * flagged read-only, and EVALSHA is not (it may write): these scripts are sent as
 * EVALSHA_RO, and as EVAL_RO with their text when the replica does not have them yet
 * (NOSCRIPT); Redis refuses any write inside them. No auto-pipelining: ioredis would group
 * those calls by the slot of their first argument, the script's SHA, not of their keys.
 */
function createClusterReader(cfg: Config): RedisClient {
  const c = createRedis(cfg, { enableAutoPipelining: false }, { scaleReads: 'slave' });
  for (const f of READ_ONLY_SCRIPTS) {
    const { name, lua, numberOfKeys } = scriptCommand(f)!;
    const sha = scriptSha(lua);
    const keys = numberOfKeys === undefined ? [] : [numberOfKeys];
    for (const buffer of [false, true]) {
      const send = (buffer ? c.callBuffer : c.call).bind(c) as (...a: unknown[]) => Promise<unknown>;
      const run = async (...args: (string | number | Buffer)[]) => {
        try {
          return await send('evalsha_ro', sha, ...keys, ...args);
        } catch (e) {
          if (!(e instanceof Error) || !e.message.includes('NOSCRIPT')) throw e;
          return send('eval_ro', lua, ...keys, ...args);
        }
      };
      Object.assign(c, { [name + (buffer ? 'Buffer' : '')]: run });
    }
  }
  return c;
}

/**
 * Begin connecting a client made by createRedis() (lazy), without waiting: commands queue
 * until it is up, and a Redis that is away is retried (retryStrategy) as after a loss.
 */
export function connectRedis(client: RedisClient): void {
  if (client.status === 'wait') client.connect().catch(() => undefined);
}

/** Commands ioredis sends at once, without its auto-pipeline (createRedis). */
export const DIRECT_COMMANDS: readonly string[] = ['heartbeat', 'heartbeats', 'rateCount', 'rateAhead'];

export function createRedis(cfg: Config, extra: RedisOptions = {}, cluster: { scaleReads?: 'master' | 'slave' } = {}): RedisClient {
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
    // written at once, not held by the auto-pipeline for one more event-loop turn: these are
    // batched by the caller already (a turn's heartbeats in one script call, a turn's rate
    // records in one call per sandbox, a batch of admissions asked for ahead), and a
    // heartbeat waits for its reply. A pipeline is an object of its own, worth building only
    // when it carries many commands.
    // Ordering: a poll flushes its rate records before it sends pollData, so they go first.
    // (docs/decisions/heartbeat-batches.md)
    autoPipeliningIgnoredCommands: [...DIRECT_COMMANDS],
    // constructing opens nothing: connect() does (compose.ts, the 'redis' parts), or the
    // first command of a client used outside a thread (CLI, tests, the pool's workers)
    lazyConnect: true,
    ...extra,
  };
  let client: RedisClient;
  if (cfg.redisClusterNodes.length) {
    client = new Cluster(
      cfg.redisClusterNodes.map((n) => {
        const [host, port] = n.split(':');
        return { host: host!, port: Number(port) };
      }),
      // search.lua takes a variable number of keys, so its first argument is the key count:
      // ioredis's auto-pipeline would group it by the slot of that number and then refuse
      // ("All keys in the pipeline should belong to the same slots allocation group") when
      // another namespace's command shares the tick. It is sent on its own, routed by its keys.
      { redisOptions: opts, lazyConnect: opts.lazyConnect, enableAutoPipelining: extra.enableAutoPipelining ?? true, autoPipeliningIgnoredCommands: ['search', ...DIRECT_COMMANDS], scaleReads: cluster.scaleReads ?? 'master' },
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
