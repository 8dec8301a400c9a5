// Finds expired leases and deregistration deadlines (docs/decisions/expiry-sweeper.md). Every
// node runs one; each of the LEASE_SHARDS shards is swept by the holder of its lock (a key with
// a TTL that lease-sweep-3.lua renews), so a dead holder's shards are taken over. An expiry is
// visible first: each pass lists a shard's due leases and turns the passing ones critical in
// Redis in the same call, atomically against heartbeats, then in the index (liveness/expiry.ts,
// one near-cache delta per page). It is durable second (durable-expiries.ts: at most
// `parallel` transactions, only for services still at their lease's version); a lease flipped
// but not committed is due again RECHECK_MS later. Passes run at the earliest deadline left, at
// most LEASE_SWEEP_MS apart, back to back while they find expiries (tick()).
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { LEASE_SHARDS, type Keys } from '../domain/keys.js';
import type { Projector } from '../registry/index.js';
import { observeExpiryLag, setLeasedServices } from './metrics.js';
import type { RedisClient } from '../redis/client.js';
import { leaseSweepReply } from '../redis/replies.js';
import type { Pool } from '../pg/pool.js';
import { DurableExpiries, type ExpiryTask } from './durable-expiries.js';
import { flipIndex, liveGeneration } from './expiry.js';

export interface SweeperOptions {
  /** longest wait between two passes, ms (LEASE_SWEEP_MS); a pass runs at the earliest deadline left */
  intervalMs: number;
  /** the sweep lock's TTL: how long a dead holder keeps its shards (LEASE_LOCK_MS) */
  lockMs: number;
  /** due leases listed per shard and call, and expiries per durable transaction (LEASE_SWEEP_BATCH) */
  batch?: number;
  /** durable transactions at once: at most this many PostgreSQL connections (LEASE_SWEEP_PARALLEL) */
  parallel?: number;
  /** due leases listed by a pass's first call per shard (then twice as many per call, up to the batch); default FIRST_PAGE */
  firstPage?: number;
  /** the clock of deadlines (shared with Liveness) */
  now: () => number;
  /** this node's lock token (tests play two nodes) */
  owner?: string;
  /** each expiry's lag past its deadline when it became visible, ms (bench/liveness.ts) */
  onExpired?: (lagMs: number) => void;
  /** each expiry's lag past its deadline when it was committed and applied, ms (bench/liveness.ts) */
  onDurable?: (lagMs: number) => void;
  /** each periodic pass that flipped leases: its duration, how many it flipped, and the oldest flipped lease's deadline − the pass's start, ms (bench/liveness.ts) */
  onPass?: (p: { ms: number; flipped: number; late: number }) => void;
  /** each lease-sweep call's limit, in call order (tests: the growing first pages) */
  onList?: (shard: number, limit: number) => void;
}

/**
 * A lease turned critical in Redis but not (yet) in PostgreSQL is due again this long after
 * the flip: the durable write normally comes within a second and puts the real schedule; this
 * is for a node that died or a PostgreSQL that was away meanwhile. Long enough that a
 * backlog of durable writes (a mass expiry) is not listed again while still queued.
 */
const RECHECK_MS = 30_000;

/**
 * The least time between the end of a pass and the start of the next (ms, real time): while
 * passes keep finding expiries they run back to back, this far apart, so a mass expiry cannot
 * make the sweeper spin and starve the event loop (at most 1000 / MIN_GAP_MS passes a second).
 */
const MIN_GAP_MS = 10;

/**
 * A pass lists and flips each shard's due leases in calls of FIRST_PAGE, then twice as many
 * per call up to the batch: the oldest deadlines of every shard go through Redis (and into
 * the index) in the first small round instead of waiting behind 16 × 500 leases, and a
 * backlog still moves in full batches (docs/decisions/expiry-sweeper.md: growing pages).
 */
const FIRST_PAGE = 32;

/** What a periodic pass found: whether it did anything, and the earliest deadline after it in the shards held. */
interface PassResult {
  /** it flipped or queued a lease */
  progress: boolean;
  /** the earliest due time left in the shards this node holds (ms, the deadlines' clock); Infinity: none */
  nextDue: number;
}

export class LeaseSweeper {
  private timer: NodeJS.Timeout | null = null;
  private started = false;
  private pass: Promise<PassResult> | null = null;
  private running: Promise<number> | null = null;
  readonly owner: string;
  private readonly batch: number;
  private readonly firstPage: number;
  /** shards this node held at its last sweep (tests, the takeover) */
  held = new Set<number>();
  /** the expiries' durable writes and the deregistrations (durable-expiries.ts) */
  private readonly durable: DurableExpiries;
  /** performance.now() when the leased services were last counted */
  private counted = Number.NEGATIVE_INFINITY;
  /** the last periodic pass flipped leases: more are probably coming (durable writes wait) */
  private flipping = false;

