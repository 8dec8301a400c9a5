// Group commit of registrations (issue 22): concurrent POSTs that arrive within a short
// window share one statement (writes.ts, createServices), so PostgreSQL parses, plans,
// WAL-flushes and takes the change feed's lock once per batch instead of once per write.
// Each caller is still answered only after the statement that holds its row committed.
// A batch that fails for a reason other than an outage (a constraint one of its writes
// violates) is retried write by write, so that the failing write fails alone and its
// neighbours commit: a failed statement wrote nothing, so no write is ever committed twice.
// `apply` (the projector's applyCommitted) then brings the index up to date for the whole
// batch at once, before any of its callers is answered: one pipelined page of scripts and
// one read of the generation pointers per batch instead of per write (the server thread's
// socket writes to Redis were ~18 % of its busy time at 64 writers, bench/README.md).
import { ApiError } from '../domain/errors.js';
import type { Pool } from './pool.js';
import { createServices, type Committed, type NewService } from './writes.js';

export interface GroupCommitOptions {
  /** how long the first write of a batch waits for company, ms (0: to the end of the event-loop turn) */
  windowMs: number;
  /** most writes per statement; a full batch goes at once */
  maxBatch: number;
  /** statements in flight at once (each holds a pool connection) */
  concurrency: number;
}

interface Waiting {
  item: NewService;
  resolve: (c: Committed) => void;
  reject: (e: unknown) => void;
}

export class GroupCommitter {
  private queue: Waiting[] = [];
  private timer: NodeJS.Timeout | NodeJS.Immediate | null = null;
  private inFlight = 0;
  /** batches committed and writes in them (metrics, tests) */
  readonly stats = { batches: 0, writes: 0, isolated: 0 };

  constructor(
    private readonly pool: Pool,
    private readonly o: GroupCommitOptions,
    /** run on each batch's committed writes before they are answered; must not throw */
    private readonly apply: (done: Committed[]) => Promise<unknown> = async () => undefined,
  ) {}

  /** Commit one registration with whatever others are waiting; resolves after COMMIT and `apply`. */
  create(item: NewService): Promise<Committed> {
    return new Promise<Committed>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.queue.length >= this.o.maxBatch) return this.flush();
    if (this.timer) return;
    this.timer = this.o.windowMs > 0 ? setTimeout(() => this.flush(), this.o.windowMs) : setImmediate(() => this.flush());
  }

  private flush(): void {
    if (this.timer) {
      clearTimeout(this.timer as NodeJS.Timeout);
      clearImmediate(this.timer as NodeJS.Immediate);
      this.timer = null;
    }
    // every connection busy: the queue grows into the next batch, sent when one comes back
    while (this.queue.length && this.inFlight < this.o.concurrency) {
      const batch = this.queue.splice(0, this.o.maxBatch);
      this.inFlight++;
      // the slot is given back once the statement returned: the next batch's statement
      // runs while this one's is applied to the index
      let freed = false;
      const free = () => {
        if (freed) return;
        freed = true;
        this.inFlight--;
        if (this.queue.length) this.schedule();
      };
      void this.run(batch, free).finally(free);
      if (this.queue.length < this.o.maxBatch) break;
    }
  }

  private async run(batch: Waiting[], free: () => void): Promise<void> {
    let out: Committed[];
    try {
      out = await createServices(this.pool, batch.map((w) => w.item));
    } catch (err) {
      if (batch.length === 1 || isOutage(err)) {
        for (const w of batch) w.reject(err);
        return;
      }
      // one of them broke the statement: each on its own, so only that one fails
      this.stats.isolated++;
      const alone = await Promise.all(
        batch.map(async (w) => {
          try {
            return (await createServices(this.pool, [w.item]))[0]!;
          } catch (e) {
            w.reject(e);
            return null;
          }
        }),
      );
      free();
      const ok = alone.filter((c): c is Committed => c !== null);
      await this.apply(ok);
      batch.forEach((w, i) => alone[i] && w.resolve(alone[i]));
      return;
    }
    free();
    this.stats.batches++;
    this.stats.writes += batch.length;
    await this.apply(out);
    batch.forEach((w, i) => w.resolve(out[i]!));
  }
}

/** 503 (PostgreSQL away): every write of the batch gets it, none is retried alone. */
function isOutage(err: unknown): boolean {
  return err instanceof ApiError && err.status === 503;
}
