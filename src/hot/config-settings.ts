// The settings table: every environment variable the server reads, with its default, its
// range and what it does. config.ts reads the defaults and ranges from here (through
// readers()), and scripts/gen-config-doc.mjs writes docs/configuration.md from it, so the
// code and the reference share one source; test/unit/config-doc.test.ts holds both to it.
// Why a default is what it is: the comment above its row.
import { addresses, bool, hostName, hostPorts, int, level, socketDir, url, urls, type Env } from './config-env.js';

export interface Setting {
  /** the default as the variable would be written; null: none, or computed (see `shown`) */
  readonly def: number | boolean | string | null;
  /** the default as the reference shows it, when `def` does not say it */
  readonly shown?: string;
  /** the accepted range of an integer */
  readonly min?: number;
  readonly max?: number;
  /** the accepted URL schemes */
  readonly schemes?: readonly string[];
  /** the heading it is listed under in docs/configuration.md */
  readonly topic: string;
  /** what it does (Markdown, one paragraph) */
  readonly doc: string;
}

const SERVER = 'Server';
const REDIS = 'Redis';
const LIMITS = 'Rate limits and sandboxes';
const BODIES = 'Requests and responses';
const WRITES = 'Writes';
const CACHES = 'Caches and the worker pool';
const FALLBACK = 'Reads while the index is away';
const LIVENESS = 'Liveness';
const OPS = 'Logs, metrics and the change feed';
const HELD = 'Held requests (`Prefer: wait`)';
const DISCOVERY = 'Discovery for other tools';

