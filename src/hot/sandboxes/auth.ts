// A sandbox route's credential and its count: the key must be that sandbox's
// (key-resolver.ts), then the request counts against the sandbox's rate limit
// (ratelimit/limiter.ts); a route with a body checks the key alone before reading it (verify). SandboxAuth is the rate limiter with the key check on top, so the hot
// paths (heartbeats' limitNow, a keyed search's resolvedNow) call straight into the part
// they need.
import type { TierConfig } from '../config.js';
import { ApiError } from '../domain/errors.js';
import type { Keys } from '../domain/keys.js';
import type { Headers } from '../http/types.js';
import type { RedisClient } from '../redis/client.js';
import type { Pool } from '../pg/pool.js';
import { KeyResolver, type KeyResolverOptions } from './key-resolver.js';
import { bearerKey } from './keys.js';
import { writeSandboxMeta } from './meta.js';
import { getSandbox } from './store.js';
import { RateLimiter, type RateLimiterOptions } from '../ratelimit/index.js';

export type SandboxAuthOptions = KeyResolverOptions & RateLimiterOptions;

export class SandboxAuth extends RateLimiter {
  private readonly resolver: KeyResolver;

  constructor(pool: Pool, redis: RedisClient, keys: Keys, tiers: TierConfig, o: SandboxAuthOptions = {}) {
    super(pool, redis, keys, tiers, o);
    // the resolver counts into the same stats object (metrics read one)
    this.resolver = new KeyResolver(pool, redis, keys, tiers, this.stats, o);
  }

  protected async reseed(uuid: string): Promise<boolean> {
    const row = await getSandbox(this.pool, uuid);
    if (!row) return false;
    await writeSandboxMeta(this.redis, this.keys, row, this.tiers[row.tier] ?? 0, '');
    return true;
  }

  /** bytes held by the key maps (metrics, tests) */
  keyMapBytes(): number {
    return this.resolver.keyMapBytes();
  }

  /** The sandbox uuid a key belongs to, or null for a malformed or unknown key. */
  resolve(key: string): Promise<string | null> {
    return this.resolver.resolve(key);
  }

  /** The sandbox of a key this thread has resolved before and still holds; undefined: ask resolve(). */
  resolvedNow(key: string): string | undefined {
    return this.resolver.resolvedNow(key);
  }

  /**
   * For /sandbox/{uuid}/... routes: the key must be that sandbox's. Unknown and foreign
   * uuids look the same (401). Counts the request; throws 429 over the limit.
   */
  async admit(authorization: string, uuid: string): Promise<Headers> {
    return this.limitOrThrow(await this.owner(authorization, uuid));
  }

  /**
   * admit() for a request that counts as `n` (a batch of n registrations): all n fit the
   * window or none is counted as admitted (429; the refusal counts all n as rejected).
   */
  async admitMany(authorization: string, uuid: string, n: number): Promise<Headers> {
    return this.limitManyOrThrow(await this.owner(authorization, uuid), n);
  }

  /**
   * owner()'s check alone, for a request whose body is still to be read (route.ts guard):
   * nothing is counted (admit() or admitMany() counts once the body is read). Answered
   * without a promise when this thread can tell: no key, a key refused by its text or
   * remembered unknown, a key it has resolved (401 thrown, or undefined).
   */
  verify(authorization: string, uuid: string): Promise<void> | undefined {
    const key = bearerKey(authorization);
    const now = key ? this.resolver.resolveNow(key) : null;
    if (now === undefined) return this.owner(authorization, uuid).then(() => undefined);
    if (now === null || now !== uuid.toLowerCase()) throw keyRequired();
    return undefined;
  }

  /** The sandbox of the request's key when it is `uuid`'s; 401 otherwise. */
  private async owner(authorization: string, uuid: string): Promise<string> {
    const key = bearerKey(authorization);
    const owner = key ? await this.resolve(key) : null;
    if (!owner || owner !== uuid.toLowerCase()) throw keyRequired();
    return owner;
  }
}

function keyRequired(): ApiError {
  return new ApiError('SANDBOX_KEY_REQUIRED', [], { 'WWW-Authenticate': 'Bearer' });
}
