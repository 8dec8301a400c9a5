// Rate-limit admission batches ("admission batches"; docs/decisions/admission-batches.md): for a sandbox
// with a high limit the rate-limit script admits a batch of requests at once, counted in the
// window, and this thread answers from it without a Redis round trip for at most BATCH_MS and
// never past the 5-second bucket it was counted in (Redis's buckets; this thread's clock only
// measures the ms left, from when it asked, so a batch ends early, never late). Below
// BATCH_DIVISOR × 2 a minute every request asks Redis. A window never admits more than the
// limit; unused admissions are given back with the thread's next request of the sandbox, and
// early refusals are bounded by threads × 3 × limit / BATCH_DIVISOR a window (the current
// batch, the one asked for ahead, one a concurrent ask replaced). The next batch is asked for
// in the background when a batch of PREFETCH_MIN or more is down to a quarter, and counted
// after all of the current one, so RateLimit still counts down one by one. A tier change
// reaches a thread holding a batch within BATCH_MS.
import { RATE_WINDOW } from './window.js';
import { Oldest } from '../domain/oldest.js';

/** The answer of the rate limiter for one request of a sandbox. */
export interface RateResult {
  admitted: boolean;
  limit: number;
  used: number;
  retryAfter: number;
  reset: number;
  /** refused: ms until the window can admit again, by Redis's clock (0 when admitted) */
  retryAfterMs?: number;
}

export const BATCH_MS = 100;
/**
 * The largest batch, whatever the limit: it only sets how often a very high limit's thread
 * asks Redis (from 256,000 a minute up; limit / BATCH_DIVISOR keeps the accuracy bound).
 * 4,096: a sandbox at ~100,000 requests a second asks ~25 times a second
 * (docs/decisions/admission-batches.md; bench/README.md, "Heartbeat row").
 */
export const BATCH_MAX = 4096;
export const BATCH_DIVISOR = 1000;
/** batches of at least this many admissions ask for the next one when a quarter is left */
export const PREFETCH_MIN = 8;
const STATES_MAX = 50_000;

interface Batch {
  /** the 5-second bucket the batch was counted in (Redis's bucket number) */
  bucket: number;
  /** admissions of the batch not used yet */
  left: number;
  /** admissions of the batch used without asking Redis */
  taken: number;
  /** the window's count right after the first admission of the batch */
  used: number;
  limit: number;
  resetAt: number;
  expires: number;
  /** ask for the next batch when `left` falls to this (-1: never; a small batch) */
  low: number;
}

interface State {
  batch: Batch | null;
  /** the batch asked for ahead (prefetch), used once `admission batch` is spent or over */
  next: Batch | null;
  /** admissions to ask for next time when no admission batch is held */
  want: number;
  asking: Promise<RateResult> | null;
  /** unused admissions of admission batches dropped or replaced, by the bucket they were counted in: given back with the next request */
  refunds: Map<number, number>;
  /** the limit Redis last reported (0: not asked yet) */
  limit: number;
}

const bucketOf = (ms: number) => Math.floor(ms / RATE_WINDOW.bucketMs);

const usable = (l: Batch | null, now: number): boolean => l !== null && l.left > 0 && now < l.expires;

export class AdmissionBatches {
  private states = new Map<string, State>();
  private readonly oldest = new Oldest(this.states);

  /** `onLow`: a batch is down to its last quarter and nothing is being asked: ask for the next (prefetch()) */
  constructor(private readonly onLow: (uuid: string) => void = () => undefined) {}

  private state(uuid: string): State {
    let st = this.states.get(uuid);
    if (!st) {
      if (this.states.size >= STATES_MAX) this.states.delete(this.oldest.next()!);
      st = { batch: null, next: null, want: 1, asking: null, refunds: new Map(), limit: 0 };
      this.states.set(uuid, st);
    }
    return st;
  }

  /** An admission from this thread's admission batch, or null when Redis must be asked. */
  take(uuid: string, now: number): RateResult | null {
    const st = this.states.get(uuid);
    if (!st) return null;
    let l = st.batch;
    if (l === null || !usable(l, now)) {
      // the current batch is spent: go on with the one asked for ahead. One that ran out
      // of time with admissions left is not followed by it: the next ask gives both back,
      // and the count goes on from the window's without a gap (RateLimit counts down)
      const n = st.next;
      if (l === null || l.left > 0 || n === null || !usable(n, now)) return null;
      st.batch = l = n;
      st.next = null;
    }
    l.left--;
    l.taken++;
    if (l.left === l.low && st.next === null && st.asking === null) this.onLow(uuid);
    return { admitted: true, limit: l.limit, used: Math.min(l.limit, l.used + l.taken), retryAfter: 0, reset: Math.max(1, Math.ceil((l.resetAt - now) / 1000)) };
  }