export const SETTINGS = {
  NODE_ENV: { def: 'development', topic: SERVER, doc: '`development`, `production` or `test`' },
  PORT: { def: 8080, min: 0, max: 65535, topic: SERVER, doc: 'listen port; `0`: an ephemeral port the kernel picks (the banner names it; with `WORKERS` > 1 the other threads share the port the first one got)' },
  // contract default: loopback only
  HOST: { def: '127.0.0.1', topic: SERVER, doc: 'listen address' },
  // one uWS thread per core, less one left to Redis, PostgreSQL and the OS
  // (docs/decisions/threads-and-pool.md)
  WORKERS: { def: null, shown: 'cores − 1 (min 1)', min: 1, max: 256, topic: SERVER, doc: 'uWS threads sharing the port' },
  ALLOW_UWS_FALLBACK: { def: false, topic: SERVER, doc: 'start even if uWebSockets.js\'s native binary does not load (its JavaScript fallback is slow)' },
  ADMIN_API_KEY: { def: null, shown: 'generated and printed unless `NODE_ENV=production`', topic: SERVER, doc: 'admin key (Bearer, or `POST /admin/session`), at least 16 characters; required in production' },
  DATABASE_URL: { def: 'postgres://postgres@127.0.0.1:5440/registry', schemes: ['postgres:', 'postgresql:'], topic: SERVER, doc: 'PostgreSQL, the source of truth' },
  TRUSTED_PROXIES: { def: null, topic: SERVER, doc: 'exact IP addresses of reverse proxies on other hosts whose `X-Forwarded-For` / `X-Real-IP` name the client over TCP (the right-most untrusted hop); no client may reach the server from such an address (docs/operations.md, "Behind a reverse proxy")' },
  PROXY_SOCKET_DIR: { def: null, topic: SERVER, doc: 'a directory (0700, this user\'s) where each uWS thread listens on `registry-<thread>.sock` for the shipped proxy: `X-Forwarded-For` / `X-Real-IP` are believed on these sockets only; unset: none (`make run` sets `.local/run`)' },
  SHUTDOWN_GRACE_MS: { def: 10_000, min: 0, max: 600_000, topic: SERVER, doc: 'SIGTERM drain time, ms' },
  ADMIN_PAGE_SIZE: { def: 20, min: 1, max: 500, topic: SERVER, doc: 'sandboxes per admin list page' },
  SESSION_IDLE_SECONDS: { def: 30 * 60, min: 60, max: 86400 * 7, topic: SERVER, doc: 'admin session: idle lifetime, seconds' },
  SESSION_ABSOLUTE_SECONDS: { def: 12 * 3600, min: 60, max: 86400 * 30, topic: SERVER, doc: 'admin session: absolute lifetime, seconds' },
  // contract: Secure unless configured off
  COOKIE_SECURE: { def: true, topic: SERVER, doc: '`Secure` on the admin cookie (`make run` and the tests set `false` for local http)' },

  REDIS_URL: { def: 'redis://127.0.0.1:6390', schemes: ['redis:', 'rediss:'], topic: REDIS, doc: 'Redis, the derived index and counters' },
  REDIS_CLUSTER_NODES: { def: null, topic: REDIS, doc: '`host:port,…` seeds: Redis Cluster mode' },
  REDIS_KEY_PREFIX: { def: '', topic: REDIS, doc: 'prefix of every Redis key (`[a-zA-Z0-9:_-]`; tests use it to share one Redis)' },
  REDIS_REPLICA_URLS: { def: null, schemes: ['redis:', 'rediss:'], topic: REDIS, doc: '`redis://…,redis://…`: read-only replicas of `REDIS_URL`; searches and `GET /services/{id}` go to them in turn, everything that writes stays on the primary (standalone mode only)' },
  REDIS_CLUSTER_REPLICA_READS: { def: false, topic: REDIS, doc: 'cluster mode: the same pure reads go to the replicas of each key\'s primary (`EVALSHA_RO`), and an index write waits (`WAIT`) for its primary\'s replicas before its 2xx' },
  // a sick replica costs a write at most this, then serves it stale until it catches up
  // (docs/decisions/read-replicas.md)
  REDIS_REPLICA_WAIT_MS: { def: 100, min: 0, max: 10_000, topic: REDIS, doc: 'with replicas (either kind): how long an index write waits (`WAIT`) for them to have it before its 2xx, ms' },
  // on: a lean connection per thread for heartbeat calls (docs/decisions/heartbeat-connection.md)
  REDIS_HEARTBEAT_LINE: { def: true, topic: REDIS, doc: 'a standalone Redis: each uWS thread sends its heartbeat calls on a connection of its own (`redis/script-line.ts`); `false`: through ioredis like every other command. A cluster always uses ioredis' },

  TIERS: { def: 'free=60,pro=600,enterprise=6000', topic: LIMITS, doc: 'tiers and their requests per minute (`name=N,…`)' },
  // contract: new sandboxes are `free`
  TIER_MAX_SERVICES: { def: '', topic: LIMITS, doc: 'services a sandbox of each tier may hold (`name=N,…`; unnamed tiers: free 1000, pro 10000, enterprise 100000, others 1000); a registration or batch past it is 409 `QUOTA_EXCEEDED`' },
  DEFAULT_TIER: { def: 'free', topic: LIMITS, doc: 'tier of new sandboxes (one of `TIERS`)' },
  SANDBOX_CREATE_PER_MINUTE: { def: 10, min: 1, max: 1_000_000, topic: LIMITS, doc: '`POST /sandboxes` per client address per minute' },
  // slows key guessing
  LOGIN_FAILURES_PER_MINUTE: { def: 20, min: 1, max: 1_000_000, topic: LIMITS, doc: 'failed admin logins and wrong admin keys sent as `Bearer`, per client address per minute, before 429' },
  // 0: one Redis call per sandbox per event-loop turn (a flood's batch is what one turn read)
  RATE_COUNT_FLUSH_MS: { def: 0, min: 0, max: 1000, topic: LIMITS, doc: 'requests a thread answered without Redis (from an admission batch, or refused locally while the sandbox is over its limit) are recorded there in one call per sandbox at the end of each event-loop turn (0), or this many ms later; `/poll`\'s `total` lags other threads and nodes by at most this plus a Redis round trip' },
  // ~200 bytes a known key, ~130 an unknown one (docs/decisions/sandbox-keys.md)
  SANDBOX_KEY_CACHE_MB: { def: 16, min: 1, max: 65_536, topic: LIMITS, doc: 'sandbox key maps (known and unknown key hashes), in the heap bytes they occupy, per process: each uWS thread gets an equal share' },

  // short: registrations show up quickly
  SEARCH_MAX_AGE: { def: 5, min: 0, max: 86400, topic: BODIES, doc: '`Cache-Control: max-age` of anonymous searches and device queries, seconds' },
  // must be > 0 (contract)
  DISCOVERY_MAX_AGE: { def: 60, min: 1, max: 86400, topic: BODIES, doc: 'max-age and shared-cache lifetime of `/services/{id}[/replacements]`, seconds' },
  MAX_BODY_BYTES: { def: 64 * 1024, min: 1024, max: 16 * 1024 * 1024, topic: BODIES, doc: 'request body limit (413 beyond)' },
  // 1,000 registrations of a typical size fit 1 MiB; 4 leaves room for larger ones
  MAX_BATCH_BODY_BYTES: { def: 4 * 1024 * 1024, min: 1024, max: 64 * 1024 * 1024, topic: BODIES, doc: 'body limit of the batch routes (`POST …/services/batch`, 1–1000 registrations; 413 beyond)' },
  // every body of the API is 3-4 levels deep; 32 leaves room
  MAX_JSON_DEPTH: { def: 32, min: 1, max: 1000, topic: BODIES, doc: 'deepest nesting of arrays and objects in a JSON body (400 `BAD_JSON` beyond)' },

  // 2 ms beat 0 at 64 writers (docs/decisions/group-commit.md; bench/README.md, "Writes against
  // pgbench")
  GROUP_COMMIT_WINDOW_MS: { def: 2, min: 0, max: 1000, topic: WRITES, doc: 'group commit of registrations, patches and deletions (a statement per kind): how long the first write of a batch waits for others, ms; 0: a batch is what arrived within one event-loop turn' },
  GROUP_COMMIT_MAX_BATCH: { def: 256, min: 1, max: 1000, topic: WRITES, doc: 'group commit: most writes of one kind per statement (a full batch goes at once)' },
  // 4 of the thread's 10 connections: searches, patches and deletes keep the others
  GROUP_COMMIT_CONCURRENCY: { def: 4, min: 1, max: 10, topic: WRITES, doc: 'group commit: statements in flight per uWS thread, all kinds together (of its 10 PostgreSQL connections)' },
  OUTBOX_SWEEP_MS: { def: 1000, min: 50, max: 600_000, topic: WRITES, doc: 'how often writes whose index update did not happen are re-applied, ms' },
  OUTBOX_REBUILD_BACKLOG: { def: 50_000, min: 0, max: 1_000_000_000, topic: WRITES, doc: 'an import left at least this many writes unindexed (and a tenth of the registry or more): once it has written nothing for 3 s, a server rebuilds the index to cover them instead of applying them one by one; 0: never' },

  // 0 disables the pool
  HEAVY_INTERSECTION_THRESHOLD: { def: 5_000, min: 0, max: 100_000_000, topic: CACHES, doc: 'smallest-set size above which an intersection of several sets runs in the worker pool (unless the near cache holds them as bitmaps: then inline); 0: no pool at all' },
  POOL_THREADS: { def: 1, min: 1, max: 64, topic: CACHES, doc: 'worker pool threads' },
  POOL_MAX_QUEUE: { def: 64, min: 1, max: 100_000, topic: CACHES, doc: 'worker pool queue bound: with the queue full, near-cache intersections run on the serving thread, and a search that must take Redis\'s heavy path answers 503' },
  RESULT_CACHE_ENTRIES: { def: 10_000, min: 0, max: 10_000_000, topic: CACHES, doc: 'in-process result cache: entries per thread (0 disables it)' },
  // pub/sub invalidates within ms; this is the safety net
  RESULT_CACHE_TTL_MS: { def: 2000, min: 10, max: 3_600_000, topic: CACHES, doc: 'result cache: bound on a cached page\'s staleness should an invalidation message be lost, ms' },
  RESULT_CACHE_MB: { def: 64, min: 1, max: 65_536, topic: CACHES, doc: 'result cache: bytes for the whole process, split evenly over the uWS threads (an eighth for replacement lists), counted as the bytes entries occupy; the oldest go first' },
  // 1,000,000 production services take ~0.7 GB of it (docs/decisions/near-cache.md)
  NEAR_CACHE_MB: { def: 1024, min: 0, max: 1_048_576, topic: CACHES, doc: 'near cache of index sets and documents, for the whole process, split evenly over the uWS threads; oldest out beyond it, with a second chance for what was read since (CLOCK), counted as the bytes entries occupy; 0 turns it off (every uncached search runs in Redis)' },
  // why: docs/decisions/near-cache-warming.md
  NEAR_WARM_PERCENT: { def: 75, min: 0, max: 95, topic: CACHES, doc: 'after a start, a rebuild or a lost delta subscription, production\'s documents are read into the near cache in the background, in seq order, until it holds this share of its budget (percent); 0 turns it off (cold pages fill it as they are read)' },
  // one GET per namespace held, per thread and period
  NEAR_CHECK_MS: { def: 1000, min: 0, max: 3_600_000, topic: CACHES, doc: 'period of the near cache\'s version check against Redis: a lost final delta is stale for at most 2 × this; 0 turns it off' },
  // why sets are read in slices: docs/decisions/near-cache.md
  NEAR_LOAD_WHOLE_MEMBERS: { def: 65_536, min: 0, max: 1_000_000_000, topic: CACHES, doc: 'largest set the near cache (and the pool path) reads from Redis in one call; a larger one is read in slices of NEAR_LOAD_SLICE_BUCKETS buckets, one call each, so that no read holds Redis for long' },
  NEAR_LOAD_SLICE_BUCKETS: { def: 32, min: 1, max: 1_000_000, topic: CACHES, doc: 'buckets of 4,096 seqs a slice of a large set spans (at most 8 KB of members each)' },
  // why: docs/decisions/whole-answers.md
  NEAR_RESULT_ADMIT: { def: 4, min: 0, max: 1_000_000, topic: CACHES, doc: 'cold pages of one query of several sets (or of one sparse set) before the near cache keeps its whole answer as one buffer, until the next write to its namespace (at most an eighth of the thread\'s share of NEAR_CACHE_MB each); 0 turns it off' },

  // a few connections: the fallback serves while Redis is away, and its queries must not
  // take the connections that writes need (docs/decisions/fallback-reads.md)
  FALLBACK_PG_CONNECTIONS: { def: 4, min: 0, max: 1000, topic: FALLBACK, doc: 'PostgreSQL connections per process for discovery reads while the Redis index cannot answer (Redis unreachable, the index missing or being rebuilt), split evenly over the uWS threads (at least one each); `0`: no fallback, those reads answer 503 as the index does' },
  // twice the connections: a burst waits for a connection briefly, a flood is refused
  FALLBACK_MAX_QUERIES: { def: 8, min: 1, max: 100_000, topic: FALLBACK, doc: 'fallback statements per process in flight (running or waiting for one of those connections), split evenly over the uWS threads (at least one each); one more answers 503 `OVERLOADED` with `Retry-After: 1` at once, never queued' },
  // a page from the GIN index or the namespace\'s seq order takes milliseconds; this is for a sick database
  FALLBACK_STATEMENT_MS: { def: 2000, min: 10, max: 600_000, topic: FALLBACK, doc: 'PostgreSQL `statement_timeout` of a fallback statement, ms: a slower one is cancelled and the read answers 503 with `Retry-After`' },

  // ~300 bytes a token (docs/decisions/heartbeat-tokens.md)
  HEARTBEAT_TOKEN_CACHE_MB: { def: 16, min: 1, max: 65_536, topic: LIVENESS, doc: 'heartbeat token memory (tokens Redis accepted; tokens it refused, for 10 s), in the heap bytes they occupy, per process: each uWS thread gets an equal share, 3/4 accepted, 1/4 refused. Size it at ~300 B × the leased services a node hears from (320 for 1,000,000); a token not held costs a SHA-256 and the general path' },
  // each pass costs one Lua call per lease shard held
  LEASE_SWEEP_MS: { def: 250, min: 10, max: 60_000, topic: LIVENESS, doc: 'longest wait between two passes of the lease sweeper; a pass runs at the earliest deadline left in the shards held, back to back while passes find expiries, and at the latest this long after the last one' },
  // takeover within this + a period stays inside the contract's ttl + 2 s only below ~1.5 s
  LEASE_LOCK_MS: { def: 1500, min: 100, max: 60_000, topic: LIVENESS, doc: 'TTL of a lease shard\'s sweep lock: the shards of a node that died are taken over within this plus `LEASE_SWEEP_MS`' },
  LEASE_SWEEP_BATCH: { def: 500, min: 1, max: 10_000, topic: LIVENESS, doc: 'due leases one sweep call lists from a shard, and expiries per durable transaction' },
  // 2 rather than 4 (docs/decisions/expiry-sweeper.md; bench/README.md, "Liveness")
  LEASE_SWEEP_PARALLEL: { def: 2, min: 1, max: 16, topic: LIVENESS, doc: 'durable expiry transactions one node runs at once: the sweeper never holds more PostgreSQL connections than this, so a mass expiry cannot starve writes' },

  LOG_LEVEL: { def: 'info', topic: OPS, doc: 'pino level: `fatal` `error` `warn` `info` `debug` `trace` `silent`' },
  // off: it costs hot-path throughput (docs/decisions/metrics-and-logs.md)
  ACCESS_LOG: { def: false, topic: OPS, doc: 'one log line per request' },
  ACCESS_LOG_LEVEL: { def: 'info', topic: OPS, doc: 'level of the access lines (written only at or above `LOG_LEVEL`)' },
  // on its own listener, unauthenticated
  METRICS_ENABLED: { def: true, topic: OPS, doc: '`false`: no `/metrics` listener and no per-request accounting' },
  // loopback: scrapers on this machine (or a proxy) only
  METRICS_HOST: { def: '127.0.0.1', topic: OPS, doc: 'the `/metrics` listener\'s address, apart from the public port' },
  // the Prometheus exporter port OpenTelemetry uses
  METRICS_PORT: { def: 9464, min: 0, max: 65535, topic: OPS, doc: 'the `/metrics` listener\'s port (`0`: any free port)' },
  // delivery latency against one tiny query per tick
  CHANGES_POLL_MS: { def: 250, min: 10, max: 60_000, topic: OPS, doc: 'change feed: how often a thread with open streams looks for new events, ms' },
  // keeps proxies from closing idle streams
  CHANGES_HEARTBEAT_MS: { def: 15_000, min: 100, max: 3_600_000, topic: OPS, doc: 'change feed: a comment line to every idle stream this often, ms' },
  // a week of resumable history
  CHANGES_RETENTION_HOURS: { def: 168, min: 1, max: 24 * 365, topic: OPS, doc: 'change feed: how long events are kept, hours (the resume horizon)' },
  // each stream holds a socket and a few KiB
  CHANGES_MAX_STREAMS: { def: 10_000, min: 1, max: 1_000_000, topic: OPS, doc: 'change feed: open streams per process, all uWS threads together (429 beyond)' },
  // a few tabs or services behind one NAT; one address cannot take the total
  CHANGE_STREAMS_PER_ADDRESS: { def: 32, min: 1, max: 1_000_000, topic: OPS, doc: 'change feed: open streams per client address, per process (429 beyond; behind the shipped proxy, give the server `PROXY_SOCKET_DIR`)' },

  // contract default; the shipped proxy waits 30 s longer than this (scripts/proxy.sh)
  WAIT_MAX_SECONDS: { def: 300, min: 1, max: 3600, topic: HELD, doc: 'longest wait a held request gets, seconds: `Prefer: wait=N` above it applies this' },
  // contract default: a NAT of devices, never the whole process
  HELD_PER_ADDRESS: { def: 1000, min: 1, max: 10_000_000, topic: HELD, doc: 'held requests per client address, per process, all uWS threads together (429 beyond; behind the shipped proxy, give the server `PROXY_SOCKET_DIR`)' },
  // contract default; a held request costs ~1.3 KB of RSS, its connection included (bench/README.md, "Held requests")
  HELD_MAX: { def: 100_000, min: 1, max: 10_000_000, topic: HELD, doc: 'held requests per process, all uWS threads together (429 beyond). Each holds a socket: the open-files limit caps them too' },

  // Prometheus asks for a whole list and cannot page; a bound keeps one answer's memory and
  // time in reach of a request (10,000 targets: a few MB of JSON)
  DISCOVERY_MAX_TARGETS: { def: 10_000, min: 1, max: 1_000_000, topic: DISCOVERY, doc: 'most services `GET /discovery/prometheus` and the Consul-compatible catalog (`/v1/…`) list in one answer (422 `TOO_MANY_TARGETS` beyond); DNS answers from at most this many' },
  // Consul's own default
  CONSUL_DATACENTER: { def: 'dc1', topic: DISCOVERY, doc: 'the one datacenter the Consul-compatible catalog names (`[a-zA-Z0-9_-]`, 1–64); `?dc=` another → 404' },
  // contract: loopback
  DNS_HOST: { def: '127.0.0.1', topic: DISCOVERY, doc: 'the DNS server\'s address (UDP and TCP); one serving thread per process binds it' },
  // Consul's DNS port
  DNS_PORT: { def: '8600', topic: DISCOVERY, doc: 'the DNS server\'s port (UDP and TCP, `0`: a free one the kernel picks); `off`: no DNS server' },
  DNS_DOMAIN: { def: 'registry.', topic: DISCOVERY, doc: 'the zone the DNS server is authoritative for: `<capability>.service.<domain>`, `_<capability>._tcp.service.<domain>`, `<id>.addr.<domain>`' },
  // short: a deletion or a turn to critical leaves resolvers' caches within seconds
  DNS_TTL: { def: 5, min: 0, max: 2_147_483_647, topic: DISCOVERY, doc: 'TTL of every DNS record and the SOA\'s negative-caching minimum, seconds' },
  DNS_MAX_RECORDS: { def: 1000, min: 1, max: 65_535, topic: DISCOVERY, doc: 'most answer records in one DNS answer over TCP (UDP answers fit 512 bytes or the EDNS0 size, with TC when records were left out)' },
  // a resolver behind one address asks far less; a forged flood gets no more than this
  DNS_RATE_PER_ADDRESS: { def: 200, min: 0, max: 1_000_000_000, topic: DISCOVERY, doc: 'UDP answers a second per client address; beyond, every second query gets an empty truncated answer (TC: resolvers retry over TCP) and the rest none' },
} as const satisfies Record<string, Setting>;

