// Counting a sandbox's requests against its rate limit (contract: the sliding minute of
// twelve 5-second buckets; RateLimit-Policy and RateLimit fields). The limit is read by the
// Lua script whenever the thread asks Redis: on every request below 2,000 a minute, once per
// batch above (admission.ts); requests answered from a batch are recorded in Redis once per
// event-loop turn (or RATE_COUNT_FLUSH_MS), in the turn's heartbeat call when there is one.
// Resolving the key is key-resolver.ts's; auth.ts puts the two together.
import type { TierConfig } from '../config.js';
import { ApiError } from '../domain/errors.js';
import type { Keys } from '../domain/keys.js';
import { RATE_LIMIT_ARGS } from './window.js';
import type { Headers } from '../http/types.js';
import { countRateLimited } from './metrics.js';
import { isRedisUnavailable } from '../domain/outage.js';
import type { RedisClient } from '../redis/client.js';
import { NOT_INDEXED, rateLimitReply, type RateLimitReply } from '../redis/replies.js';
import type { Pool } from '../pg/pool.js';
import { AdmissionBatches, type RateResult } from './admission.js';
import { OverLimit } from './over-limit.js';
import { PendingRecords } from './records.js';

export const RATELIMIT_DRAFT = 'draft-ietf-httpapi-ratelimit-headers-10';

export interface RateLimiterOptions {
  /**
   * how long requests answered without Redis may wait to be recorded there, in one batch
   * per sandbox (0: at the end of the event-loop turn). A poll on this thread flushes
   * first; other threads and nodes lag by at most this much (docs/decisions/rate-limits.md).
   */
  flushMs?: number;
  /** this node's wall clock (tests skew it to play a node whose clock is off) */
  now?: () => number;
  /**
   * Whether a call of this turn will carry the records waiting (the heartbeat batch on a
   * standalone Redis: HeartbeatBatch.carries()); then the turn's flush leaves them to it.
   */
  carried?: () => boolean;
}

/**
 * When an admitted request's answer carries the RateLimit fields: 'always' (every keyed
 * route), or 'near' (heartbeats): only once the quota is close to exhaustion, fewer than
 * half the window's requests left (nearExhaustion). A refusal always carries them.
 */
export type Fields = 'always' | 'near';

export abstract class RateLimiter {
  private batches = new AdmissionBatches((uuid) => this.prefetch(uuid));
  private over = new OverLimit();
  /** requests answered without asking Redis (under an admission batch, or refused locally), not yet recorded there */
  readonly records: PendingRecords;
  /**
   * calls of the rate-limit script for a request, requests answered from an admission batch, requests
   * refused locally (over the limit), key look-ups that went past this thread's maps
   * (Redis, then PostgreSQL), keys refused by their text alone (bad checksum or not
   * key-shaped), and calls of the rate-limit script for a batch asked ahead (prefetch)
   * (tests, metrics; the key fields are counted by key-resolver.ts through SandboxAuth)
   */
  readonly stats = { asked: 0, batched: 0, refusedLocally: 0, lookups: 0, refusedByShape: 0, pgLookups: 0, prefetched: 0 };
  protected readonly now: () => number;

  constructor(
    readonly pool: Pool,
    readonly redis: RedisClient,
    readonly keys: Keys,
    readonly tiers: TierConfig,
    o: RateLimiterOptions = {},
  ) {
    this.now = o.now ?? Date.now;
    this.records = new PendingRecords(redis, keys, o.flushMs ?? 0, o.carried ?? (() => false));
  }

  /**
   * Writes a sandbox's rate-limit hash into Redis again from PostgreSQL (Redis lost it);
   * false when PostgreSQL has no such sandbox. The sandboxes room knows the rows (SandboxAuth).
   */
  protected abstract reseed(uuid: string): Promise<boolean>;

  /**
   * count()'s first step on its own, synchronous: when this thread knows the sandbox is
   * over its limit (and holds no admission batch admissions to give back), the refusal, recorded;
   * otherwise null and count() decides.
   */
  refusedNow(uuid: string): RateResult | null {
    if (this.batches.holdsRefunds(uuid)) return null;
    const refused = this.over.check(uuid, performance.now());
    if (!refused) return null;
    this.stats.refusedLocally++;
    this.records.record(uuid, 1);
    return refused;
  }

  /** A refusal's 429, counted in the metric: its message, and its RateLimit and Retry-After fields. */
  refusal(r: RateResult): [args: [limit: number, retryAfter: number], headers: Headers] {
    // the script reports the limit, not the tier: the tier is the one with that limit
    countRateLimited(Object.keys(this.tiers).find((t) => this.tiers[t] === r.limit) ?? 'unknown');
    return [[r.limit, r.retryAfter], [...rateHeaders(r), ['Retry-After', String(r.retryAfter)]]];
  }

