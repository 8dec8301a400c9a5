// Finds expired leases and deregistration deadlines. Every node runs one; each of the
// LEASE_SHARDS shards is swept by one node at a time, the holder of its lock (a Redis key
// with a TTL that lease-sweep-3.lua renews on every call): when the holder dies the lock
// lapses and another node's next tick takes the shard over. An expiry is a durable write
// (store/leases.ts setHealth) made only after lease-expire-2.lua confirmed, under the row
// lock, that no heartbeat renewed the lease meanwhile; a deregistration is DELETE's write.
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { LEASE_SHARDS, type Keys } from '../domain/keys.js';
import type { Projector } from '../index/projector.js';
import { countTransition, observeExpiryLag, setLeasedServices } from '../ops/metrics.js';
import type { RedisClient } from '../redis/client.js';
import { leaseSweepReply, stringArray, type LeaseRecord } from '../redis/replies.js';
import { expireMany, loadLease } from '../store/leases.js';
import type { Pool } from '../store/pool.js';
import { deleteService } from '../store/write-functions.js';
import { applyLease } from './redis-lease.js';

export interface SweeperOptions {
  /** ms between sweeps (LEASE_SWEEP_MS) */
  intervalMs: number;
  /** the sweep lock's TTL: how long a dead holder keeps its shards (LEASE_LOCK_MS) */
  lockMs: number;
  /** due leases handled per shard and sweep */
  batch?: number;
  /** the clock of deadlines (shared with Liveness) */
  now: () => number;
  /** this node's lock token (tests play two nodes) */
  owner?: string;
  /** each committed expiry's lag past its deadline, ms (bench/liveness.ts) */
  onExpired?: (lagMs: number) => void;
}

/** A due lease that PostgreSQL has not turned critical yet waits this long before it is looked at again. */
const RECHECK_MS = 5000;

export class LeaseSweeper {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<number> | null = null;
  readonly owner: string;
  /** shards this node held at its last sweep (tests, the takeover) */
  held = new Set<number>();

  constructor(
    readonly pool: Pool,
    readonly redis: RedisClient,
    readonly keys: Keys,
    readonly projector: Projector,
    readonly log: Logger,
    readonly o: SweeperOptions,
  ) {
    this.owner = o.owner ?? randomBytes(8).toString('hex');
  }

  /** One sweep of every shard this node holds or can take; returns the leases acted on. */
  sweepOnce(): Promise<number> {
    this.running ??= this.sweep().finally(() => (this.running = null));
    return this.running;
  }

  private async sweep(): Promise<number> {
    let acted = 0;
    let leased = 0;
    for (let shard = 0; shard < LEASE_SHARDS; shard++) {
      const now = this.o.now();
      const due = leaseSweepReply(await this.redis.leaseSweep(this.keys.sweepLock(shard), this.keys.deadlines(shard), this.keys.leases(shard), this.owner, this.o.lockMs, now, this.o.batch ?? 500));
      if (!due) {
        this.held.delete(shard);
        continue;
      }
      this.held.add(shard);
      leased += await this.redis.hlen(this.keys.leases(shard));
      // passing leases past their deadline: expired together, one transaction per batch
      const passing = due.filter((d) => d.lease.status === 'passing');
      if (passing.length) {
        try {
          acted += await this.expire(shard, passing);
        } catch (err) {
          // PostgreSQL or Redis away: the leases stay due, the next sweep tries again
          this.log.warn({ err: String(err), shard, leases: passing.length }, 'lease expiry failed; will retry');
        }
      }
      for (const { id, due: at, lease } of due) {
        if (lease.status === 'passing') continue;
        try {
          if (await this.act(id, at, lease)) acted++;
        } catch (err) {
          // PostgreSQL or Redis away: the lease stays due, the next sweep tries again
          this.log.warn({ err: String(err), serviceId: id }, 'lease sweep failed for a service; will retry');
        }
      }
    }
    if (this.held.size) setLeasedServices(leased);
    return acted;
  }

  /** Expire a shard's due passing leases (a batch): returns how many turned critical. */
  private async expire(shard: number, items: { id: string; due: number }[]): Promise<number> {
    const now = this.o.now();
    const dueOf = new Map(items.map((x) => [x.id, x.due]));
    const writes = await expireMany(this.pool, [...dueOf.keys()], now, async (ids) => stringArray(await this.redis.leaseExpire(this.keys.leases(shard), this.keys.deadlines(shard), now, RECHECK_MS, ...ids), 'lease-expire'));
    if (!writes.length) return 0;
    await this.projector.syncQuietly(writes);
    const seen = this.o.now();
    for (const w of writes) {
      const lag = seen - dueOf.get(w.id)!;
      countTransition('critical', 'expiry');
      observeExpiryLag(lag / 1000);
      this.o.onExpired?.(lag);
    }
    return writes.length;
  }

  private async act(id: string, _at: number, l: LeaseRecord): Promise<boolean> {
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

  start(): void {
    this.timer = setInterval(() => {
      this.sweepOnce().catch((err: unknown) => this.log.warn({ err: String(err) }, 'lease sweep failed; will retry'));
    }, this.o.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running?.catch(() => undefined);
    // hand the shards over now rather than after lockMs
    await Promise.all([...this.held].map((s) => this.redis.delIfEqual(this.keys.sweepLock(s), this.owner).catch(() => undefined)));
    this.held.clear();
  }
}
