// Resolving a sandbox key and counting the request against the sandbox's rate limit.
// Key -> uuid goes through an in-process map, then Redis, then — only while the Redis index
// is incomplete (no live generation known, a rebuild under way, sandbox keys waiting in the
// outbox, or its marker gone) — PostgreSQL's unique index on the key hash (and repopulates
// Redis); never a table scan. The index holds every key hash, so while it is complete a miss
// there is the answer: an unknown key costs PostgreSQL nothing. A key is immutable, so the
// in-process map never goes stale (unknown keys are remembered for UNKNOWN_KEY_MS). The maps
// are bounded by the bytes they occupy (key-maps.ts), a fixed share of the process's
// SANDBOX_KEY_CACHE_MB per thread: 3/4 for known keys, 1/4 for unknown ones. The
// limit is read by the Lua script whenever the thread asks Redis: on every request below
// 2,000 a minute, once per batch above (leases.ts).
import { ApiError } from '../domain/errors.js';
import type { Keys } from '../domain/keys.js';
import { RATE_LIMIT_ARGS, RATE_WINDOW } from '../domain/rate-window.js';
import type { Headers } from '../http/types.js';
import type { RedisClient } from '../redis/client.js';
import { isRedisUnavailable } from '../ops/outage.js';
import type { Pool } from '../store/pool.js';
import { writeSandboxMeta } from '../store/sandbox-meta.js';
import { getSandbox, sandboxByKeyHash } from '../store/sandboxes.js';
import type { TierConfig } from '../config.js';
import { bearerKey, hashKey, keyShape } from './keys.js';
import { countRateLimited } from '../ops/metrics.js';
import { Leases, type RateResult } from './leases.js';
import { OverLimit } from './over-limit.js';
import { NOT_INDEXED, rateLimitReply, type RateLimitReply } from '../redis/replies.js';
import { ByteBoundedMap } from './key-maps.js';
import type { RateRecord, RateRecords } from '../liveness/heartbeat-batch.js';

export const RATELIMIT_DRAFT = 'draft-ietf-httpapi-ratelimit-headers-10';
const UNKNOWN_KEY_MS = 10_000;

export interface SandboxAuthOptions {
  /**
   * how long requests answered without Redis may wait to be recorded there, in one batch
   * per sandbox (0: at the end of the event-loop turn). A poll on this thread flushes
   * first; other threads and nodes lag by at most this much (docs/decisions.md).
   */
  flushMs?: number;
  /** this node's wall clock (tests skew it to play a node whose clock is off) */
  now?: () => number;
  /** bytes this thread's key maps may hold, all three together (default 8 MiB) */
  keyMapBytes?: number;
  /**
   * The Redis key whose presence says the index is complete (the live generation's
   * production marker), or null while it is known not to be: a miss in Redis is then no
   * answer and PostgreSQL is asked. Default: always null (PostgreSQL behind every miss).
   */
  indexMarker?: () => string | null;
  /**
   * Whether a call of this turn will carry the records waiting (the heartbeat batch on a
   * standalone Redis: HeartbeatBatch.carries()); then the turn's flush leaves them to it.
   */
  carried?: () => boolean;
}

export class SandboxAuth implements RateRecords {
  /** key hash (hex) -> sandbox uuid */
  private cache: ByteBoundedMap<string>;
  /**
   * key -> its hash (hex), for keys that resolved to a sandbox: SHA-256 is a pure function,
   * so this only saves hashing (and checksumming) a key this thread has seen resolve before
   * — ~12 % of an over-limit key's 429 in a profile. The sandbox is still found through
   * `cache`, by hash, as a new key's is.
   */
  private hashes: ByteBoundedMap<string>;
  /** hashes of well-formed keys the index (or PostgreSQL) did not know -> until when to believe that */
  private unknown: ByteBoundedMap<number>;
  private leases = new Leases((uuid) => this.prefetch(uuid));
  private over = new OverLimit();
  /** requests answered without asking Redis (under a lease, or refused locally), not yet recorded there */
  private pending = new Map<string, { n: number; rejected: number }>();
  private flushing: NodeJS.Timeout | NodeJS.Immediate | null = null;
  /**
   * calls of the rate-limit script for a request, requests answered from a lease, requests
   * refused locally (over the limit), key look-ups that went past this thread's maps
   * (Redis, then PostgreSQL), keys refused by their text alone (bad checksum or not
   * key-shaped), and calls of the rate-limit script for a batch asked ahead (prefetch)
   * (tests, metrics)
   */
  readonly stats = { asked: 0, leased: 0, refusedLocally: 0, lookups: 0, refusedByShape: 0, pgLookups: 0, prefetched: 0 };
  private readonly now: () => number;
  private readonly flushMs: number;
  private readonly indexMarker: () => string | null;
  private readonly carried: () => boolean;

