// Configuration: the one module that reads process.env. Every value is validated at
// start-up (the parsers: config-env.ts); a bad value throws a ConfigError naming the
// variable, and main() prints it and exits. Every variable's default, range and meaning is
// one row of config-settings.ts, which docs/configuration.md is generated from.
import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { ConfigError, dnsDomain, dnsPort, tierMap, tierMaxServices, type Env } from './config-env.js';
import { readers } from './config-settings.js';

export interface TierConfig {
  /** a number per tier: requests per minute (TIERS), services per sandbox (TIER_MAX_SERVICES) */
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
   * the primary. Ignored in cluster mode (docs/decisions/read-replicas.md).
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
  /** requests per minute over the sliding window of twelve 5-second buckets, per tier */
  tiers: TierConfig;
  /** services a sandbox may hold, per tier (every tier of `tiers` has one) */
  tierMaxServices: TierConfig;
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
  outboxRebuildBacklog: number;
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
  /** held requests: the longest wait applied, seconds (WAIT_MAX_SECONDS) */
  waitMaxSeconds: number;
  /** held requests per client address, per process (429 beyond) */
  heldPerAddress: number;
  /** held requests per process (429 beyond) */
  heldMax: number;
  /** sandbox key maps (known and unknown key hashes), bytes per process, split evenly across uWS threads */
  sandboxKeyCacheBytes: number;
  /** heartbeat token memory (accepted and refused tokens), bytes per process, split evenly across uWS threads */
  heartbeatTokenCacheBytes: number;
  /** the turn's heartbeat call on a connection of its own (redis/script-line.ts) instead of ioredis's, on a standalone Redis */
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
  /** reads while the index is away: PostgreSQL connections and statements in flight per process (0 connections: none) */
  fallbackConnections: number;
  fallbackMaxQueries: number;
  /** the fallback's statement_timeout, ms */
  fallbackStatementMs: number;
  /** share of the near cache's budget the warmer fills with production's documents, percent (0: off; search/near/warm.ts) */
  nearWarmPercent: number;
  /** period of the near cache's version check against Redis (a lost final delta), ms (0: off) */
  nearCheckMs: number;
  /** sets read from Redis whole up to this many members, above in slices of this many buckets (search/pipeline/sets.ts) */
  nearLoadWholeMembers: number;
  nearLoadSliceBuckets: number;
  /** cold pages of a query of several sets (or one sparse set) before the near cache keeps its whole answer (0: never; search/near/results.ts) */
  nearResultAdmit: number;
  /** longest wait between two passes of the lease sweeper (expired leases, deregistrations), ms */
  leaseSweepMs: number;
  /** TTL of a shard's sweep lock: how long the shards of a node that died go unswept, ms */
  leaseLockMs: number;
  /** due leases per shard and turn of the sweeper (LEASE_SWEEP_BATCH) */
  leaseSweepBatch: number;
  /** durable expiry transactions one node runs at once (LEASE_SWEEP_PARALLEL) */
  leaseSweepParallel: number;
  /** most services one answer of the discovery protocols lists (DISCOVERY_MAX_TARGETS) */
  discoveryMaxTargets: number;
  /** the Consul-compatible catalog's one datacenter */
  consulDatacenter: string;
  /** the DNS server: address, port (0: the kernel picks; null: off), zone, TTL s, TCP answer records, UDP answers per address a second */
  dnsHost: string;
  dnsPort: number | null;
  dnsDomain: string;
  dnsTtl: number;
  dnsMaxRecords: number;
  dnsRatePerAddress: number;
}

const MIB = 1024 * 1024;

