// Group commit of registry writes (docs/decisions/group-commit.md): concurrent registrations,
// patches and deletions within a short window share one statement per kind (register.ts,
// patches.ts, registry/write-functions.ts), so PostgreSQL parses, WAL-flushes and takes the
// change feed's lock once per batch. Each caller is answered only after its statement
// committed and `apply` (the projector's applyCommitted) has brought the index up to date for
// the whole batch. A write that only concerns itself gets its own outcome from the statement;
// a batch failing for another reason than an outage is retried write by write, so the failing
// write fails alone (a failed statement wrote nothing, so nothing commits twice). A
// registration its sandbox has no room for (the tier's quota, register.ts) is left out by the
// statement and refused alone (409) while its neighbours commit.
import { ApiError } from '../domain/errors.js';
import { patchServices, type CommittedPatch, type PreparedPatch } from './patches.js';
import type { Pool } from '../pg/pool.js';
import { deleteServices, type CommittedWrite, type DeleteItem } from '../registry/index.js';
import { commitServices, isRefusal, quotaError, type Committed, type Created, type NewService } from './register.js';

export interface GroupCommitOptions {
  /** how long the first write of a batch waits for company, ms (0: to the end of the event-loop turn) */
  windowMs: number;
  /** most writes per statement; a full batch goes at once */
  maxBatch: number;
  /** statements in flight at once, all kinds together (each holds a pool connection) */
  concurrency: number;
  /** services per sandbox by tier (TIER_MAX_SERVICES); none: no quota (tests of the store) */
  quotas?: Readonly<Record<string, number>>;
}

/** A committed write as the index is sent it (the projector's CommittedEntry). */
type CommittedEntry = Committed | CommittedWrite;

interface Waiting<I, O> {
  item: I;
  resolve: (o: O) => void;
  reject: (e: unknown) => void;
}

/** One kind of write: its statement, and what of its outcome the index is sent. */
interface Kind<I, O> {
  /** one statement for the batch: an outcome per item, in order */
  exec: (pool: Pool, items: I[]) => Promise<O[]>;
  /** the committed writes of an outcome, for `apply` */
  writes: (o: O) => CommittedEntry[];
  /** items with the same key never share a statement (one statement may not touch a row twice) */
  key?: (i: I) => string;
}

class Lane<I, O> {
  queue: Waiting<I, O>[] = [];
  timer: NodeJS.Timeout | NodeJS.Immediate | null = null;
  constructor(readonly kind: Kind<I, O>) {}

  /** The next batch: up to `max` queued items, at most one per key (the others stay queued, in order). */
  take(max: number): Waiting<I, O>[] {
    const key = this.kind.key;
    if (!key) return this.queue.splice(0, max);
    const seen = new Set<string>();
    const batch: Waiting<I, O>[] = [];
    const rest: Waiting<I, O>[] = [];
    for (const w of this.queue) {
      const k = key(w.item);
      if (batch.length < max && !seen.has(k)) {
        seen.add(k);
        batch.push(w);
      } else rest.push(w);
    }
    this.queue = rest;
    return batch;
  }
}

export class GroupCommitter {
  private inFlight = 0;
  private readonly lanes: Lane<never, unknown>[] = [];
  private readonly creates: Lane<NewService, Created>;
  private readonly patches: Lane<PreparedPatch, CommittedPatch | null>;
  private readonly deletes: Lane<DeleteItem, CommittedWrite[] | null>;
  /** batches committed and writes in them, and batches retried write by write (metrics, tests) */
  readonly stats = { batches: 0, writes: 0, isolated: 0 };

  constructor(
    private readonly pool: Pool,
    private readonly o: GroupCommitOptions,
    /** run on each batch's committed writes before they are answered; must not throw */
    private readonly apply: (done: CommittedEntry[]) => Promise<unknown> = async () => undefined,
  ) {
    const quota = o.quotas ? { tiers: o.quotas, all: false } : null;
    this.creates = this.lane({ exec: (pool, items) => commitServices(pool, items, quota), writes: (c) => (isRefusal(c) ? [] : [c]) });
    this.patches = this.lane({ exec: patchServices, writes: (c) => (c ? [c] : []), key: (p) => p.id });
    this.deletes = this.lane({ exec: deleteServices, writes: (w) => w ?? [], key: (d) => d.id });
  }

