// The composition root of a serving thread: buildThread() constructs every part with its
// dependencies passed in and lists the parts in start order; stop() runs the list in reverse.
// Constructing opens nothing: each part opens in its start(). main.ts (threads, signals) and
// the tests (test/helpers/server.ts) build their threads here. The one module of src/hot that
// imports src/admin: it hands the admin routes to the HTTP server (docs/decisions/rooms.md).
import type { Logger } from 'pino';
import { registerAdmin } from '../admin/routes.js';
import { IntersectPool } from '../workers/pool.js';
import type { App } from './app.js';
import type { Config } from './config.js';
import { Keys, PRODUCTION } from './domain/keys.js';
import { countBackendError, sampleBackends } from './metrics/metrics.js';
import { metricsListenerPart } from './metrics/listener.js';
import { MetricsAggregation } from './metrics/threads.js';
import { createPool, SERVING_TIMEOUTS } from './pg/pool.js';
import { connectRedis, createRedis, createReplicas, replicaWaiter, scriptLineFor } from './redis/client.js';
import { createServer, type Server, type ServerOptions } from './server.js';
import { AddressShares, sharesBuffer } from './domain/shares.js';
// the features, lowest first (eslint.config.js FEATURES)
import { sampleRateLimit } from './ratelimit/index.js';
import { PendingSandboxes, SandboxAuth } from './sandboxes/index.js';
import { countProjectorFailure, Projector, sampleOutbox } from './registry/index.js';
import { HeartbeatTokenMemory, LeaseSweeper, Liveness } from './liveness/index.js';
import { GroupCommitter } from './writes/index.js';
import { threadFallback } from './fallback/index.js';
import { HeldRequests, Wakes } from './held/index.js';
import { Index, InvalidationListener, NearCache, NearVersionCheck, NearWarmer, ResultCache, sampleSearch, stringBytes, warmSource, type Caches, type Replacements } from './search/index.js';
import { ChangeHub, StreamShares, streamSharesBuffer } from './changes/index.js';
import { AppState, catalogBuffer, createWatchers } from './readiness/index.js';
import { proxySocketPath } from './http/proxy-socket.js';
import { createDnsServer, type DnsServer } from './discovery/index.js';
import { ImportBacklog } from './reindex/index.js';

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
  /** the thread's index: its proxy socket is PROXY_SOCKET_DIR/registry-<thread>.sock (default 0) */
  thread?: number;
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
  /** sees each near-cache delta before the near cache; `apply` passes it on (tests lose deltas by not calling it) */
  delta?: (msg: string, apply: (msg: string) => void) => void;
  /** hears what reading each request's body cost (RouteOptions.bodyHooks) */
  body?: ServerOptions['bodyHooks'];
  /** the port opens after a start-up rebuild even with a fallback (tests wanting the index at once) */
  waitForIndex?: boolean;
}

/** What a process's uWS threads share (main.ts hands it to each; a thread alone has its own): counters, on shared memory. */
export interface ProcessShared {
  /** open change streams, in total and per client address (changes/shares.ts) */
  changeStreams: SharedArrayBuffer;
  /** held requests, in total and per client address (held/, domain/shares.ts) */
  held: SharedArrayBuffer;
  /** the Consul catalog's answers from PostgreSQL, and those the index caught up with (readiness/state.ts) */
  catalog: SharedArrayBuffer;
}

export function processShared(): ProcessShared {
  return { changeStreams: streamSharesBuffer(), held: sharesBuffer(), catalog: catalogBuffer() };
}

export interface ThreadOptions {
  /** the process's shared counters (main.ts); default: this thread's own */
  shared?: ProcessShared;
  hooks?: ThreadHooks; // tests only
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

  // reads while the index is away: a pool of their own, never the connections writes need
  const fallback = threadFallback(cfg);
  const shared = opts.shared ?? processShared();
  const state = new AppState(fallback !== null, shared.catalog);
  const pendingSandboxes = new PendingSandboxes();

