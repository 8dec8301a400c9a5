// Every Redis key is built here (model: BullMQ queue-keys.ts). Keys of one namespace share
// the hash tag {ns}, so multi-key scripts stay in one Redis Cluster slot. Index keys also
// carry the index generation, so a rebuild writes fresh keys and switches over at once.
// The key schema table is in redis/README.md.
import { documentMembers, filterSuffixes, MEMBER_RULE } from './dimensions.js';
import { serviceObject, type ServiceRecord } from './service.js';

export const PRODUCTION = 'production';

/**
 * Format of an index generation's keys, in the name of its namespace markers (`ver:<n>`).
 * 1 (marker `ver`): sorted sets. 2: bucketed sets (redis/lib/buckets.lua). 3: the `h`
 * (healthy) set and the `health` field of documents. 4: the capability tombstones (`ct:<cap>`,
 * `ctcaps`: the Consul catalog's index), which a server of format 3 would not keep. Raise it
 * with every change a server of the other format would misread or not maintain.
 */
export const INDEX_FORMAT = 5;

/**
 * Leases are spread over this many shards by service id (liveness/redis-lease.ts), each one
 * sorted set of deadlines and one sweep lock: one namespace (production) can hold most
 * leases, so shards do not follow namespaces. Fixed: another number would move every lease.
 */
export const LEASE_SHARDS = 16;

export class Keys {
  constructor(readonly prefix: string) {}

  /** current index generation (global); missing = index not built */
  gen(): string {
    return `${this.prefix}reg:gen`;
  }
  /** generation being built by a running rebuild; writers apply to it too */
  building(): string {
    return `${this.prefix}reg:building`;
  }
  rebuildLock(): string {
    return `${this.prefix}reg:rebuild-lock`;
  }
  /** the highest outbox id the live generation's rebuild saw (reindex/backlog.ts counts past it) */
  outboxCovered(): string {
    return `${this.prefix}reg:outbox-covered`;
  }
  /** "<prefix>reg:{ns}:<gen>:" — ARGV base of the index scripts */
  base(ns: string, gen: string): string {
    return `${this.prefix}reg:{${ns}}:${gen}:`;
  }
  /** The namespace whose base (see base()) in generation `gen` is `base`; null: another generation's, or not a base. */
  nsOf(base: string, gen: string): string | null {
    const head = `${this.prefix}reg:{`;
    const tail = `}:${gen}:`;
    if (!base.startsWith(head) || !base.endsWith(tail) || base.length <= head.length + tail.length) return null;
    return base.slice(head.length, base.length - tail.length);
  }
  /**
   * The namespace marker and version counter. Its name carries the index format
   * (INDEX_FORMAT) and the member rule's fingerprint (MEMBER_RULE, dimensions.ts): a
   * generation built in another format or under another rule has no such key, so every
   * script answers "not indexed" there and the server rebuilds, as after a loss of Redis.
   */
  ver(ns: string, gen: string): string {
    return this.verAt(this.base(ns, gen));
  }
  /** ver() of the namespace whose base (see base()) is given */
  verAt(base: string): string {
    return base + 'ver:' + INDEX_FORMAT + '.' + MEMBER_RULE;
  }
  docs(ns: string, gen: string): string {
    return this.docsAt(this.base(ns, gen));
  }
  /** docs() of the namespace whose base (see base()) is given */
  docsAt(base: string): string {
    return base + 'docs';
  }
  all(ns: string, gen: string): string {
    return this.base(ns, gen) + 'all';
  }
  /** a set of the index: `suffix` as filterSuffixes() and memberSuffixes() name them */
  set(ns: string, gen: string, suffix: string): string {
    return this.base(ns, gen) + suffix;
  }
  /** pattern matching every index key of one generation (for clean-up) */
  genPattern(gen: string): string {
    return `${this.prefix}reg:{*}:${gen}:*`;
  }

  // ---- sandboxes ----
  /** hash: name, tier, limit of one sandbox (read by the rate-limit script) */
  sandbox(uuid: string): string {
    return `${this.prefix}sb:{${uuid}}`;
  }
  /** string: sha256(key) hex -> sandbox uuid */
  sandboxKey(hash: string): string {
    return `${this.prefix}sbkey:${hash}`;
  }
  /** hash: 5-second bucket number -> admitted requests (the sliding rate-limit window) */
  rateWindow(uuid: string): string {
    return `${this.prefix}rl:{${uuid}}:w`;
  }
  /** hash: 5-second bucket number -> all requests (the 72-bucket poll history) */
  rateHistory(uuid: string): string {
    return `${this.prefix}rl:{${uuid}}:h`;
  }
  /** hash: total, rejected — cumulative counters */
  rateTotals(uuid: string): string {
    return `${this.prefix}rl:{${uuid}}:t`;
  }
  /** string counter: failed admin logins from one client address in one minute */
  loginFailures(addr: string, minute: number): string {
    return `${this.prefix}throttle:login:${addr}:${minute}`;
  }
  /** string counter: sandbox creations by one client address in one minute */
  createThrottle(addr: string, minute: number): string {
    return `${this.prefix}throttle:create:${addr}:${minute}`;
  }

  // ---- admin ----
  /** string: JSON of one admin browser session (id, csrf, createdAt); TTL = idle expiry */
  adminSession(id: string): string {
    return `${this.prefix}admin:sess:${id}`;
  }

  // ---- liveness (src/hot/liveness/): sharded by service id, each shard one cluster slot ----
  /** hash: service id -> lease record (redis/lib/lease.lua; read by redis/replies.ts leaseRecord) */
  leases(shard: number): string {
    return `${this.prefix}lv:{${shard}}:l`;
  }
  /** sorted set: service id -> when the sweeper must look at it (ms): a passing lease's deadline, a critical one's deregistration */
  deadlines(shard: number): string {
    return `${this.prefix}lv:{${shard}}:d`;
  }
  /** string: the node sweeping this shard (a token), with a TTL */
  sweepLock(shard: number): string {
    return `${this.prefix}lv:{${shard}}:lock`;
  }

  // ---- pub/sub (channels are not keys; the prefix keeps test runs apart) ----
  invalidationChannel(): string {
    return `${this.prefix}reg:changes`;
  }
}

/** Set suffixes (relative to base) a service belongs to: the dimensions' rule (dimensions.ts) over its document. */
export function memberSuffixes(s: ServiceRecord): string[] {
  return documentMembers(serviceObject(s));
}

export { filterSuffixes };