  constructor(
    readonly pool: Pool,
    readonly redis: RedisClient,
    readonly keys: Keys,
    readonly tiers: TierConfig,
    o: SandboxAuthOptions = {},
  ) {
    this.flushMs = o.flushMs ?? 0;
    this.now = o.now ?? Date.now;
    this.indexMarker = o.indexMarker ?? (() => null);
    this.carried = o.carried ?? (() => false);
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

  /**
   * count()'s first step on its own, synchronous: when this thread knows the sandbox is
   * over its limit (and holds no lease admissions to give back), the refusal, recorded;
   * otherwise null and count() decides.
   */
  refusedNow(uuid: string): RateResult | null {
    if (this.leases.holdsRefunds(uuid)) return null;
    const refused = this.over.check(uuid, performance.now());
    if (!refused) return null;
    this.stats.refusedLocally++;
    this.recordLater(uuid, 1);
    return refused;
  }

  /** A refusal's 429, counted in the metric: its message, and its RateLimit and Retry-After fields. */
  refusal(r: RateResult): [args: [limit: number, retryAfter: number], headers: Headers] {
    // the script reports the limit, not the tier: the tier is the one with that limit
    countRateLimited(Object.keys(this.tiers).find((t) => this.tiers[t] === r.limit) ?? 'unknown');
    return [[r.limit, r.retryAfter], [...rateHeaders(r), ['Retry-After', String(r.retryAfter)]]];
  }

  /**
   * Count one request; the result says whether it is admitted. A thread holding a lease
   * answers from it without a Redis round trip (records reach Redis once per event-loop
   * turn); otherwise the rate-limit script decides, and may lease more (see leases.ts).
   */
  async count(uuid: string): Promise<RateResult> {
    for (let waits = 0; ; waits++) {
      const known = this.countNow(uuid);
      if (known) return known;
      // another request of this thread is already asking Redis for a batch: share it (only
      // worth it when the limit allows batches; small limits ask side by side, pipelined)
      const asking = this.leases.mayLease(uuid) ? this.leases.asking(uuid) : null;
      if (!asking || waits >= 2) break;
      await asking.catch(() => undefined);
    }
    return this.leases.ask(uuid, () => this.grant(uuid));
  }

  /**
   * count()'s answer when this thread has it without Redis: a refusal it knows of, or an
   * admission from its lease (recorded either way); null: ask count().
   */
  private countNow(uuid: string): RateResult | null {
    // a lease first: one that answers holds admissions, so refusedNow() would not refuse
    const local = this.leases.take(uuid, this.now());
    if (!local) return this.refusedNow(uuid);
    this.stats.leased++;
    this.recordLater(uuid, 0);
    return local;
  }

  /**
   * limitOrThrow() when this thread can decide without Redis (countNow): the admission's
   * headers, or the 429 thrown; null when Redis must be asked (then call limitOrThrow()).
   * Heartbeats use it to answer without a promise per request.
   */
  limitNow(uuid: string): Headers | null {
    const r = this.countNow(uuid);
    return r ? this.admittedOrThrow(r) : null;
  }

  /**
   * Ask Redis for a sandbox's next batch while its current one still answers (leases.ts):
   * no request waits for it. A failure is forgotten: the batch's last request asks as usual.
   */
  private prefetch(uuid: string): void {
    this.leases.ask(uuid, () => this.grant(uuid, true)).catch(() => undefined);
  }

  /** A rate-limit script call for a request of the sandbox, or (`ahead`) for its next batch only (prefetch). */
  private async grant(uuid: string, ahead = false): Promise<RateResult> {
    const k = this.keys;
    // the script records admitted ones in the history and total; refusals wait for a flush
    const held = this.pending.get(uuid);
    const pending = held ? held.n - held.rejected : 0;
    if (held) {
      if (held.rejected > 0) this.pending.set(uuid, { n: held.rejected, rejected: held.rejected });
      else this.pending.delete(uuid);
    }
    const plan = this.leases.plan(uuid, ahead);
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
      if (pending > 0) this.add(uuid, pending, 0);
      throw err;
    }
    const res: RateResult = { admitted: r.admitted, limit: r.limit, used: r.used, retryAfter: r.retryAfter, reset: r.reset, retryAfterMs: r.retryAfterMs };
    // the bucket and its time left are Redis's: this node's clock only measures durations
    this.leases.granted(uuid, res, r.granted, at, { bucket: r.bucket, leftMs: r.leftMs }, ahead);
    // replies come in the order Redis ran the scripts: an admission after a refusal (another
    // request's lease refunds made room) ends the local refusal, a later refusal starts one
    if (res.admitted) this.over.drop(uuid);
    else this.over.refused(uuid, res, r.retryAfterMs, sentAt);
    return res;
  }