  private lane<I, O>(kind: Kind<I, O>): Lane<I, O> {
    const l = new Lane(kind);
    this.lanes.push(l as unknown as Lane<never, unknown>);
    return l;
  }

  /**
   * Commit one registration with whatever others are waiting; resolves after COMMIT and
   * `apply`. 409 QUOTA_EXCEEDED (ApiError) when its sandbox has no room left.
   */
  async create(item: NewService): Promise<Committed> {
    const c = await this.submit(this.creates, item);
    if (isRefusal(c)) throw quotaError(c);
    return c;
  }

  /**
   * Commit a patch prepared against the state read at its version (patches.ts patchService's
   * `commit`): null when the service moved on since (read again).
   */
  patch(item: PreparedPatch): Promise<CommittedPatch | null> {
    return this.submit(this.patches, item);
  }

  /** Delete a service: its writes (write-functions.ts deleteService's), or null when it is not in `ns` (404). */
  delete(item: DeleteItem): Promise<CommittedWrite[] | null> {
    return this.submit(this.deletes, item);
  }

  private submit<I, O>(lane: Lane<I, O>, item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      lane.queue.push({ item, resolve, reject });
      this.schedule(lane);
    });
  }

  private schedule<I, O>(lane: Lane<I, O>): void {
    if (lane.queue.length >= this.o.maxBatch) return this.flush(lane);
    if (lane.timer) return;
    lane.timer = this.o.windowMs > 0 ? setTimeout(() => this.flush(lane), this.o.windowMs) : setImmediate(() => this.flush(lane));
  }

  private flush<I, O>(lane: Lane<I, O>): void {
    if (lane.timer) {
      clearTimeout(lane.timer as NodeJS.Timeout);
      clearImmediate(lane.timer as NodeJS.Immediate);
      lane.timer = null;
    }
    // every connection busy: the queue grows into the next batch, sent when one comes back
    while (lane.queue.length && this.inFlight < this.o.concurrency) {
      const batch = lane.take(this.o.maxBatch);
      this.inFlight++;
      // the slot is given back once the statement returned: the next batch's statement
      // runs while this one's is applied to the index
      let freed = false;
      const free = () => {
        if (freed) return;
        freed = true;
        this.inFlight--;
        // the slot goes to whatever waits (this lane first), at once: it waited while every
        // slot was busy, which is the window it was given
        for (const l of [lane as unknown as Lane<never, unknown>, ...this.lanes]) if (l.queue.length) this.flush(l);
      };
      void this.run(lane, batch, free).finally(free);
      // (items held back by their key go with a later batch, normally once this one committed)
      if (lane.queue.length < this.o.maxBatch) break;
    }
  }

  private async run<I, O>(lane: Lane<I, O>, batch: Waiting<I, O>[], free: () => void): Promise<void> {
    const { exec, writes } = lane.kind;
    let out: (O | undefined)[];
    try {
      out = await exec(this.pool, batch.map((w) => w.item));
      this.stats.batches++;
      this.stats.writes += batch.length;
    } catch (err) {
      if (batch.length === 1 || isOutage(err)) {
        for (const w of batch) w.reject(err);
        return;
      }
      // one of them broke the statement: each on its own, so only that one fails
      this.stats.isolated++;
      out = await Promise.all(
        batch.map(async (w) => {
          try {
            return (await exec(this.pool, [w.item]))[0]!;
          } catch (e) {
            w.reject(e);
            return undefined;
          }
        }),
      );
    }
    free();
    await this.apply(out.flatMap((o) => (o === undefined ? [] : writes(o))));
    batch.forEach((w, i) => out[i] !== undefined && w.resolve(out[i]));
  }
}

/** 503 (PostgreSQL away): every write of the batch gets it, none is retried alone. */
function isOutage(err: unknown): boolean {
  return err instanceof ApiError && err.status === 503;
}
