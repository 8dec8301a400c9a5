// Configuration: the one module that reads process.env. Every value is validated at
// start-up (the parsers: config-env.ts); a bad value throws a ConfigError naming the
// variable, and main() prints it and exits. Every default is commented here, in one place
// (contract, "Configuration").
import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { addresses, bool, ConfigError, hostName, hostPorts, int, level, socketDir, url, urls, type Env } from './config-env.js';

export interface TierConfig {
  /** requests per minute over the sliding window of twelve 5-second buckets */
  readonly [tier: string]: number;
}

export interface Config {
  port: number;
  host: string;
  adminApiKey: string;
  adminApiKeyGenerated: boolean;
  databaseUrl: string;
  redisUrl: string;
  /** "host:port,host:port" seeds; when set, ioredis runs in cluster mode */
  redisClusterNodes: string[];
  /** prefix in front of every Redis key (tests use it to share one Redis) */
  redisKeyPrefix: string;
  /**
   * Read-only replicas of REDIS_URL's primary: pure index reads (searches, GET
   * /services/{id}) go to them in turn; writes, counters and scripts that write stay on
   * the primary. Ignored in cluster mode (docs/decisions.md, "Read replicas").
   */
  redisReplicaUrls: string[];
  /**
   * Cluster mode: send the same pure reads to the replicas of each key's primary
   * (EVALSHA_RO), and acknowledge an index write once its primary's replicas have it (WAIT)
   */
  redisClusterReplicaReads: boolean;
  /** how long an index write waits for the replicas to have it (WAIT) before its 2xx, ms */
  redisReplicaWaitMs: number;
  uwsThreads: number;
  allowUwsFallback: boolean;
  env: 'development' | 'production' | 'test';
  tiers: TierConfig;
  defaultTier: string;
  /** POST /sandboxes per client address per minute */
  sandboxCreatePerMinute: number;
  /** failed POST /admin/session per client address per minute before 429 */
  loginFailuresPerMinute: number;
  /** Cache-Control max-age of anonymous search and device responses, seconds */
  searchMaxAge: number;
  /** Cache-Control max-age (and shared cache lifetime) of /services/{id}[/replacements] */
  discoveryMaxAge: number;
  /** default and maximum `limit` of searches */
  defaultLimit: number;
  maxLimit: number;
  /** admin sandbox list page size */
  adminPageSize: number;
  /** admin session: idle and absolute lifetime, seconds */
  sessionIdleSeconds: number;
  sessionAbsoluteSeconds: number;
  /** Secure attribute on the admin cookie; turn off only for local http */
  cookieSecure: boolean;
  /** largest request body accepted, bytes */
  maxBodyBytes: number;
  /** largest body of the batch routes (POST .../services/batch), bytes */
  maxBatchBodyBytes: number;
  /** group commit of registrations: how long a batch waits for company, ms (0: end of the event-loop turn) */
  groupCommitWindowMs: number;
  /** group commit: most registrations per statement */
  groupCommitMaxBatch: number;
  /** group commit: statements in flight per thread (each holds one of the thread's 10 PostgreSQL connections) */
  groupCommitConcurrency: number;
  /** deepest nesting of arrays and objects accepted in a JSON body */
  maxJsonDepth: number;
  /** SIGTERM grace period, milliseconds */
  shutdownGraceMs: number;
  /** how often the outbox is swept for writes whose index update did not happen, ms */
  outboxSweepMs: number;
  /** pino level; access log lines are written at `accessLogLevel` */
  logLevel: string;
  accessLog: boolean;
  accessLogLevel: string;
  /** GET /metrics and the per-request accounting behind it */
  metricsEnabled: boolean;
  /**
   * reverse proxies on other hosts, reached over TCP, whose X-Forwarded-For / X-Real-IP give
   * the client address (normalised); their addresses must be unreachable to clients
   */
  trustedProxies: string[];
  /**
   * directory of the Unix sockets the reverse proxy connects to, one per uWS thread (absolute;
   * "" for none): X-Forwarded-For / X-Real-IP are believed on them, whatever TRUSTED_PROXIES
   */
  proxySocketDir: string;
  /** the /metrics listener, apart from the public port (0: an ephemeral port) */
  metricsHost: string;
  metricsPort: number;
  /** change feed: how often a thread with open streams polls for new events, ms */
  changesPollMs: number;
  /** change feed: comment line sent to every idle stream this often, ms */
  changesHeartbeatMs: number;
  /** change feed: events older than this are pruned, hours (also the resume horizon) */
  changesRetentionHours: number;
  /** change feed: open streams per process, all uWS threads together (429 beyond) */
  changesMaxStreams: number;
  /** change feed: open streams per client address, per process (429 beyond) */
  changesStreamsPerAddress: number;
  /** sandbox key maps (known and unknown key hashes), bytes per process, split evenly across uWS threads */
  sandboxKeyCacheBytes: number;
  /** heartbeat token memory (accepted and refused tokens), bytes per process, split evenly across uWS threads */
  heartbeatTokenCacheBytes: number;
  /**
   * the turn's heartbeat call on a connection of its own (redis/script-line.ts) instead of
   * ioredis's, on a standalone Redis: ~7 % of a heartbeat's CPU
   */
  redisHeartbeatLine: boolean;
  /** Piscina: intersections whose smallest set exceeds this run in the worker pool */
  heavyIntersectionThreshold: number;
  poolMaxQueue: number;
  poolThreads: number;
  /** in-process result cache entries per worker thread (0 disables it) */
  resultCacheEntries: number;
  /** bound on a cached result's staleness should an invalidation message be lost, ms */
  resultCacheTtlMs: number;
  /** bytes the result cache may hold per thread (RESULT_CACHE_MB) */
  resultCacheBytes: number;
  /** how long requests answered without Redis (leased, refused locally) wait to be recorded there in one batch, ms (0: end of the event-loop turn) */
  rateCountFlushMs: number;
  /** bytes the near cache of index sets and documents may hold per uWS thread (0: off) */
  nearCacheBytes: number;
  /** period of the near cache's version check against Redis (a lost final delta), ms (0: off) */
  nearCheckMs: number;
  /** longest wait between two passes of the lease sweeper (expired leases, deregistrations), ms */
  leaseSweepMs: number;
  /** TTL of a shard's sweep lock: how long the shards of a node that died go unswept, ms */
  leaseLockMs: number;
  /** due leases per shard and turn of the sweeper (LEASE_SWEEP_BATCH) */
  leaseSweepBatch: number;
  /** durable expiry transactions one node runs at once (LEASE_SWEEP_PARALLEL) */
  leaseSweepParallel: number;
}

