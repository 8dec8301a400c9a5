// The composition root of a serving thread: buildThread() constructs every part with its
// dependencies passed in, and lists the parts in the order they start; stop() runs the
// same list in reverse (the way fastify names onReady/onClose). Constructing opens nothing
// (no connection, no thread): each part opens in its start(), in this order. main.ts (the
// process root: threads, signals) and the tests (test/helpers/server.ts) build their threads
// here.
//
// This is the one module of src/hot that imports src/admin: it hands the admin routes to
// the HTTP server (the room rule, docs/decisions/rooms.md).
import type { Logger } from 'pino';
import { registerAdmin } from '../admin/routes.js';
import { IntersectPool } from '../workers/pool.js';
import type { App } from './app.js';
import type { Config } from './config.js';
import { Keys, PRODUCTION } from './domain/keys.js';
import { countBackendError, sampleBackends } from './metrics/metrics.js';
import { startMetricsListener, type MetricsListener } from './metrics/listener.js';
import { MetricsAggregation } from './metrics/threads.js';
import { createPool, SERVING_TIMEOUTS } from './pg/pool.js';
import { connectRedis, createRedis, createReplicas, replicaWaiter, scriptLineFor } from './redis/client.js';
import { createServer, type Server, type ServerOptions } from './server.js';
// the features, lowest first (eslint.config.js FEATURES)
import { sampleRateLimit } from './ratelimit/index.js';
import { PendingSandboxes, SandboxAuth } from './sandboxes/index.js';
import { countProjectorFailure, Projector, sampleOutbox } from './registry/index.js';
import { HeartbeatTokenMemory, LeaseSweeper, Liveness } from './liveness/index.js';
import { GroupCommitter } from './writes/index.js';
import { Index, InvalidationListener, NearCache, NearVersionCheck, ResultCache, sampleSearch, stringBytes, type Caches, type Replacements } from './search/index.js';
import { ChangeHub, StreamShares, streamSharesBuffer } from './changes/index.js';
import { AppState, createWatchers } from './readiness/index.js';
import { createDnsServer, type DnsServer } from './discovery/index.js';

/** A named part of a thread: started in list order, stopped in reverse. */
export interface Part {
  readonly name: string;
  start(): Promise<unknown> | void;
  stop(): Promise<unknown> | void;
}

export interface Drain {
  /** how long in-flight requests may take to finish */
  graceMs: number;
  /** how long the port stays open answering /readyz 503 before it stops accepting */
  listenMs: number;
}

export interface Thread {
  app: App;
  server: Server;
  /** in start order */
  parts: readonly Part[];
  /** start every part in order; the last one opens the port */
  start(): Promise<void>;
  /** stop the started parts in reverse order: drain HTTP first, close the connections last */
  stop(drain?: Partial<Drain>): Promise<void>;
  /** port of the process's /metrics listener once started; null when this thread has none */
  metricsPort(): number | null;
  /** port of the process's DNS server once started; null when this thread has none (or DNS_PORT=off) */
  dnsPort(): number | null;
}

export interface ListenAt {
  port: number;
  host: string;
  /** this thread serves the process's /metrics listener (main.ts: thread 0; default true) */
  metrics?: boolean;
  /** this thread serves the process's DNS server, unless DNS_PORT=off (main.ts: thread 0; default true) */
  dns?: boolean;
  /** with port 0: other threads will listen on the port this one gets (main.ts, WORKERS > 1) */
  sharePort?: boolean;
}

/**
 * A thread's share of a process-wide byte budget (NEAR_CACHE_MB, RESULT_CACHE_MB): an even
 * split, fixed at start. Every thread holds its own copy of what it serves (the kernel spreads
 * connections evenly over the threads, so their working sets are alike), and each evicts only
 * its own entries: a shared counter would let one thread's idle entries starve another's, and
 * the sum of the shares never passes the total (docs/decisions/memory-budgets.md).
 */
export function threadShare(totalBytes: number, threads: number): number {
  return Math.floor(totalBytes / Math.max(1, threads));
}