export function loadConfig(env: Env = process.env): Config {
  const { int, bool, level, url, hostName, hostPorts, urls, addresses, socketDir, raw } = readers(env);
  const nodeEnv = raw('NODE_ENV') as Config['env'];
  if (!['development', 'production', 'test'].includes(nodeEnv)) {
    throw new ConfigError(`NODE_ENV must be development, production or test, got "${nodeEnv}"`);
  }
  let adminApiKey = raw('ADMIN_API_KEY');
  let adminApiKeyGenerated = false;
  if (!adminApiKey) {
    if (nodeEnv === 'production') throw new ConfigError('ADMIN_API_KEY must be set in production');
    adminApiKey = 'adm_' + randomBytes(24).toString('base64url');
    adminApiKeyGenerated = true;
  } else if (adminApiKey.length < 16) {
    throw new ConfigError('ADMIN_API_KEY must be at least 16 characters');
  }
  const t = tierMap('TIERS', raw('TIERS'), 'free=60,pro=600');
  const defaultTier = raw('DEFAULT_TIER');
  if (!(defaultTier in t)) throw new ConfigError(`DEFAULT_TIER "${defaultTier}" is not one of TIERS`);
  const host = hostName('HOST');
  const redisClusterNodes = hostPorts('REDIS_CLUSTER_NODES');
  const redisReplicaUrls = urls('REDIS_REPLICA_URLS');
  const prefix = raw('REDIS_KEY_PREFIX');
  if (!/^[a-zA-Z0-9:_-]*$/.test(prefix)) throw new ConfigError('REDIS_KEY_PREFIX may hold only [a-zA-Z0-9:_-]');
  const dc = raw('CONSUL_DATACENTER');
  if (!/^[a-zA-Z0-9_-]{1,64}$/.test(dc)) throw new ConfigError(`CONSUL_DATACENTER must be 1-64 of [a-zA-Z0-9_-], got "${dc}"`);
  return {
    port: int('PORT'),
    host,
    adminApiKey,
    adminApiKeyGenerated,
    databaseUrl: url('DATABASE_URL'),
    redisUrl: url('REDIS_URL'),
    redisClusterNodes,
    redisKeyPrefix: prefix,
    redisReplicaUrls,
    redisClusterReplicaReads: bool('REDIS_CLUSTER_REPLICA_READS'),
    redisReplicaWaitMs: int('REDIS_REPLICA_WAIT_MS'),
    uwsThreads: int('WORKERS', Math.max(1, availableParallelism() - 1)),
    allowUwsFallback: bool('ALLOW_UWS_FALLBACK'),
    env: nodeEnv,
    tiers: t,
    tierMaxServices: tierMaxServices(raw('TIER_MAX_SERVICES'), t),
    defaultTier,
    sandboxCreatePerMinute: int('SANDBOX_CREATE_PER_MINUTE'),
    loginFailuresPerMinute: int('LOGIN_FAILURES_PER_MINUTE'),
    searchMaxAge: int('SEARCH_MAX_AGE'),
    discoveryMaxAge: int('DISCOVERY_MAX_AGE'),
    defaultLimit: 100, // contract: limit default 100
    maxLimit: 1000, // contract: limit 1..1000
    adminPageSize: int('ADMIN_PAGE_SIZE'),
    sessionIdleSeconds: int('SESSION_IDLE_SECONDS'),
    sessionAbsoluteSeconds: int('SESSION_ABSOLUTE_SECONDS'),
    cookieSecure: bool('COOKIE_SECURE'),
    maxBodyBytes: int('MAX_BODY_BYTES'),
    maxBatchBodyBytes: int('MAX_BATCH_BODY_BYTES'),
    groupCommitWindowMs: int('GROUP_COMMIT_WINDOW_MS'),
    groupCommitMaxBatch: int('GROUP_COMMIT_MAX_BATCH'),
    groupCommitConcurrency: int('GROUP_COMMIT_CONCURRENCY'),
    maxJsonDepth: int('MAX_JSON_DEPTH'),
    shutdownGraceMs: int('SHUTDOWN_GRACE_MS'),
    outboxSweepMs: int('OUTBOX_SWEEP_MS'),
    outboxRebuildBacklog: int('OUTBOX_REBUILD_BACKLOG'),
    logLevel: level('LOG_LEVEL'),
    accessLog: bool('ACCESS_LOG'),
    accessLogLevel: level('ACCESS_LOG_LEVEL'),
    trustedProxies: addresses('TRUSTED_PROXIES'),
    proxySocketDir: socketDir('PROXY_SOCKET_DIR'),
    metricsEnabled: bool('METRICS_ENABLED'),
    metricsHost: hostName('METRICS_HOST'),
    metricsPort: int('METRICS_PORT'),
    changesPollMs: int('CHANGES_POLL_MS'),
    changesHeartbeatMs: int('CHANGES_HEARTBEAT_MS'),
    changesRetentionHours: int('CHANGES_RETENTION_HOURS'),
    changesMaxStreams: int('CHANGES_MAX_STREAMS'),
    changesStreamsPerAddress: int('CHANGE_STREAMS_PER_ADDRESS'),
    waitMaxSeconds: int('WAIT_MAX_SECONDS'),
    heldPerAddress: int('HELD_PER_ADDRESS'),
    heldMax: int('HELD_MAX'),
    sandboxKeyCacheBytes: int('SANDBOX_KEY_CACHE_MB') * MIB,
    heartbeatTokenCacheBytes: int('HEARTBEAT_TOKEN_CACHE_MB') * MIB,
    redisHeartbeatLine: bool('REDIS_HEARTBEAT_LINE'),
    heavyIntersectionThreshold: int('HEAVY_INTERSECTION_THRESHOLD'),
    poolMaxQueue: int('POOL_MAX_QUEUE'),
    poolThreads: int('POOL_THREADS'),
    resultCacheEntries: int('RESULT_CACHE_ENTRIES'),
    resultCacheTtlMs: int('RESULT_CACHE_TTL_MS'),
    resultCacheBytes: int('RESULT_CACHE_MB') * MIB,
    rateCountFlushMs: int('RATE_COUNT_FLUSH_MS'),
    nearCacheBytes: int('NEAR_CACHE_MB') * MIB,
    nearWarmPercent: int('NEAR_WARM_PERCENT'),
    nearCheckMs: int('NEAR_CHECK_MS'),
    nearLoadWholeMembers: int('NEAR_LOAD_WHOLE_MEMBERS'),
    nearLoadSliceBuckets: int('NEAR_LOAD_SLICE_BUCKETS'),
    nearResultAdmit: int('NEAR_RESULT_ADMIT'),
    fallbackConnections: int('FALLBACK_PG_CONNECTIONS'),
    fallbackMaxQueries: int('FALLBACK_MAX_QUERIES'),
    fallbackStatementMs: int('FALLBACK_STATEMENT_MS'),
    leaseSweepMs: int('LEASE_SWEEP_MS'),
    leaseLockMs: int('LEASE_LOCK_MS'),
    leaseSweepBatch: int('LEASE_SWEEP_BATCH'),
    leaseSweepParallel: int('LEASE_SWEEP_PARALLEL'),
    discoveryMaxTargets: int('DISCOVERY_MAX_TARGETS'),
    consulDatacenter: dc,
    dnsHost: hostName('DNS_HOST'),
    dnsPort: dnsPort(raw('DNS_PORT')),
    dnsDomain: dnsDomain(raw('DNS_DOMAIN')),
    dnsTtl: int('DNS_TTL'),
    dnsMaxRecords: int('DNS_MAX_RECORDS'),
    dnsRatePerAddress: int('DNS_RATE_PER_ADDRESS'),
  };
}