  /**
   * Count one request; the result says whether it is admitted. A thread holding an admission batch
   * answers from it without a Redis round trip (records reach Redis once per event-loop
   * turn); otherwise the rate-limit script decides, and may admission batch more (see admission.ts).
   */
  async count(uuid: string): Promise<RateResult> {
    for (let waits = 0; ; waits++) {
      const known = this.countNow(uuid);
      if (known) return known;
      // another request of this thread is already asking Redis for a batch: share it (only
      // worth it when the limit allows batches; small limits ask in parallel, pipelined)
      const asking = this.batches.mayBatch(uuid) ? this.batches.asking(uuid) : null;
      if (!asking || waits >= 2) break;
      await asking.catch(() => undefined);
    }
    return this.batches.ask(uuid, () => this.grant(uuid));
  }

  /**
   * count()'s answer when this thread has it without Redis: a refusal it knows of, or an
   * admission from its admission batch (recorded either way); null: ask count().
   */
  private countNow(uuid: string): RateResult | null {
    // an admission batch first: one that answers holds admissions, so refusedNow() would not refuse
    const local = this.batches.take(uuid, this.now());
    if (!local) return this.refusedNow(uuid);
    this.stats.batched++;
    this.records.record(uuid, 0);
    return local;
  }

  /**
   * limitOrThrow() when this thread can decide without Redis (countNow): the admission's
   * headers, or the 429 thrown; null when Redis must be asked (then call limitOrThrow()).
   * Heartbeats use it to answer without a promise per request.
   */
  limitNow(uuid: string, fields: Fields = 'always'): Headers | null {
    const r = this.countNow(uuid);
    return r ? this.admittedOrThrow(r, fields) : null;
  }

  /**
   * Ask Redis for a sandbox's next batch while its current one still answers (admission.ts):
   * no request waits for it. A failure is forgotten: the batch's last request asks as usual.
   */
  private prefetch(uuid: string): void {
    this.batches.ask(uuid, () => this.grant(uuid, true)).catch(() => undefined);
  }

  /** A rate-limit script call for a request of the sandbox, or (`ahead`) for its next batch only (prefetch). */
  private async grant(uuid: string, ahead = false): Promise<RateResult> {
    const k = this.keys;
    // the script records admitted ones in the history and total; refusals wait for a flush
    const pending = this.records.takeAdmitted(uuid);
    const plan = this.batches.plan(uuid, ahead);
    let at = 0;
    let sentAt = 0;
    const run = async () => {
      at = this.now();
      sentAt = performance.now();
      if (ahead) this.stats.prefetched++;
      else this.stats.asked++;
      // need 0 for a batch asked ahead (its admissions are counted, no request is), sent at
      // once (redis/client.ts DIRECT_COMMANDS): nobody waits for it, nothing shares its turn
      const call = ahead ? this.redis.rateAhead : this.redis.rateLimit;
      return rateLimitReply(await call.call(this.redis, k.sandbox(uuid), k.rateWindow(uuid), k.rateHistory(uuid), k.rateTotals(uuid), plan.want, pending, plan.refunds, ...RATE_LIMIT_ARGS, ahead ? 0 : 1));
    };
    let r: RateLimitReply;
    try {
      r = await this.indexedRate(uuid, run);
    } catch (err) {
      // not recorded: try again with the next request
      this.records.giveBack(uuid, pending);
      throw err;
    }
    const res: RateResult = { admitted: r.admitted, limit: r.limit, used: r.used, retryAfter: r.retryAfter, reset: r.reset, retryAfterMs: r.retryAfterMs };
    // the bucket and its time left are Redis's: this node's clock only measures durations
    this.batches.granted(uuid, res, r.granted, at, { bucket: r.bucket, leftMs: r.leftMs }, ahead);
    // replies come in the order Redis ran the scripts: an admission after a refusal (another
    // request's admission batch refunds made room) ends the local refusal, a later refusal starts one
    if (res.admitted) this.over.drop(uuid);
    else this.over.refused(uuid, res, r.retryAfterMs, sentAt);
    return res;
  }

  /** Forget this thread's admission batch and over-limit state of a sandbox (its tier changed): the next request asks Redis. */
  dropAdmissions(uuid: string): void {
    this.batches.drop(uuid.toLowerCase());
    this.over.drop(uuid.toLowerCase());
  }