  private add(uuid: string, n: number, rejected: number): void {
    const p = this.pending.get(uuid);
    if (p) {
      p.n += n;
      p.rejected += rejected;
    } else this.pending.set(uuid, { n, rejected });
  }

  /** A request answered without Redis (`rejected`: 1 if refused): record it in the next batch. */
  private recordLater(uuid: string, rejected: number): void {
    this.add(uuid, 1, rejected);
    this.schedule();
  }

  private schedule(): void {
    if (this.flushing) return;
    this.flushing = this.flushMs > 0 ? setTimeout(() => this.flushTurn(), this.flushMs).unref() : setImmediate(() => this.flushTurn());
  }

  /** The turn's (or flushMs's) flush: the records go, unless the turn's heartbeat call carries them. */
  private flushTurn(): void {
    this.flushing = null;
    if (this.pending.size > 0 && this.carried()) return;
    this.flush();
  }

  /** The records waiting, handed over to a call that carries them (HeartbeatBatch); forgotten here. */
  take(): RateRecord[] {
    const out: RateRecord[] = [];
    for (const [uuid, p] of this.pending) out.push({ uuid, n: p.n, rejected: p.rejected });
    this.pending.clear();
    return out;
  }

  /** Records a failed call carried: they wait for the next flush again. */
  restore(records: RateRecord[]): void {
    for (const r of records) this.add(r.uuid, r.n, r.rejected);
    this.schedule();
  }

  /**
   * Send every pending record now, one script call per sandbox. A poll calls this before it
   * reads the totals: the records go out first on the same connection (the same slot in a
   * cluster), so Redis counts them before it answers the poll.
   */
  flush(): void {
    if (this.flushing) {
      clearTimeout(this.flushing as NodeJS.Timeout);
      clearImmediate(this.flushing as NodeJS.Immediate);
    }
    this.flushing = null;
    for (const [uuid, p] of this.pending) {
      this.redis.rateCount(this.keys.rateHistory(uuid), this.keys.rateTotals(uuid), p.n, RATE_WINDOW.bucketMs, RATE_WINDOW.historyTtlS, p.rejected).catch(() => undefined);
    }
    this.pending.clear();
  }

  /** Forget this thread's lease and over-limit state of a sandbox (its tier changed): the next request asks Redis. */
  dropLease(uuid: string): void {
    this.leases.drop(uuid.toLowerCase());
    this.over.drop(uuid.toLowerCase());
  }

  /**
   * For /sandbox/{uuid}/... routes: the key must be that sandbox's. Unknown and foreign
   * uuids look the same (401). Counts the request; throws 429 over the limit.
   */
  async admit(authorization: string, uuid: string): Promise<Headers> {
    const key = bearerKey(authorization);
    const owner = key ? await this.resolve(key) : null;
    if (!owner || owner !== uuid.toLowerCase()) {
      throw new ApiError('SANDBOX_KEY_REQUIRED', [], { 'WWW-Authenticate': 'Bearer' });
    }
    return this.limitOrThrow(owner);
  }

  /**
   * admit() for a request that counts as `n` (a batch of n registrations): all n fit the
   * window or none is counted as admitted (429; the refusal counts all n as rejected).
   * Asks Redis every time (no lease: a batch is rarely one of many).
   */
  async admitMany(authorization: string, uuid: string, n: number): Promise<Headers> {
    const key = bearerKey(authorization);
    const owner = key ? await this.resolve(key) : null;
    if (!owner || owner !== uuid.toLowerCase()) {
      throw new ApiError('SANDBOX_KEY_REQUIRED', [], { 'WWW-Authenticate': 'Bearer' });
    }
    let r: RateResult;
    try {
      r = this.refusedNow(owner) ?? (await this.takeMany(owner, n));
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
      const row = await getSandbox(this.pool, uuid);
      if (!row) throw new ApiError('SANDBOX_UNKNOWN');
      await writeSandboxMeta(this.redis, this.keys, row, this.tiers[row.tier] ?? 0, '');
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
    return this.admittedOrThrow(r);
  }

  private admittedOrThrow(r: RateResult): Headers {
    if (!r.admitted) {
      const [args, headers] = this.refusal(r);
      throw new ApiError('SANDBOX_RATE_LIMITED', args, Object.fromEntries(headers));
    }
    return rateHeaders(r);
  }
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