/** TIERS="free=60,pro=600,enterprise=6000" */
function tiers(env: Env): TierConfig {
  const raw = env.TIERS || 'free=60,pro=600,enterprise=6000'; // contract defaults
  const out: Record<string, number> = {};
  for (const part of raw.split(',')) {
    const m = /^\s*([a-z0-9_-]{1,32})\s*=\s*(\d{1,9})\s*$/.exec(part);
    if (!m || Number(m[2]) < 1) throw new ConfigError(`TIERS must look like "free=60,pro=600", got "${raw}"`);
    out[m[1]!] = Number(m[2]);
  }
  return out;
}

export function loadConfig(env: Env = process.env): Config {
  const nodeEnv = (env.NODE_ENV || 'development') as Config['env'];
  if (!['development', 'production', 'test'].includes(nodeEnv)) {
    throw new ConfigError(`NODE_ENV must be development, production or test, got "${nodeEnv}"`);
  }
  let adminApiKey = env.ADMIN_API_KEY || '';
  let adminApiKeyGenerated = false;
  if (!adminApiKey) {
    if (nodeEnv === 'production') throw new ConfigError('ADMIN_API_KEY must be set in production');
    adminApiKey = 'adm_' + randomBytes(24).toString('base64url');
    adminApiKeyGenerated = true;
  } else if (adminApiKey.length < 16) {
    throw new ConfigError('ADMIN_API_KEY must be at least 16 characters');
  }
  const t = tiers(env);
  const defaultTier = env.DEFAULT_TIER || 'free'; // contract: new sandboxes are `free`
  if (!(defaultTier in t)) throw new ConfigError(`DEFAULT_TIER "${defaultTier}" is not one of TIERS`);
  const host = hostName(env, 'HOST', '127.0.0.1'); // contract default: loopback only
  const redisClusterNodes = hostPorts(env, 'REDIS_CLUSTER_NODES');
  const redisReplicaUrls = urls(env, 'REDIS_REPLICA_URLS', ['redis:', 'rediss:']);
  const prefix = env.REDIS_KEY_PREFIX || '';
  if (!/^[a-zA-Z0-9:_-]*$/.test(prefix)) throw new ConfigError('REDIS_KEY_PREFIX may hold only [a-zA-Z0-9:_-]');
  return {
    port: int(env, 'PORT', 8080, 0, 65535), // contract default
    host,
    adminApiKey,
    adminApiKeyGenerated,
    databaseUrl: url(env, 'DATABASE_URL', 'postgres://postgres@127.0.0.1:5440/registry', ['postgres:', 'postgresql:']),
    redisUrl: url(env, 'REDIS_URL', 'redis://127.0.0.1:6390', ['redis:', 'rediss:']),
    redisClusterNodes,
    redisKeyPrefix: prefix,
    redisReplicaUrls, // none: every read goes to the primary
    redisClusterReplicaReads: bool(env, 'REDIS_CLUSTER_REPLICA_READS', false), // off: a cluster's primaries serve every read
    // a replica normally has a write within a millisecond; a sick one costs a write at most
    // this, and then serves it stale until it catches up (docs/decisions.md, "Read replicas")
    redisReplicaWaitMs: int(env, 'REDIS_REPLICA_WAIT_MS', 100, 0, 10_000),
    // one uWS thread per core, less one left to Redis, PostgreSQL and the OS: on the 2-core
    // machines here 2 threads served 2.5x fewer requests than 1 (docs/decisions.md)
    uwsThreads: int(env, 'WORKERS', Math.max(1, availableParallelism() - 1), 1, 256),
    allowUwsFallback: bool(env, 'ALLOW_UWS_FALLBACK', false), // refuse the slow JS fallback
    env: nodeEnv,
    tiers: t,
    defaultTier,
    sandboxCreatePerMinute: int(env, 'SANDBOX_CREATE_PER_MINUTE', 10, 1, 1_000_000), // contract default
    loginFailuresPerMinute: int(env, 'LOGIN_FAILURES_PER_MINUTE', 20, 1, 1_000_000), // slows key guessing
    searchMaxAge: int(env, 'SEARCH_MAX_AGE', 5, 0, 86400), // short: registrations show up quickly
    discoveryMaxAge: int(env, 'DISCOVERY_MAX_AGE', 60, 1, 86400), // must be > 0 (contract)
    defaultLimit: 100, // contract: limit default 100
    maxLimit: 1000, // contract: limit 1..1000
    adminPageSize: int(env, 'ADMIN_PAGE_SIZE', 20, 1, 500),
    sessionIdleSeconds: int(env, 'SESSION_IDLE_SECONDS', 30 * 60, 60, 86400 * 7), // 30 min idle
    sessionAbsoluteSeconds: int(env, 'SESSION_ABSOLUTE_SECONDS', 12 * 3600, 60, 86400 * 30), // 12 h
    cookieSecure: bool(env, 'COOKIE_SECURE', true), // contract: Secure unless configured off (COOKIE_SECURE=false for local http)
    maxBodyBytes: int(env, 'MAX_BODY_BYTES', 64 * 1024, 1024, 16 * 1024 * 1024), // 64 KiB
    // 1,000 registrations of a typical size (~300-600 bytes) fit 1 MiB; 4 MiB leaves room for
    // larger ones (32 properties of 256 characters is ~10 KiB a service: such batches must be smaller)
    maxBatchBodyBytes: int(env, 'MAX_BATCH_BODY_BYTES', 4 * 1024 * 1024, 1024, 64 * 1024 * 1024),
    // 2 ms: each write waits at most that for company; 64 writers committed 2,031 / 1,989
    // writes/s (p99 54 / 57 ms) against 1,647 / 1,900 (p99 64 / 60 ms) with 0 (a batch of
    // what arrived within one event-loop turn and while statements were in flight), two
    // alternated pairs on a quiet machine (bench/README.md, "Writes against pgbench")
    groupCommitWindowMs: int(env, 'GROUP_COMMIT_WINDOW_MS', 2, 0, 1000),
    groupCommitMaxBatch: int(env, 'GROUP_COMMIT_MAX_BATCH', 256, 1, 1000),
    // 4 of the thread's 10 connections: searches, patches and deletes keep the others
    groupCommitConcurrency: int(env, 'GROUP_COMMIT_CONCURRENCY', 4, 1, 10),
    maxJsonDepth: int(env, 'MAX_JSON_DEPTH', 32, 1, 1000), // every body of the API is 3-4 levels deep; 32 leaves room
    shutdownGraceMs: int(env, 'SHUTDOWN_GRACE_MS', 10_000, 0, 600_000),
    outboxSweepMs: int(env, 'OUTBOX_SWEEP_MS', 1000, 50, 600_000),
    logLevel: level(env, 'LOG_LEVEL', 'info'),
    accessLog: bool(env, 'ACCESS_LOG', false), // off: it costs hot-path throughput (docs/decisions.md)
    accessLogLevel: level(env, 'ACCESS_LOG_LEVEL', 'info'), // must be >= LOG_LEVEL to be written
    trustedProxies: addresses(env, 'TRUSTED_PROXIES'), // none: over TCP the connection's address is the client's
    // none: no proxy socket (`make run` sets .local/run, where `make proxy` connects); only
    // users who may enter the directory can be the proxy (http/proxy-socket.ts)
    proxySocketDir: socketDir(env, 'PROXY_SOCKET_DIR'),
    metricsEnabled: bool(env, 'METRICS_ENABLED', true), // GET /metrics on its own listener, unauthenticated
    metricsHost: hostName(env, 'METRICS_HOST', '127.0.0.1'), // loopback: scrapers on this machine (or a proxy) only
    metricsPort: int(env, 'METRICS_PORT', 9464, 0, 65535), // 9464: the Prometheus exporter port OpenTelemetry uses
    changesPollMs: int(env, 'CHANGES_POLL_MS', 250, 10, 60_000), // delivery latency vs. one tiny query per tick
    changesHeartbeatMs: int(env, 'CHANGES_HEARTBEAT_MS', 15_000, 100, 3_600_000), // keeps proxies from closing idle streams
    changesRetentionHours: int(env, 'CHANGES_RETENTION_HOURS', 168, 1, 24 * 365), // a week of resumable history
    changesMaxStreams: int(env, 'CHANGES_MAX_STREAMS', 10_000, 1, 1_000_000), // per process: each stream holds a socket and a few KiB
    // per process: a few tabs or services of one office behind one NAT; one address cannot
    // take the total (behind a proxy, give it PROXY_SOCKET_DIR or every client is the proxy)
    changesStreamsPerAddress: int(env, 'CHANGE_STREAMS_PER_ADDRESS', 32, 1, 1_000_000),
    // per process (each uWS thread gets an equal share): ~200 bytes a known key, ~130 an
    // unknown one (docs/decisions.md), so 16 MiB remember ~45,000 known keys a thread of 2
    sandboxKeyCacheBytes: int(env, 'SANDBOX_KEY_CACHE_MB', 16, 1, 65_536) * 1024 * 1024,
    // per process (each uWS thread gets an equal share): ~260 bytes an accepted token (its
    // service, namespace and hash), so 16 MiB remember ~24,000 tokens a thread of 2; a token
    // not remembered costs a SHA-256, and a sandbox heartbeat one more script entry
    heartbeatTokenCacheBytes: int(env, 'HEARTBEAT_TOKEN_CACHE_MB', 16, 1, 65_536) * 1024 * 1024,
    redisHeartbeatLine: bool(env, 'REDIS_HEARTBEAT_LINE', true), // on: a lean connection per thread for heartbeat calls (standalone Redis)
    heavyIntersectionThreshold: int(env, 'HEAVY_INTERSECTION_THRESHOLD', 5_000, 0, 100_000_000), // 0 disables the pool
    poolMaxQueue: int(env, 'POOL_MAX_QUEUE', 64, 1, 100_000),
    poolThreads: int(env, 'POOL_THREADS', 1, 1, 64),
    resultCacheEntries: int(env, 'RESULT_CACHE_ENTRIES', 10_000, 0, 10_000_000),
    resultCacheTtlMs: int(env, 'RESULT_CACHE_TTL_MS', 2000, 10, 3_600_000), // pub/sub invalidates within ms; this is the safety net
    resultCacheBytes: int(env, 'RESULT_CACHE_MB', 64, 1, 65_536) * 1024 * 1024,
    // 0: one Redis call per sandbox per event-loop turn (a flood's batch is what one turn
    // read); > 0 batches longer, and is then how far /poll's `total` on another thread or
    // node may lag (a poll flushes its own thread first either way)
    rateCountFlushMs: int(env, 'RATE_COUNT_FLUSH_MS', 0, 0, 1000),
    // 1,000,000 production services take ~0.7 GB (sets: ~9 memberships × 8 bytes each;
    // documents: ~330 bytes + 280 of overhead each, docs/decisions.md): 1 GiB a thread
    // holds them whole, and 23 threads of it fit a 24 GiB machine
    nearCacheBytes: int(env, 'NEAR_CACHE_MB', 1024, 0, 1_048_576) * 1024 * 1024,
    // a namespace whose last delta was lost (and no write followed) is dropped within two
    // periods: one GET of the namespace marker (`<base>ver:2`) per namespace the thread holds, per period
    nearCheckMs: int(env, 'NEAR_CHECK_MS', 1000, 0, 3_600_000),
    // a pass runs at the earliest deadline left (sweeper.ts tick()), at the latest this long
    // after the last one; each pass costs one Lua call per shard (LEASE_SHARDS = 16) held
    leaseSweepMs: int(env, 'LEASE_SWEEP_MS', 250, 10, 60_000),
    // a dead sweeper's shards are taken over within this (+ one period): well under the
    // contract's ttl + 2 s for the smallest ttl (5 s) only if it stays below ~1.5 s
    leaseLockMs: int(env, 'LEASE_LOCK_MS', 1500, 100, 60_000),
    // due leases listed per shard and call; a mass expiry is made visible at once (Redis only)
    // and committed in batches of this many (one transaction and a page of Lua calls each), at
    // most leaseSweepParallel at once per node: the sweeper holds no more PostgreSQL
    // connections than that (of the pool's 10), writes keep the rest. 2 rather than 4: at
    // 100,000 expiries the same durable rate (~7,000/s), visible p99 1.26 vs 1.70 s and
    // concurrent registrations p99 322 vs 579 ms (bench/README.md, "Liveness")
    leaseSweepBatch: int(env, 'LEASE_SWEEP_BATCH', 500, 1, 10_000),
    leaseSweepParallel: int(env, 'LEASE_SWEEP_PARALLEL', 2, 1, 16),
  };
}