  /**
   * limitOrThrow() for a request that counts as `n` (a batch of n registrations): all n fit
   * the window or none is counted as admitted (429; the refusal counts all n as rejected).
   * Asks Redis every time (no admission batch: a batch is rarely one of many).
   */
  async limitManyOrThrow(uuid: string, n: number): Promise<Headers> {
    let r: RateResult;
    try {
      r = this.refusedNow(uuid) ?? (await this.takeMany(uuid, n));
    } catch (err) {
      if (isRedisUnavailable(err)) return []; // fail open, as limitOrThrow()
      throw err;
    }
    if (!r.admitted) {
      const [args, headers] = this.refusal(r);
      throw (n > 1 ? new ApiError('BATCH_RATE_LIMITED', [...args, n], Object.fromEntries(headers)) : new ApiError('SANDBOX_RATE_LIMITED', args, Object.fromEntries(headers)));
    }
    return rateHeaders(r);
  }

  /**
   * A rate-limit script call (`run`) for a sandbox Redis knows; when Redis lost its hash
   * (flushed or restarted) it is written again from PostgreSQL and the call repeated.
   */
  private async indexedRate(uuid: string, run: () => Promise<RateLimitReply | typeof NOT_INDEXED>): Promise<RateLimitReply> {
    let r = await run();
    if (r === NOT_INDEXED) {
      if (!(await this.reseed(uuid))) throw new ApiError('SANDBOX_UNKNOWN');
      r = await run();
      if (r === NOT_INDEXED) throw new ApiError('RATE_INDEX_REBUILDING', [], { 'Retry-After': '1' });
    }
    return r;
  }

  private async takeMany(uuid: string, n: number): Promise<RateResult> {
    const k = this.keys;
    const run = async () => rateLimitReply(await this.redis.rateLimit(k.sandbox(uuid), k.rateWindow(uuid), k.rateHistory(uuid), k.rateTotals(uuid), n, 0, '', ...RATE_LIMIT_ARGS, n));
    const r = await this.indexedRate(uuid, run);
    return { admitted: r.admitted, limit: r.limit, used: r.used, retryAfter: r.retryAfter, reset: r.reset, retryAfterMs: r.retryAfterMs };
  }

  async limitOrThrow(uuid: string, fields: Fields = 'always'): Promise<Headers> {
    let r: RateResult;
    try {
      r = await this.count(uuid);
    } catch (err) {
      // Redis unreachable: the request is admitted uncounted, without RateLimit fields — fail
      // open (docs/decisions/outages.md): the key was verified,
      // and a limiter outage must not turn into a registry outage for every sandbox
      if (isRedisUnavailable(err)) return [];
      throw err;
    }
    return this.admittedOrThrow(r, fields);
  }

  private admittedOrThrow(r: RateResult, fields: Fields): Headers {
    if (!r.admitted) {
      const [args, headers] = this.refusal(r);
      throw new ApiError('SANDBOX_RATE_LIMITED', args, Object.fromEntries(headers));
    }
    return fields === 'always' || nearExhaustion(r) ? rateHeaders(r) : NO_FIELDS;
  }
}

/** An admitted answer without the fields (Fields 'near', far from exhaustion): shared, never changed. */
const NO_FIELDS: Headers = [];

/**
 * Whether fewer than half the window's requests are left after this one: then a heartbeat's
 * 204 carries the RateLimit fields. draft-ietf-httpapi-ratelimit-headers-10 §6.2: servers
 * need not send them in every response, "an implementer concerned with performance might
 * provide RateLimit header fields only when a given quota is close to exhaustion", and §7: a
 * client must not assume later responses carry them
 * (docs/decisions/ratelimit-fields-on-heartbeats.md).
 */
export function nearExhaustion(r: RateResult): boolean {
  return 2 * (r.limit - r.used) < r.limit;
}

/** RateLimit-Policy fields by limit: one per tier's limit, not a new string per answer. */
const POLICIES = new Map<number, [string, string]>();
const POLICIES_MAX = 256;

function policyField(limit: number): [string, string] {
  let f = POLICIES.get(limit);
  if (!f) {
    // limits are the tiers' (a handful); the bound only guards against a misconfiguration
    if (POLICIES.size >= POLICIES_MAX) POLICIES.clear();
    f = ['RateLimit-Policy', `"sandbox";q=${limit};w=60`];
    POLICIES.set(limit, f);
  }
  return f;
}

/**
 * RateLimit-Policy and RateLimit fields (draft-ietf-httpapi-ratelimit-headers-10). The
 * policy field is shared between answers: callers copy the list, never change a field.
 */
export function rateHeaders(r: RateResult): Headers {
  const remaining = Math.max(0, r.limit - r.used);
  return [policyField(r.limit), ['RateLimit', '"sandbox";r=' + remaining + ';t=' + (r.admitted ? r.reset : r.retryAfter)]];
}
