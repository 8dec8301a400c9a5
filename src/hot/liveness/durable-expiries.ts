// The durable side of lease expiry (sweeper.ts): the expiries a periodic pass made
// visible (flipped in Redis and in the index), queued and written to PostgreSQL by at most
// `parallel` workers in set-based transactions (liveness/store.ts expireMany: only a service
// still at the version its lease was made from; a heartbeat or write since then drew a newer
// one, which stands), then recorded in Redis; and the critical leases found due:
// deregistration (DELETE's write) once PostgreSQL agrees the service stayed critical that
// long, or the lease put back in step with PostgreSQL. The passes come first: while one runs,
// or while they keep finding expiries, the writes wait (up to DURABLE_YIELD_MS for the oldest).
import type { Logger } from 'pino';
import type { Keys } from '../domain/keys.js';
import { deleteService, type Projector } from '../registry/index.js';
import { countTransition } from './metrics.js';
import type { RedisClient } from '../redis/client.js';
import type { LeaseRecord } from '../redis/replies.js';
import { expireMany, loadLease } from './store.js';
import type { Pool } from '../pg/pool.js';
import { applyExpired } from './expiry.js';
import { applyLease } from './redis-lease.js';

/** expiries queued for their durable write, at most this many batches (beyond: the recheck picks them up) */
const QUEUE_BATCHES = 200;

/**
 * While the periodic passes keep finding expiries (a mass expiry whose deadlines are still
 * coming in), durable writes wait, up to this long for the oldest queued one (ms, real
 * time): visibility first, and a steady stream of expiries cannot starve durability.
 */
const DURABLE_YIELD_MS = 5000;

/** A due lease handed to the durable workers. */
export interface ExpiryTask {
  id: string;
  due: number;
  lease: LeaseRecord;
  /** the flip this sweep made (passing lease turned critical), or a critical lease found due */
  flipped: boolean;
  /** ms since when it is critical */
  crit: number;
  /** its index already shows it (lag observed) */
  visible: boolean;
  /** performance.now() when queued */
  queued: number;
}

export interface DurableOptions {
  /** expiries per durable transaction (LEASE_SWEEP_BATCH) */
  batch: number;
  /** durable transactions at once: at most this many PostgreSQL connections (LEASE_SWEEP_PARALLEL) */
  parallel: number;
  /** the sweeper's longest wait between passes (how often a waiting worker looks again) */
  intervalMs: number;
  /** the clock of deadlines (shared with Liveness) */
  now: () => number;
  /** each expiry's lag past its deadline when it was committed and applied, ms (bench/liveness.ts) */
  onDurable?: (lagMs: number) => void;
  /** an expiry became visible with its durable write (its flip of the index had failed): its lag, ms */
  observe: (lagMs: number) => void;
  /** the periodic pass under way, if one is */
  pass: () => Promise<unknown> | null;
  /** whether the last pass flipped leases (more are probably coming) */
  flipping: () => boolean;
}

export class DurableExpiries {
  /** leases queued or in a durable write (not listed again meanwhile) */
  private readonly pending = new Set<string>();
  private queue: ExpiryTask[] = [];
  private workers = 0;
  private idle: (() => void)[] = [];
  /** leases acted on (expiries committed, deregistrations): the sweeper's sweepOnce() count */
  acted = 0;

  constructor(
    private readonly pool: Pool,
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly projector: Projector,
    private readonly log: Logger,
    private readonly o: DurableOptions,
  ) {}

  /** Whether a lease is queued or in a durable write. */
  has(id: string): boolean {
    return this.pending.has(id);
  }

  /** Queue tasks for their durable write; returns how many were queued. */
  enqueue(tasks: ExpiryTask[]): number {
    let n = 0;
    for (const t of tasks) {
      // beyond the bound the lease waits in Redis for its recheck
      if (this.queue.length >= QUEUE_BATCHES * this.o.batch) break;
      this.pending.add(t.id);
      this.queue.push(t);
      n++;
    }
    while (this.workers < this.o.parallel && this.queue.length) {
      this.workers++;
      void this.work().finally(() => {
        this.workers--;
        if (!this.workers) for (const f of this.idle.splice(0)) f();
      });
    }
    return n;
  }

