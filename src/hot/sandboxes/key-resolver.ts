// Resolving a sandbox key to its sandbox (contract "Sandbox API key"). Key -> uuid goes
// through an in-process map, then Redis, then — only while the Redis index is incomplete (no
// live generation known, a rebuild under way, sandbox keys waiting in the outbox, or its
// marker gone) — PostgreSQL's unique index on the key hash (and repopulates Redis); never a
// table scan. The index holds every key hash, so while it is complete a miss there is the
// answer: an unknown key costs PostgreSQL nothing. A key is immutable, so the in-process map
// never goes stale (unknown keys are remembered for UNKNOWN_KEY_MS). The maps are bounded by
// the bytes they occupy (key-maps.ts), a fixed share of the process's SANDBOX_KEY_CACHE_MB
// per thread: 3/4 for known keys, 1/4 for unknown ones. Counting the request is
// rate-limiter.ts's; auth.ts puts the two together.
import type { TierConfig } from '../config.js';
import type { Keys } from '../domain/keys.js';
import { isRedisUnavailable } from '../domain/outage.js';
import type { RedisClient } from '../redis/client.js';
import type { Pool } from '../pg/pool.js';
import { writeSandboxMeta } from './meta.js';
import { sandboxByKeyHash } from './store.js';
import { ByteBoundedMap } from '../domain/byte-map.js';
import { hashKey, keyShape } from './keys.js';

const UNKNOWN_KEY_MS = 10_000;

export interface KeyResolverOptions {
  /** this node's wall clock (how long an unknown key is believed unknown) */
  now?: () => number;
  /** bytes this thread's key maps may hold, all three together (default 8 MiB) */
  keyMapBytes?: number;
  /**
   * The Redis key whose presence says the index is complete (the live generation's
   * production marker), or null while it is known not to be: a miss in Redis is then no
   * answer and PostgreSQL is asked. Default: always null (PostgreSQL behind every miss).
   */
  indexMarker?: () => string | null;
}

/** What key resolution counts (part of SandboxAuth.stats: tests, metrics). */
export interface KeyStats {
  /** look-ups that went past this thread's maps (Redis, then PostgreSQL) */
  lookups: number;
  /** keys refused by their text alone (bad checksum or not key-shaped) */
  refusedByShape: number;
  /** look-ups PostgreSQL answered (the index was not complete) */
  pgLookups: number;
}

export class KeyResolver {
  /** key hash (hex) -> sandbox uuid */
  private cache: ByteBoundedMap<string>;
  /**
   * key -> its hash (hex), for keys that resolved to a sandbox: SHA-256 is a pure function,
   * so this only saves hashing (and checksumming) a key this thread has seen resolve before,
   * a visible share of an over-limit key's local 429. The sandbox is still found through
   * `cache`, by hash, as a new key's is.
   */
  private hashes: ByteBoundedMap<string>;
  /** hashes of well-formed keys the index (or PostgreSQL) did not know -> until when to believe that */
  private unknown: ByteBoundedMap<number>;
  private readonly now: () => number;
  private readonly indexMarker: () => string | null;

  constructor(
    private readonly pool: Pool,
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly tiers: TierConfig,
    private readonly stats: KeyStats,
    o: KeyResolverOptions = {},
  ) {
    this.now = o.now ?? Date.now;
    this.indexMarker = o.indexMarker ?? (() => null);
    const bytes = o.keyMapBytes ?? 8 * 1024 * 1024;
    // known keys (two maps, both per resolved key) get 3/4, unknown ones 1/4: a flood of
    // forged keys evicts other forged keys, never the keys of real sandboxes
    this.cache = new ByteBoundedMap(Math.floor((bytes * 3) / 8));
    this.hashes = new ByteBoundedMap(Math.floor((bytes * 3) / 8));
    this.unknown = new ByteBoundedMap(Math.floor(bytes / 4));
  }

  /** bytes held by the key maps (metrics, tests) */
  keyMapBytes(): number {
    return this.cache.bytes + this.hashes.bytes + this.unknown.bytes;
  }

  /** The sandbox uuid a key belongs to, or null for a malformed or unknown key. */
  async resolve(key: string): Promise<string | null> {
    // a mistyped or forged key (wrong checksum) is refused here, before any look-up
    if (keyShape(key) === 'invalid') {
      this.stats.refusedByShape++;
      return null;
    }
    const hash = hashKey(key);
    const hex = hash.toString('hex');
    // looked up by the key's hash, here and in PostgreSQL: an entry found is that hash's, so
    // there is nothing left to compare (the time a look-up takes tells about the hash of
    // the key tried, never about a stored key)
    const hit = this.cache.get(hex);
    if (hit) {
      this.remember(key, hex);
      return hit;
    }
    const unknownUntil = this.unknown.get(hex);
    if (unknownUntil !== undefined) {
      if (unknownUntil > this.now()) return null;
      this.unknown.delete(hex);
    }
    this.stats.lookups++;
    // the marker is asked beside the key (one round trip): a miss is an answer only if the
    // index it was asked of is still whole (not emptied under us since the last watch)
    const marker = this.indexMarker();
    // Redis away: PostgreSQL answers instead. PostgreSQL away too: the error propagates (503)
    // rather than calling a valid key unknown and serving it production's answers
    const [found, complete] = await Promise.all([this.redis.get(this.keys.sandboxKey(hex)), marker ? this.redis.exists(marker) : 0]).catch((err: unknown) => {
      if (isRedisUnavailable(err)) return [null, 0] as const;
      throw err;
    });
    let uuid = found;
    if (!uuid) {
      // a client repeating a wrong key (or a flood of forged ones) costs one Redis look-up
      // per UNKNOWN_KEY_MS, and PostgreSQL nothing while the index is complete (keys are
      // random and never reused: no real key is hidden by it)
      const row = complete === 1 ? null : (this.stats.pgLookups++, await sandboxByKeyHash(this.pool, hash));
      if (!row) {
        this.unknown.set(hex, this.now() + UNKNOWN_KEY_MS);
        return null;
      }
      uuid = row.uuid;
      // (Redis away: the next request tries again; a newer tier in Redis is never overwritten)
      await writeSandboxMeta(this.redis, this.keys, row, this.tiers[row.tier] ?? 0, hex).catch(() => undefined);
    }
    this.cache.set(hex, uuid);
    this.remember(key, hex);
    return uuid;
  }

  /**
   * resolve()'s answer when this thread has it without a look-up (no promise): the sandbox of
   * a key it holds, null for a key refused by its text or one remembered unknown; undefined:
   * ask resolve().
   */
  resolveNow(key: string): string | null | undefined {
    const held = this.resolvedNow(key);
    if (held !== undefined) return held;
    if (keyShape(key) === 'invalid') {
      this.stats.refusedByShape++;
      return null;
    }
    const unknownUntil = this.unknown.get(hashKey(key).toString('hex'));
    return unknownUntil !== undefined && unknownUntil > this.now() ? null : undefined;
  }

  private remember(key: string, hex: string): void {
    if (!this.hashes.has(key)) this.hashes.set(key, hex);
  }

  /**
   * The sandbox of a key this thread has resolved before and still holds, without hashing,
   * a look-up or a promise; undefined when resolve() must answer.
   */
  resolvedNow(key: string): string | undefined {
    const hex = this.hashes.get(key);
    return hex === undefined ? undefined : this.cache.get(hex);
  }
}