/** Test hooks (constructor options of the parts they reach, never mutable fields). */
export interface ThreadHooks {
  /** Projector: awaited between a sync having its states and applying them (projector.ts) */
  beforeApply?: (ids: string[]) => Promise<void>;
  /** this node's wall clock, as the sandbox rate limiter sees it */
  now?: () => number;
  /** the clock of lease deadlines (ms): tests advance it instead of sleeping through a ttl */
  leaseNow?: () => number;
  /** this thread's sweep-lock token (tests play two nodes on one Redis) */
  sweeperOwner?: string;
  /** false: no periodic lease sweep (tests call app.sweeper.sweepOnce()) */
  sweep?: boolean;
  /**
   * Sees each near-cache delta this thread receives before the near cache does; `apply`
   * passes it on (tests lose deltas on purpose by not calling it)
   */
  delta?: (msg: string, apply: (msg: string) => void) => void;
  /** hears what reading each request's body cost (RouteOptions.bodyHooks) */
  body?: ServerOptions['bodyHooks'];
}

/**
 * What the uWS threads of one process share (main.ts creates it once and hands it to every
 * thread in workerData; a thread built alone gets its own): counters a cap per process
 * needs, on shared memory.
 */
export interface ProcessShared {
  /** open change streams, in total and per client address (changes/shares.ts) */
  changeStreams: SharedArrayBuffer;
}

export function processShared(): ProcessShared {
  return { changeStreams: streamSharesBuffer() };
}

export interface ThreadOptions {
  /** the process's shared counters (main.ts); default: this thread's own */
  shared?: ProcessShared;
  /** tests only */
  hooks?: ThreadHooks;
}

