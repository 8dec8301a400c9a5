// Resolving a sandbox key and counting the request against the sandbox's rate limit.
// Key -> uuid goes through an in-process map, then Redis, then PostgreSQL's unique index on
// the key hash (and repopulates Redis); never a table scan. A key is immutable, so the
// in-process map never goes stale; the limit is read by the Lua script on every request.
import { timingSafeEqual } from 'node:crypto';
import { ApiError } from '../domain/errors.js';
import type { Keys } from '../domain/keys.js';
import type { Headers } from '../http.js';
import { isRedisUnavailable, type RedisClient } from '../redis/client.js';
import type { Pool } from '../store/pool.js';
import { writeSandboxMeta } from '../store/sandbox-meta.js';
import { getSandbox, sandboxByKeyHash } from '../store/sandboxes.js';
import type { TierConfig } from '../config.js';
import { hashKey, KEY_RE } from './keys.js';
import { countRateLimited } from '../metrics.js';

export const RATELIMIT_DRAFT = 'draft-ietf-httpapi-ratelimit-headers-10';
const CACHE_MAX = 50_000;

export interface RateResult {
  admitted: boolean;
  limit: number;
  used: number;
  retryAfter: number;
  reset: number;
}

export class SandboxAuth {
  private cache = new Map<string, { uuid: string; hash: Buffer }>();

  constructor(
    readonly pool: Pool,
    readonly redis: RedisClient,
    readonly keys: Keys,
    readonly tiers: TierConfig,
  ) {}

  /** The sandbox uuid a key belongs to, or null for a malformed or unknown key. */
  async resolve(key: string): Promise<string | null> {
    if (!KEY_RE.test(key)) return null;
    const hash = hashKey(key);
    const hex = hash.toString('hex');
    const hit = this.cache.get(hex);
    if (hit && timingSafeEqual(hit.hash, hash)) return hit.uuid;
    // Redis away: PostgreSQL answers instead. PostgreSQL away too: the error propagates (503)
    // rather than calling a valid key unknown and serving it production's answers
    let uuid = await this.redis.get(this.keys.sandboxKey(hex)).catch((err: unknown) => {
      if (isRedisUnavailable(err)) return null;
      throw err;
    });
    if (!uuid) {
      const row = await sandboxByKeyHash(this.pool, hash);
      if (!row || !timingSafeEqual(row.key_hash, hash)) return null;
      uuid = row.uuid;
      await writeSandboxMeta(this.redis, this.keys, row.uuid, row.name, row.tier, this.tiers[row.tier] ?? 0, hex).catch(() => undefined);
    }
    if (this.cache.size >= CACHE_MAX) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(hex, { uuid, hash });
    return uuid;
  }

  /** Count one request; the result says whether it is admitted. */
  async count(uuid: string): Promise<RateResult> {
    const k = this.keys;
    const run = async () => (await this.redis.rateLimit(k.sandbox(uuid), k.rateWindow(uuid), k.rateHistory(uuid), k.rateTotals(uuid), Date.now())) as number[];
    let r = await run();
    if (r[0] === -1) {
      // Redis lost the sandbox's hash (flushed or restarted): PostgreSQL still knows it
      const row = await getSandbox(this.pool, uuid);
      if (!row) throw new ApiError('UNAUTHORIZED', 'unknown sandbox');
      await writeSandboxMeta(this.redis, k, row.uuid, row.name, row.tier, this.tiers[row.tier] ?? 0, '');
      r = await run();
    }
    return { admitted: r[0] === 1, limit: r[1]!, used: r[2]!, retryAfter: r[3]!, reset: r[4]! };
  }

  /**
   * For /sandbox/{uuid}/... routes: the key must be that sandbox's. Unknown and foreign
   * uuids look the same (401). Counts the request; throws 429 over the limit.
   */
  async admit(authorization: string, uuid: string): Promise<Headers> {
    const key = bearerKey(authorization);
    const owner = key ? await this.resolve(key) : null;
    if (!owner || owner !== uuid.toLowerCase()) {
      throw new ApiError('UNAUTHORIZED', 'a valid API key of this sandbox is required (Authorization: Bearer <key>)', { 'WWW-Authenticate': 'Bearer' });
    }
    return this.limitOrThrow(owner);
  }

  async limitOrThrow(uuid: string): Promise<Headers> {
    let r: RateResult;
    try {
      r = await this.count(uuid);
    } catch (err) {
      // Redis unreachable: the request is admitted uncounted, without RateLimit fields — fail
      // open (docs/decisions.md, "Rate limiting while Redis is away"): the key was verified,
      // and a limiter outage must not turn into a registry outage for every sandbox
      if (isRedisUnavailable(err)) return [];
      throw err;
    }
    const h = rateHeaders(r);
    if (!r.admitted) {
      // the script reports the limit, not the tier: the tier is the one with that limit
      countRateLimited(Object.keys(this.tiers).find((t) => this.tiers[t] === r.limit) ?? 'unknown');
      throw new ApiError('RATE_LIMITED', `rate limit of ${r.limit} requests per minute exceeded; retry in ${r.retryAfter} s`, Object.fromEntries([...h, ['Retry-After', String(r.retryAfter)]]));
    }
    return h;
  }
}

export function bearerKey(authorization: string): string {
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
  return m ? m[1]! : '';
}

/** RateLimit-Policy and RateLimit fields (draft-ietf-httpapi-ratelimit-headers-10). */
export function rateHeaders(r: RateResult): Headers {
  const remaining = Math.max(0, r.limit - r.used);
  return [
    ['RateLimit-Policy', `"sandbox";q=${r.limit};w=60`],
    ['RateLimit', `"sandbox";r=${remaining};t=${r.admitted ? r.reset : r.retryAfter}`],
  ];
}