  constructor(
    pool: Pool,
    readonly redis: RedisClient,
    readonly keys: Keys,
    projector: Projector,
    readonly log: Logger,
    readonly o: SweeperOptions,
  ) {
    this.owner = o.owner ?? randomBytes(8).toString('hex');
    this.batch = o.batch ?? 500;
    this.firstPage = Math.max(1, Math.min(this.batch, o.firstPage ?? FIRST_PAGE));
    this.durable = new DurableExpiries(pool, redis, keys, projector, log, {
      batch: this.batch,
      parallel: o.parallel ?? 4,
      intervalMs: o.intervalMs,
      now: o.now,
      onDurable: o.onDurable,
      observe: (lagMs) => this.observe(lagMs),
      // flips first: a pass under way, or passes still finding expiries (more are coming)
      pass: () => this.pass,
      flipping: () => this.flipping,
    });
  }

  /** One sweep of every shard this node holds or can take, its durable writes included; returns the leases acted on. */
  sweepOnce(): Promise<number> {
    this.running ??= (async () => {
      const before = this.durable.acted;
      await this.flipPass();
      this.flipping = false; // no next pass to wait for: the durable writes go now
      await this.durable.drained();
      return this.durable.acted - before;
    })().finally(() => (this.running = null));
    return this.running;
  }

  private flipPass(): Promise<PassResult> {
    this.pass ??= this.flipAll().finally(() => (this.pass = null));
    return this.pass;
  }

  /** Every shard at once (Redis calls only): each lists and flips its due leases batch by batch. */
  private async flipAll(): Promise<PassResult> {
    let leased = 0;
    let flipped = 0;
    let queued = 0;
    let nextDue = Number.POSITIVE_INFINITY;
    // the leased-services gauge: counted at most once a period (passes run back to back in a
    // mass expiry)
    const count = performance.now() - this.counted >= this.o.intervalMs;
    if (count) this.counted = performance.now();
    const start = this.o.now();
    const t0 = performance.now();
    let oldest = Number.POSITIVE_INFINITY;
    const gen = await liveGeneration(this.redis, this.keys);
    // shards whose last call came back full (a backlog): while any is, the pass goes on, and
    // a shard that caught up lists again every MIN_GAP_MS in small calls instead of waiting
    // for the slowest shard's end of the pass (its deadlines keep arriving meanwhile)
    let backlogged = LEASE_SHARDS;
    // per shard, the time of its last listing: what was due then and is still there, the
    // pass left (queued, or failing)
    const listedAt: number[] = [];
    await Promise.all(
      Array.from({ length: LEASE_SHARDS }, async (_, shard) => {
        let full = true;
        for (let first = count, size = this.firstPage; ; first = false) {
          const turn = await this.flipShard(shard, first, gen, size);
          listedAt[shard] = turn.now;
          oldest = Math.min(oldest, turn.oldest);
          leased += turn.leased;
          flipped += turn.flipped;
          queued += turn.queued;
          // a full call: a backlog, the next call twice as large
          if (turn.more) {
            if (!full) backlogged++;
            full = true;
            size = Math.min(this.batch, size * 2);
            continue;
          }
          if (full) backlogged--;
          full = false;
          if (!backlogged || !this.started) return;
          size = this.firstPage;
          await new Promise((ok) => setTimeout(ok, MIN_GAP_MS));
          if (!backlogged) return;
        }
      }),
    );
    if (this.held.size && count) setLeasedServices(leased);
    this.flipping = flipped > 0;
    if (flipped) this.o.onPass?.({ ms: performance.now() - t0, flipped, late: start - oldest });
    const progress = flipped + queued > 0;
    // a pass that did nothing: the earliest deadline after each held shard's last listing
    // says when the next one is worth running (after one that did work, the next runs at once
    // anyway); one that came due since that listing, at once. After the listing, not the
    // earliest of all: a due lease the pass left (its write queued, or still failing) would
    // put the next pass a whole period off, and every deadline falling in that period would
    // be seen up to a period late. And not after now: a deadline passed between the listing
    // and this look-up would be neither listed nor ahead, and wait for the period
    if (!progress) {
      const firsts = await Promise.all([...this.held].map((shard) => this.redis.zrangebyscore(this.keys.deadlines(shard), `(${listedAt[shard] ?? start}`, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)));
      for (const f of firsts) nextDue = Math.min(nextDue, Number(f[1] ?? Infinity));
    }
    return { progress, nextDue };
  }