export function buildThread(cfg: Config, version: string, log: Logger, at: ListenAt = { port: cfg.port, host: cfg.host }, opts: ThreadOptions = {}): Thread {
  const hooks = opts.hooks ?? {};
  // connections
  const pg = createPool(cfg.databaseUrl, 10, SERVING_TIMEOUTS);
  const redis = createRedis(cfg);
  const keys = new Keys(cfg.redisKeyPrefix);
  const intersectPool = cfg.heavyIntersectionThreshold > 0 ? new IntersectPool(cfg) : null;

  // in-process caches (the replacements get a small share of the budget: one entry per
  // deprecated service that is being looked up: an eighth of RESULT_CACHE_MB, the searches the
  // rest). Their byte budgets are process totals,
  // split evenly over the uWS threads (threadShare)
  const resultBytes = threadShare(cfg.resultCacheBytes, cfg.uwsThreads);
  const caches: Caches = {
    cache: new ResultCache(cfg.resultCacheEntries, cfg.resultCacheTtlMs, resultBytes - Math.floor(resultBytes / 8)),
    replacements: new ResultCache<Replacements>(cfg.resultCacheEntries, cfg.resultCacheTtlMs, Math.floor(resultBytes / 8), (r) => 2 * (stringBytes(r.body) + stringBytes(r.etag) + stringBytes(r.hdr))),
  };

  const state = new AppState();
  const pendingSandboxes = new PendingSandboxes();

  // the index (with this thread's near cache of its sets and documents, answering only
  // while readiness holds), the writes' path into it, sandbox keys and rate limits, the
  // change feed. Read-only replicas (REDIS_REPLICA_URLS) serve the index's pure reads; with
  // them, index writes go through a primary connection of their own: the WAIT after them
  // blocks that connection alone, never this thread's searches and counters
  const replicas = createReplicas(cfg);
  const writer = replicas.length ? createRedis(cfg) : redis;
  const near = new NearCache(threadShare(cfg.nearCacheBytes, cfg.uwsThreads));
  const index = new Index(redis, keys, intersectPool, cfg.heavyIntersectionThreshold, replicas, near, () => state.ready);
  const replicaWait = replicas.length && cfg.redisReplicaWaitMs > 0 ? replicaWaiter(writer, replicas.length, cfg.redisReplicaWaitMs) : null;
  // committed writes reach the index here; what follows them subscribes to projector.applied
  // (search/: the caches and the near cache) or attaches to it (liveness/: leases)
  const projector = new Projector(pg, writer, keys, cfg.tiers, log, replicaWait, { beforeApply: hooks.beforeApply, pendingSandboxes });
  const leaseNow = hooks.leaseNow ?? Date.now;
  // the turn's heartbeat call on a connection of its own (a standalone Redis; REDIS_HEARTBEAT_LINE)
  const heartbeatLine = cfg.redisHeartbeatLine ? scriptLineFor(writer, { onError: (err) => log.error({ err: String(err) }, 'a heartbeat callback threw') }) : null;
  const liveness: Liveness = new Liveness(pg, writer, keys, projector, { now: leaseNow, indexReady: () => state.ready, line: heartbeatLine });
  const heartbeatTokens = new HeartbeatTokenMemory(threadShare(cfg.heartbeatTokenCacheBytes, cfg.uwsThreads), leaseNow);
  const sweeper = new LeaseSweeper(pg, writer, keys, projector, log, { intervalMs: cfg.leaseSweepMs, lockMs: cfg.leaseLockMs, batch: cfg.leaseSweepBatch, parallel: cfg.leaseSweepParallel, now: leaseNow, owner: hooks.sweeperOwner });
  // each batch's registrations are applied to the index together, before they are answered
  const commits = new GroupCommitter(pg, { windowMs: cfg.groupCommitWindowMs, maxBatch: cfg.groupCommitMaxBatch, concurrency: cfg.groupCommitConcurrency }, (done) =>
    projector.applyCommitted(done),
  );
  const auth = new SandboxAuth(pg, redis, keys, cfg.tiers, {
    flushMs: cfg.rateCountFlushMs,
    now: hooks.now,
    // a fixed share of the process's budget (threads do not share their maps)
    keyMapBytes: threadShare(cfg.sandboxKeyCacheBytes, cfg.uwsThreads),
    // complete: a live generation known, no rebuild here, no sandbox waiting in the outbox
    // (the marker is then checked beside each miss, in case Redis was emptied since)
    indexMarker: () => (index.gen && !state.rebuilding && !pendingSandboxes.waiting ? keys.ver(PRODUCTION, index.gen) : null),
    // a turn's rate records ride in its heartbeat call on a standalone Redis (heartbeats.lua)
    carried: () => liveness.batch.carries(),
  });
  liveness.batch.carry(auth.records);
  const hub = new ChangeHub(pg, cfg, new StreamShares(cfg.changesMaxStreams, cfg.changesStreamsPerAddress, (opts.shared ?? processShared()).changeStreams));
  const invalidation = new InvalidationListener(redis, keys, caches, {
    tierChanged: (uuid) => auth.dropAdmissions(uuid),
    // a rebuild made a new generation live: read it at once rather than at the next round
    // of the readiness watcher (which also reads it, should this read fail)
    generation: () => void index.refreshGen().catch(() => undefined),
    failed: (err, what) => {
      countProjectorFailure('invalidate');
      log.warn({ err: String(err) }, what);
    },
    delta: hooks.delta ? (msg) => hooks.delta!(msg, (m) => near.onDelta(m)) : (msg) => near.onDelta(msg),
    subscribed: (live) => (live ? near.resume() : near.pause()),
    cleared: () => near.clear(),
  });
  invalidation.followWrites(projector.applied, near);

  // a lost final delta of a namespace: found by comparing versions with Redis (near-sets.ts)
  const nearCheck = new NearVersionCheck(near, cfg.nearCheckMs, async (bases) => {
    const vs = await Promise.all(bases.map((b) => redis.get(keys.verAt(b))));
    return vs.map((v) => (v === null ? null : Number(v)));
  });

  // what this thread's metrics mirror, sampled before each scrape (each feature's metrics module)
  const metrics = new MetricsAggregation(cfg.uwsThreads, [
    sampleBackends(() => ({ postgres: state.pgUp, redis: state.redisUp })),
    sampleOutbox(() => projector.lag()),
    sampleSearch({
      intersectPool: () => intersectPool?.stats() ?? null,
      resultCache: () => ({ hits: caches.cache.hits, misses: caches.cache.misses, shared: caches.cache.flights.joined, bytes: caches.cache.bytes + caches.replacements.bytes }),
      nearCache: () => (near.enabled ? { ...near.stats, bytes: near.bytes } : null),
    }),
    sampleRateLimit(() => auth.stats),
  ]);

  const app: App = { cfg, pg, redis, keys, index, projector, commits, auth, pendingSandboxes, hub, metrics, log, state, version, ...caches, intersectPool, liveness, sweeper, heartbeatTokens };
  const watchers = createWatchers(app);
  const server = createServer(app, { port: at.port, host: at.host, sharePort: at.sharePort, routes: [registerAdmin], bodyHooks: hooks.body });
  let metricsListener: MetricsListener | null = null;
  const serveMetrics = (at.metrics ?? true) && cfg.metricsEnabled;
  // the DNS server answers from this thread's index and near cache (discovery/dns/source.ts)
  const dns: DnsServer | null = at.dns ?? true ? createDnsServer(cfg, index, caches.cache) : null;

  let drain: Drain = { graceMs: cfg.shutdownGraceMs, listenMs: 0 };
  const parts: Part[] = [
    { name: 'postgres', start: () => void pg.on('error', () => countBackendError('postgres', 'connection')), stop: () => pg.end() },
    {
      name: 'redis',
      start: () => {
        redis.on('error', () => countBackendError('redis', 'connection'));
        connectRedis(redis);
      },
      // requests answered without Redis (leased, refused locally) are recorded before it closes
      stop: () => (auth.records.flush(), redis.quit()),
    },
    // replicas and the writer hold nothing worth a QUIT (which would wait for one that is away)
    { name: 'redis-replicas', start: () => [...replicas, ...(writer !== redis ? [writer] : [])].forEach(connectRedis), stop: () => [...replicas, ...(writer !== redis ? [writer] : [])].forEach((r) => r.disconnect()) },
    // after the HTTP side stopped (parts stop in reverse): calls in flight are answered first
    { name: 'heartbeat-line', start: () => heartbeatLine?.start(), stop: () => heartbeatLine?.close() },
    { name: 'intersect-pool', start: () => intersectPool?.start(), stop: () => intersectPool?.close() },
    { name: 'metrics', start: () => metrics.start(), stop: () => metrics.stop() },
    // now, not at the first stream: it also prunes expired change events
    { name: 'change-hub', start: () => hub.start(), stop: () => hub.close() },
    // (the outbox rows of writes applied since the last ack flush go now: the sweeper of the
    // next start would only apply them again)
    { name: 'outbox-sweeper', start: () => projector.start(cfg.outboxSweepMs), stop: () => (projector.stop(), projector.flushAcks()) },
    { name: 'invalidation', start: () => invalidation.start(), stop: () => invalidation.stop() },
    { name: 'near-check', start: () => nearCheck.start(), stop: () => nearCheck.stop() },
    { name: 'lease-sweeper', start: () => (hooks.sweep ?? true ? sweeper.start() : undefined), stop: () => sweeper.stop() },
    // the first round (and the index rebuild it may start) completes before the port opens
    { name: 'readiness', start: () => watchers.start(), stop: () => watchers.stop() },
    {
      name: 'metrics-listener',
      start: async () => {
        if (!serveMetrics) return;
        try {
          metricsListener = await startMetricsListener(cfg.metricsHost, cfg.metricsPort, () => metrics.scrape());
        } catch (err) {
          throw new Error(`cannot listen for /metrics on ${cfg.metricsHost}:${cfg.metricsPort}: ${(err as Error).message}`, { cause: err });
        }
      },
      stop: () => metricsListener?.close(),
    },
    { name: 'dns', start: () => dns?.start().catch((err: Error) => Promise.reject(new Error(`cannot serve DNS on ${cfg.dnsHost}:${cfg.dnsPort}: ${err.message}`, { cause: err }))), stop: () => dns?.stop() },
    { name: 'http', start: () => server.listen(), stop: () => server.close(drain.graceMs, drain.listenMs) },
  ];

  let started = 0;
  return {
    app,
    server,
    parts,
    metricsPort: () => metricsListener?.port ?? null,
    dnsPort: () => (dns && dns.port ? dns.port : null),
    async start() {
      for (const p of parts) {
        await p.start();
        started++;
      }
    },
    async stop(d = {}) {
      drain = { ...drain, ...d };
      while (started > 0) {
        const p = parts[--started]!;
        try {
          await p.stop();
        } catch (err) {
          log.warn({ part: p.name, err: String(err) }, 'stopping a part failed');
        }
      }
    },
  };
}