  // the index (with this thread's near cache, answering only while readiness holds), the
  // writes' path into it, sandbox keys and rate limits, the change feed. Replicas
  // (REDIS_REPLICA_URLS) serve pure reads; index writes then use a primary connection of
  // their own, so the WAIT after them never blocks this thread's searches and counters
  const replicas = createReplicas(cfg);
  const writer = replicas.length ? createRedis(cfg) : redis;
  const near = new NearCache(threadShare(cfg.nearCacheBytes, cfg.uwsThreads), cfg.nearResultAdmit);
  const index: Index = new Index(redis, keys, intersectPool, cfg.heavyIntersectionThreshold, replicas, near, () => state.ready,
    // away: readiness saw Redis unreachable, or no live generation (lost, or being rebuilt)
    fallback && { reads: fallback, away: () => !state.redisUp || state.rebuilding || !index.gen, catalog: { pending: () => state.catalogCatchingUp && state.pgUp, served: () => state.catalogFromPostgres() } },
    { whole: cfg.nearLoadWholeMembers, slice: cfg.nearLoadSliceBuckets });
  const replicaWait = replicas.length && cfg.redisReplicaWaitMs > 0 ? replicaWaiter(writer, replicas.length, cfg.redisReplicaWaitMs) : null;
  // committed writes reach the index here; what follows them subscribes to projector.applied
  // (search/: the caches and the near cache) or attaches to it (liveness/: leases)
  const projector = new Projector(pg, writer, keys, cfg.tiers, log, replicaWait, { beforeApply: hooks.beforeApply, pendingSandboxes });
  const leaseNow = hooks.leaseNow ?? Date.now;
  const backlog = new ImportBacklog(pg, writer, keys, cfg.tiers, log, cfg.outboxRebuildBacklog, { now: leaseNow }); // an import's, by a rebuild
  // the turn's heartbeat call on a connection of its own (a standalone Redis; REDIS_HEARTBEAT_LINE)
  const heartbeatLine = cfg.redisHeartbeatLine ? scriptLineFor(writer, { onError: (err) => log.error({ err: String(err) }, 'a heartbeat callback threw') }) : null;
  const liveness: Liveness = new Liveness(pg, writer, keys, projector, { now: leaseNow, indexReady: () => state.ready, line: heartbeatLine });
  const heartbeatTokens = new HeartbeatTokenMemory(threadShare(cfg.heartbeatTokenCacheBytes, cfg.uwsThreads), leaseNow);
  const sweeper = new LeaseSweeper(pg, writer, keys, projector, log, { intervalMs: cfg.leaseSweepMs, lockMs: cfg.leaseLockMs, batch: cfg.leaseSweepBatch, parallel: cfg.leaseSweepParallel, now: leaseNow, owner: hooks.sweeperOwner });
  // each batch's registrations are applied to the index together, before they are answered
  const commits = new GroupCommitter(pg, { windowMs: cfg.groupCommitWindowMs, maxBatch: cfg.groupCommitMaxBatch, concurrency: cfg.groupCommitConcurrency, quotas: cfg.tierMaxServices }, (done) =>
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
  const hub = new ChangeHub(pg, cfg, new StreamShares(cfg.changesMaxStreams, cfg.changesStreamsPerAddress, shared.changeStreams));
  // held requests, woken by the deltas below (every thread, every node) and, on this thread,
  // by its own writes (after the caches they read dropped them: followWrites subscribes first)
  const held = new HeldRequests({ waitMaxSeconds: cfg.waitMaxSeconds, shares: new AddressShares(cfg.heldMax, cfg.heldPerAddress, shared.held) });
  const wakes = new Wakes(held, (base) => (index.gen ? keys.nsOf(base, index.gen) : null));
  const invalidation = new InvalidationListener(redis, keys, caches, {
    tierChanged: (uuid) => auth.dropAdmissions(uuid),
    // a rebuild made a new generation live: read it now, not at the readiness watcher's next
    // round (which reads it too); held answers are computed again once it is known
    generation: () => void index.refreshGen().then(() => wakes.cleared(), () => undefined),
    failed: (err, what) => {
      countProjectorFailure('invalidate');
      log.warn({ err: String(err) }, what);
    },
    // the near cache first: a held answer computed again reads it
    delta: hooks.delta ? (msg) => hooks.delta!(msg, (m) => (near.onDelta(m), wakes.delta(m))) : (msg) => (near.onDelta(msg), wakes.delta(msg)),
    subscribed: (live) => (live ? near.resume() : near.pause()),
    cleared: () => (near.clear(), wakes.cleared()),
  });
  invalidation.followWrites(projector.applied, near);
  wakes.follow(projector.applied);

  // a lost final delta of a namespace: found by comparing versions with Redis (near-sets.ts)
  const nearCheck = new NearVersionCheck(near, cfg.nearCheckMs, async (bases) => {
    const vs = await Promise.all(bases.map((b) => redis.get(keys.verAt(b))));
    return vs.map((v) => (v === null ? null : Number(v)));
  }, (base) => wakes.lost(base));
  const warmer = new NearWarmer(near, warmSource(index), cfg.nearWarmPercent); // (production's documents, in the background)

  // what this thread's metrics mirror, sampled before each scrape (each feature's metrics module)
  const metrics = new MetricsAggregation(cfg.uwsThreads, [
    sampleBackends(() => ({ postgres: state.pgUp, redis: state.redisUp })),
    sampleOutbox(() => projector.lag()),
    sampleSearch({
      intersectPool: () => intersectPool?.stats() ?? null,
      resultCache: () => ({ hits: caches.cache.hits, misses: caches.cache.misses, shared: caches.cache.flights.joined, bytes: caches.cache.bytes + caches.replacements.bytes }),
      nearCache: () => (near.enabled ? { ...near.stats, bytes: near.bytes, warmed: warmer.stats.documents } : null),
    }),
    sampleRateLimit(() => auth.stats),
  ]);

  const app: App = { cfg, pg, redis, keys, index, projector, commits, auth, pendingSandboxes, hub, held, metrics, log, state, version, ...caches, intersectPool, liveness, sweeper, heartbeatTokens };
  const watchers = createWatchers(app);
  const socket = cfg.proxySocketDir ? proxySocketPath(cfg.proxySocketDir, at.thread ?? 0) : undefined;
  const server = createServer(app, { port: at.port, host: at.host, sharePort: at.sharePort, socket, routes: [registerAdmin], bodyHooks: hooks.body });
  const metricsListener = metricsListenerPart((at.metrics ?? true) && cfg.metricsEnabled ? { host: cfg.metricsHost, port: cfg.metricsPort } : null, () => metrics.scrape());
  // the DNS server answers from this thread's index and near cache (discovery/dns/source.ts)
  const dns: DnsServer | null = at.dns ?? true ? createDnsServer(cfg, index, caches.cache) : null;

  let drain: Drain = { graceMs: cfg.shutdownGraceMs, listenMs: 0 };
  const parts: Part[] = [
    { name: 'postgres', start: () => void pg.on('error', () => countBackendError('postgres', 'connection')), stop: () => pg.end() },
    { name: 'fallback', start: () => undefined, stop: () => fallback?.close() },
    {
      name: 'redis',
      start: () => {
        redis.on('error', () => countBackendError('redis', 'connection'));
        connectRedis(redis);
      },
      // requests answered without Redis (leased, refused locally) are recorded before it closes;
      // a Redis that is away gets no QUIT (it would reconnect for ever to send it)
      stop: () => (auth.records.flush(), redis.quit().catch(() => redis.disconnect())),
    },
    // replicas and the writer hold nothing worth a QUIT (which would wait for one that is away)
    { name: 'redis-replicas', start: () => [...replicas, ...(writer !== redis ? [writer] : [])].forEach(connectRedis), stop: () => [...replicas, ...(writer !== redis ? [writer] : [])].forEach((r) => r.disconnect()) },
    // after the HTTP side stopped (parts stop in reverse): calls in flight are answered first
    { name: 'heartbeat-line', start: () => heartbeatLine?.start(), stop: () => heartbeatLine?.close() },
    { name: 'intersect-pool', start: () => intersectPool?.start(), stop: () => intersectPool?.close() },
    { name: 'metrics', start: () => metrics.start(), stop: () => metrics.stop() },
    // now, not at the first stream: it also prunes expired change events
    { name: 'change-hub', start: () => hub.start(), stop: () => hub.close() },
    // (acks of writes applied since the last flush go now, or the next start re-applies them)
    { name: 'outbox-sweeper', start: () => projector.start(cfg.outboxSweepMs, () => backlog.hold()), stop: () => (projector.stop(), projector.flushAcks()) },
    { name: 'invalidation', start: () => invalidation.start(), stop: () => invalidation.stop() },
    { name: 'near-check', start: () => nearCheck.start(), stop: () => nearCheck.stop() },
    { name: 'near-warm', start: () => warmer.start(), stop: () => warmer.stop() },
    // (the drain, server.ts, has answered every held request before this stops)
    { name: 'held', start: () => undefined, stop: () => (held.stop(), wakes.stop()) },
    { name: 'lease-sweeper', start: () => (hooks.sweep ?? true ? sweeper.start() : undefined), stop: () => sweeper.stop() },
    // the first round (and its rebuild, unless reads can answer from PostgreSQL meanwhile) precede the port
    { name: 'readiness', start: () => watchers.start({ openDuringRebuild: fallback !== null && !hooks.waitForIndex }), stop: () => watchers.stop() },
    metricsListener,
    { name: 'dns', start: () => dns?.start().catch((err: Error) => Promise.reject(new Error(`cannot serve DNS on ${cfg.dnsHost}:${cfg.dnsPort}: ${err.message}`, { cause: err }))), stop: () => dns?.stop() },
    { name: 'http', start: () => server.listen(), stop: () => server.close(drain.graceMs, drain.listenMs) },
  ];

  let started = 0;
  return {
    app,
    server,
    parts,
    metricsPort: () => metricsListener.port(),
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