  /** Up to `size` of one shard's due leases, if this node holds (or now takes) its lock. */
  private async flipShard(shard: number, count: boolean, gen: string | null, size: number): Promise<{ leased: number; flipped: number; queued: number; more: boolean; oldest: number; now: number }> {
    const now = this.o.now();
    this.o.onList?.(shard, size);
    // listed and, the passing ones, flipped in one call (still passing and past the deadline,
    // atomically against heartbeats): critical in Redis now, due again RECHECK_MS on unless
    // the durable write puts the real schedule
    const due = leaseSweepReply(await this.redis.leaseSweep(this.keys.sweepLock(shard), this.keys.deadlines(shard), this.keys.leases(shard), this.owner, this.o.lockMs, now, size, RECHECK_MS));
    if (!due) {
      this.held.delete(shard);
      return { leased: 0, flipped: 0, queued: 0, more: false, oldest: Number.POSITIVE_INFINITY, now };
    }
    this.held.add(shard);
    const leased = count ? await this.redis.hlen(this.keys.leases(shard)) : 0;
    const flips = due.filter((d) => d.flipped);
    // (a lease flipped while still queued from an earlier flip — a heartbeat revived it, then
    // it lapsed again before that durable write ran — is shown critical now and finished by
    // its recheck)
    const fresh = due.filter((d) => !this.durable.has(d.id));
    const tasks: ExpiryTask[] = [];
    let shown = false;
    if (flips.length && gen) {
      try {
        await flipIndex(this.redis, this.keys, gen, flips.map((d) => ({ id: d.id, ns: d.lease.ns, from: d.lease.rev, to: d.lease.rev })));
        shown = true;
        const seen = this.o.now();
        for (const d of flips) this.observe(seen - d.due);
      } catch (err) {
        // the durable write makes them visible
        this.log.warn({ err: String(err), shard, leases: flips.length }, 'expiry flip of the index failed; the durable write will apply it');
      }
    }
    for (const d of fresh) if (d.flipped) tasks.push({ id: d.id, due: d.due, lease: d.lease, flipped: true, crit: now, visible: shown, queued: performance.now() });
    for (const d of fresh) if (!d.flipped) tasks.push({ id: d.id, due: d.due, lease: d.lease, flipped: false, crit: d.lease.criticalSince ?? now, visible: true, queued: performance.now() });
    const queued = this.durable.enqueue(tasks);
    // a full call: more may be due (not when every one listed was already queued)
    return { leased, flipped: flips.length, queued, more: due.length >= size && fresh.length > 0, oldest: flips.length ? flips[0]!.due : Number.POSITIVE_INFINITY, now };
  }

  private observe(lagMs: number): void {
    observeExpiryLag(lagMs / 1000);
    this.o.onExpired?.(lagMs);
  }

  start(): void {
    // the periodic pass flips; the durable writes it queues run on without holding it up
    this.started = true;
    this.wake(MIN_GAP_MS); // the first pass at once: it learns the earliest deadline
  }

  private wake(ms: number): void {
    if (!this.started) return;
    this.timer = setTimeout(() => void this.tick(), ms);
    this.timer.unref();
  }

  /**
   * One periodic pass, then the next one scheduled: MIN_GAP_MS on while passes find
   * expiries (a mass expiry: back to back), else at the earliest deadline left in the shards
   * held (no waiting for a period that may have just begun), at most intervalMs on (a lease
   * renewed or registered meanwhile, a shard to take over) and never sooner than MIN_GAP_MS.
   * A due lease that a pass leaves (queued already, or the queue full) does not make it
   * wake early: its recheck comes with the period.
   */
  private async tick(): Promise<void> {
    this.timer = null;
    let next = this.o.intervalMs;
    try {
      const r = await this.flipPass();
      const wait = r.nextDue - this.o.now();
      // (a deadline already passed: MIN_GAP_MS on)
      if (r.progress) next = MIN_GAP_MS;
      else if (wait < Number.POSITIVE_INFINITY) next = Math.min(this.o.intervalMs, Math.max(MIN_GAP_MS, Math.ceil(wait)));
    } catch (err) {
      this.log.warn({ err: String(err) }, 'lease sweep failed; will retry');
    }
    this.wake(next);
  }

  async stop(): Promise<void> {
    this.started = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running?.catch(() => undefined);
    await this.pass?.catch(() => undefined);
    // no next pass to wait for (sweepOnce): the queued durable writes go now, not
    // DURABLE_YIELD_MS after the last pass that flipped
    this.flipping = false;
    await this.durable.drained();
    // hand the shards over now rather than after lockMs
    await Promise.all([...this.held].map((s) => this.redis.delIfEqual(this.keys.sweepLock(s), this.owner).catch(() => undefined)));
    this.held.clear();
  }
}