  /** Resolves once no durable write is queued or under way. */
  drained(): Promise<void> {
    if (!this.workers) return Promise.resolve();
    return new Promise((ok) => this.idle.push(ok));
  }

  /** A durable worker: batches from the queue until it is empty. */
  private async work(): Promise<void> {
    while (this.queue.length) {
      // flips first: while a pass is under way its backlog is what visibility waits on, and
      // durable writes would take the CPU (PostgreSQL's above all) from it; while passes keep
      // finding expiries, more are coming: wait for a quiet pass (or DURABLE_YIELD_MS)
      const pass = this.o.pass();
      if (pass) {
        await pass.catch(() => undefined);
        continue;
      }
      if (this.o.flipping() && performance.now() - this.queue[0]!.queued < DURABLE_YIELD_MS) {
        await new Promise((ok) => setTimeout(ok, Math.max(10, Math.min(50, this.o.intervalMs / 4))));
        continue;
      }
      const tasks = this.queue.splice(0, this.o.batch);
      try {
        await this.settle(tasks);
      } catch (err) {
        // PostgreSQL or Redis away: the leases stay due in Redis, the recheck tries again;
        // the rest of the queue would fail the same way
        this.log.warn({ err: String(err), leases: tasks.length + this.queue.length }, 'lease expiry failed; will retry');
        for (const t of this.queue.splice(0)) this.pending.delete(t.id);
      } finally {
        for (const t of tasks) this.pending.delete(t.id);
      }
    }
  }

  /** One batch made durable: the expiries in one transaction, then Redis; critical leases found due are checked one by one. */
  private async settle(tasks: ExpiryTask[]): Promise<void> {
    const now = this.o.now();
    // a critical lease found due may be a flip whose durable write never came: finished here too
    const done = await expireMany(this.pool, tasks.map((t) => ({ id: t.id, rev: t.lease.rev, crit: t.crit })));
    const byId = new Map(tasks.map((t) => [t.id, t]));
    if (done.length) {
      await applyExpired(this.redis, this.keys, this.projector, done, now);
      const seen = this.o.now();
      for (const e of done) {
        const t = byId.get(e.id)!;
        countTransition('critical', 'expiry');
        if (!t.visible) this.o.observe(seen - t.due);
        this.o.onDurable?.(seen - t.due);
      }
      this.acted += done.length;
    }
    // a flip not committed: a newer version (heartbeat, write) stands, and its apply put the
    // index and the lease back. A critical lease: deregistration, or Redis out of step
    const committed = new Set(done.map((e) => e.id));
    for (const t of tasks) {
      if (t.flipped || committed.has(t.id)) continue;
      try {
        if (await this.act(t.id, t.lease)) this.acted++;
      } catch (err) {
        // PostgreSQL or Redis away: the lease stays due, the next sweep tries again
        this.log.warn({ err: String(err), serviceId: t.id }, 'lease sweep failed for a service; will retry');
      }
    }
  }

  private async act(id: string, l: LeaseRecord): Promise<boolean> {
    const now = this.o.now();
    // critical and due: deregistration, if PostgreSQL agrees it has stayed critical that long
    const row = await loadLease(this.pool, id);
    if (row && row.status === 'critical' && row.deregisterAfter !== null && row.criticalSince !== null && row.criticalSince + row.deregisterAfter * 1000 <= now) {
      const writes = await deleteService(this.pool, row.ns, id).catch((err: unknown) => {
        if ((err as { code?: string }).code === 'NOT_FOUND') return [];
        throw err;
      });
      if (writes.length) await this.projector.syncQuietly(writes);
      countTransition('deleted', 'expiry');
      return true;
    }
    // Redis is ahead of or behind PostgreSQL (a failed commit, an old record): PostgreSQL wins
    if (row) await applyLease(this.redis, this.keys, id, row.ns, row.version, row, now);
    else await applyLease(this.redis, this.keys, id, l.ns, l.rev, null, now);
    return false;
  }
}
