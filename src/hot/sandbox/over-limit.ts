// Over-limit sandboxes, known locally: once the rate-limit script refuses a sandbox, this
// thread knows until when the window stays full (it can only admit again when its oldest
// counted bucket slides out) and refuses the sandbox's requests without a Redis round trip
// until then. The script returns that moment as a duration relative to its own clock; it is
// anchored here on this process's monotonic clock at the moment the request was sent, which
// is never later than the script's now: the local "over until" never outlasts the window's
// (no request Redis would admit is refused for clock reasons, whatever the clocks of the
// nodes and of Redis say). Refusals answered here reach Redis in batches (rate-records.ts).
//
// What can end a full window earlier than its oldest bucket: a tier change (dropped here
// at once on the thread that made it and through the invalidation message elsewhere), and
// unused lease admissions given back (only limits >= 2,000 a minute lease). A thread that
// holds some of its own asks Redis instead of refusing locally (rate-limiter.ts), so only other
// threads' can be missed: within leases.ts's early-refusal bound
// (docs/decisions/admission-batches.md).
import type { RateResult } from './leases.js';
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
