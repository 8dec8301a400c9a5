// The requests of a thread answered without asking Redis (from a rate-limit admission batch, or
// refused locally while the thread knows the sandbox over its limit), waiting to be recorded
// in the sandbox's poll history and totals: one rate-count call per sandbox at the end of
// the event-loop turn (or RATE_COUNT_FLUSH_MS), or carried by the turn's heartbeat call
// (liveness/heartbeat-batch.ts, a standalone Redis), or by the next rate-limit call of the
// sandbox (the admitted ones: takeAdmitted). A poll flushes first (sandboxes/summary.ts).
import type { Keys } from '../domain/keys.js';
import { RATE_WINDOW } from './window.js';
import type { RedisClient } from '../redis/client.js';

/** Requests of a sandbox answered without asking Redis, to record (rate-count-2.lua's arguments). */
export interface RateRecord {
  uuid: string;
  /** requests, refused ones included */
  n: number;
  /** how many of them were refused */
  rejected: number;
}

/** Where a turn's rate records wait (PendingRecords, below): the heartbeat call takes them. */
export interface RateRecords {
  /** the records waiting, handed over (and forgotten there) */
  take(): RateRecord[];
  /** records a failed call carried: to be sent again */
  restore(records: RateRecord[]): void;
  /** send the records waiting on their own (a turn whose heartbeats all went already) */
  flush(): void;
  /** told by the batch that carries them (carry()): how to wait for its calls in flight */
  carriedBy?(batch: { landed(): Promise<void> | null }): void;
}

export class PendingRecords implements RateRecords {
  private pending = new Map<string, { n: number; rejected: number }>();
  private flushing: NodeJS.Timeout | NodeJS.Immediate | null = null;
  /** the heartbeat batch that carries records in its calls (carriedBy) */
  private carrier: { landed(): Promise<void> | null } | null = null;
  private readonly flushTurnNow = () => this.flushTurn();

  /**
   * `flushMs`: how long records may wait (0: the end of the turn); `carried`: whether a call
   * of this turn will carry them (HeartbeatBatch.carries()): then the turn's flush leaves
   * them to it.
   */
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly flushMs: number,
    private readonly carried: () => boolean,
  ) {}

  /** A request answered without Redis (`rejected`: 1 if refused): record it in the next batch. */
  record(uuid: string, rejected: number): void {
    this.add(uuid, 1, rejected);
    this.schedule();
  }

  /**
   * The admitted requests waiting for `uuid`, handed to a rate-limit call that records them
   * with its own count (the refused ones wait for a flush: that script counts no refusal).
   */
  takeAdmitted(uuid: string): number {
    const held = this.pending.get(uuid);
    if (!held) return 0;
    if (held.rejected > 0) this.pending.set(uuid, { n: held.rejected, rejected: held.rejected });
    else this.pending.delete(uuid);
    return held.n - held.rejected;
  }

  /** Admitted requests a failed rate-limit call carried (takeAdmitted): recorded with the next batch. */
  giveBack(uuid: string, n: number): void {
    if (n > 0) this.add(uuid, n, 0);
  }

  private add(uuid: string, n: number, rejected: number): void {
    const p = this.pending.get(uuid);
    if (p) {
      p.n += n;
      p.rejected += rejected;
    } else this.pending.set(uuid, { n, rejected });
  }

  private schedule(): void {
    if (this.flushing) return;
    this.flushing = this.flushMs > 0 ? setTimeout(this.flushTurnNow, this.flushMs).unref() : setImmediate(this.flushTurnNow);
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

  carriedBy(batch: { landed(): Promise<void> | null }): void {
    this.carrier = batch;
  }

  /**
   * Settles when the records already handed to calls in flight (take()) are counted in
   * Redis, or their calls failed; null when none is in flight. A poll waits for it.
   */
  landed(): Promise<void> | null {
    return this.carrier?.landed() ?? null;
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
}
