// Over-limit sandboxes, known locally (docs/decisions/rate-limits.md): once the rate-limit
// script refuses a sandbox, this thread refuses its requests without Redis until the window can
// admit again. The script gives that moment relative to its own clock; it is anchored on this
// process's monotonic clock when the request was sent (never later than the script's now), so
// the local "over until" never outlasts the window. A tier change and given-back admissions
// end it early; a thread holding admissions of its own asks Redis instead, so only other
// threads' can be missed (within admission.ts's bound). Refusals reach Redis in batches
// (rate-records.ts).
import type { RateResult } from './admission.js';
import { Oldest } from '../domain/oldest.js';

const STATES_MAX = 50_000;

interface Over {
  /** monotonic ms (performance.now()) from which the window may admit again */
  until: number;
  limit: number;
  used: number;
}

export class OverLimit {
  private over = new Map<string, Over>();
  private readonly oldest = new Oldest(this.over);

  /** Redis refused a request sent at monotonic time `sentAt`; it stays over for `overMs`. */
  refused(uuid: string, r: RateResult, overMs: number, sentAt: number): void {
    if (!(overMs > 0)) return;
    if (this.over.size >= STATES_MAX) this.over.delete(this.oldest.next()!);
    this.over.set(uuid, { until: sentAt + overMs, limit: r.limit, used: r.used });
  }

  /** The local refusal while the sandbox is known to be over its limit, else null. */
  check(uuid: string, now: number): RateResult | null {
    const o = this.over.get(uuid);
    if (!o) return null;
    if (now >= o.until) {
      this.over.delete(uuid);
      return null;
    }
    const retry = Math.max(1, Math.ceil((o.until - now) / 1000));
    return { admitted: false, limit: o.limit, used: o.used, retryAfter: retry, reset: retry };
  }

  /** Forget it (the sandbox's tier changed): the next request asks Redis. */
  drop(uuid: string): void {
    this.over.delete(uuid);
  }

  get size(): number {
    return this.over.size;
  }
}