export type SettingName = keyof typeof SETTINGS;
type S = typeof SETTINGS;
type Named<P> = { [K in SettingName]: S[K] extends P ? K : never }[SettingName];
type IntName = Named<{ min: number }>;
type BoolName = Named<{ def: boolean }>;
type TextName = Exclude<Named<{ def: string }>, Named<{ schemes: readonly string[] }>>;
type UrlName = Named<{ def: string; schemes: readonly string[] }>;
type ListName = Named<{ def: null }>;

/** Setting's `def` read through the wide interface (SETTINGS' rows have literal types). */
const row = (name: SettingName): Setting => SETTINGS[name];
const text = (name: SettingName): string => String(row(name).def ?? '');

/** The parsers of config-env.ts bound to `env`, each taking its default and range from the table. */
export function readers(env: Env) {
  return {
    int: (name: IntName, def?: number): number => {
      const s = row(name);
      const d = def ?? (s.def as number | null);
      if (d === null) throw new Error(`${name} has no default in SETTINGS: pass one`);
      return int(env, name, d, s.min!, s.max!);
    },
    bool: (name: BoolName): boolean => bool(env, name, row(name).def as boolean),
    level: (name: 'LOG_LEVEL' | 'ACCESS_LOG_LEVEL'): string => level(env, name, text(name)),
    url: (name: UrlName): string => url(env, name, text(name), [...row(name).schemes!]),
    hostName: (name: 'HOST' | 'METRICS_HOST' | 'DNS_HOST'): string => hostName(env, name, text(name)),
    hostPorts: (name: 'REDIS_CLUSTER_NODES'): string[] => hostPorts(env, name),
    urls: (name: 'REDIS_REPLICA_URLS'): string[] => urls(env, name, [...row(name).schemes!]),
    addresses: (name: 'TRUSTED_PROXIES'): string[] => addresses(env, name),
    socketDir: (name: 'PROXY_SOCKET_DIR'): string => socketDir(env, name),
    /** a variable config.ts checks itself: its value, or the table's default */
    raw: (name: TextName | ListName): string => env[name] || text(name),
  };
}