  /**
   * Whether batches are worth waiting for: the last known limit allows more than one
   * admission at a time. Below that, concurrent requests ask Redis in parallel.
   */
  mayBatch(uuid: string): boolean {
    const limit = this.states.get(uuid)?.limit ?? 0;
    return Math.min(BATCH_MAX, Math.floor(limit / BATCH_DIVISOR)) > 1;
  }

  /** Whether this thread holds unused admissions to give back (then asking Redis may admit). */
  holdsRefunds(uuid: string): boolean {
    const st = this.states.get(uuid);
    return !!st && (st.refunds.size > 0 || (st.batch?.left ?? 0) > 0 || (st.next?.left ?? 0) > 0);
  }

  /** The request of this thread asking Redis for this sandbox right now, if any. */
  asking(uuid: string): Promise<RateResult> | null {
    return this.states.get(uuid)?.asking ?? null;
  }

  ask(uuid: string, f: () => Promise<RateResult>): Promise<RateResult> {
    const st = this.state(uuid);
    const p = f();
    st.asking = p;
    const done = () => {
      if (st.asking === p) st.asking = null;
    };
    p.then(done, done);
    return p;
  }

  /**
   * What to ask Redis for: the batch size, and the unused admissions to give back as
   * "bucket:count,…" (at most a few buckets: an admission batch never outlives its own). `ahead`: a
   * prefetch, asked while the current batch still answers (it is kept).
   */
  plan(uuid: string, ahead = false): { want: number; refunds: string } {
    const st = this.state(uuid);
    if (!ahead) this.retire(st);
    const refunds = [...st.refunds].map(([b, n]) => `${b}:${n}`).join(',');
    st.refunds.clear();
    return { want: st.want, refunds };
  }

  /**
   * Redis answered at local time `at`: keep the rest of the batch as this thread's admission batch,
   * until BATCH_MS or the end of Redis's bucket, whichever comes first. `window` is the
   * bucket and its ms left as the script reported them; without it `at` is taken to be on
   * Redis's clock (unit tests). `ahead`: the answer to a prefetch (no request took the
   * batch's first admission, and `r.used` is the window's count before the batch): it
   * becomes the next batch while the current one still answers, else the current one.
   */
  granted(uuid: string, r: RateResult, granted: number, at: number, window = { bucket: bucketOf(at), leftMs: (bucketOf(at) + 1) * RATE_WINDOW.bucketMs - at }, ahead = false): void {
    const st = this.state(uuid);
    // `at` is when it was asked: a current batch that answered then keeps answering, with
    // this one next (take() decides whether it follows, by how the current one ended)
    const keep = ahead && usable(st.batch, at);
    // a concurrent ask's admission batch (or one asked ahead): its unused admissions go back next time
    if (keep) this.retireLease(st, st.next);
    else this.retire(st);
    st.next = null;
    st.limit = r.limit;
    const max = Math.min(BATCH_MAX, Math.floor(r.limit / BATCH_DIVISOR));
    if (!r.admitted || granted <= 0) {
      st.want = 1;
      return;
    }
    const batch: Batch = {
      bucket: window.bucket,
      left: ahead ? granted : granted - 1,
      taken: 0,
      used: r.used,
      limit: r.limit,
      resetAt: at + r.reset * 1000,
      expires: at + Math.min(BATCH_MS, window.leftMs),
      low: granted >= PREFETCH_MIN ? Math.floor(granted / 4) : -1,
    };
    if (keep) st.next = batch;
    else st.batch = batch;
    // next batch: twice this one while batches run out, never above the cap
    st.want = max > 1 ? Math.min(max, Math.max(2, granted * 2)) : 1;
  }

  /** Forget the admission batch (the sandbox's tier changed); its unused admissions go back. */
  drop(uuid: string): void {
    const st = this.states.get(uuid);
    if (!st) return;
    this.retire(st);
    st.want = 1;
  }

  /** End the current admission batch and the one asked ahead. */
  private retire(st: State): void {
    const { batch, next } = st;
    st.batch = null;
    st.next = null;
    this.retireLease(st, batch);
    this.retireLease(st, next);
  }

  /** End an admission batch: size the next batch by its use, keep its rest for a refund. */
  private retireLease(st: State, l: Batch | null): void {
    if (!l) return;
    if (l.left > 0) {
      // the batch was larger than this thread needed: ask for what it used next time
      st.want = Math.max(1, l.taken + 1);
      st.refunds.set(l.bucket, (st.refunds.get(l.bucket) ?? 0) + l.left);
    }
  }

  get size(): number {
    return this.states.size;
  }
}
