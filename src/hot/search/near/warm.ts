// Warming the near cache (docs/decisions/near-cache-warming.md). After a start, a rebuild
// or a lost delta subscription, this thread's near cache holds no documents, and every cold
// page would fetch, decode and digest its own from Redis until the pages had covered the
// registry. The warmer reads production's documents into the near cache in the background,
// in ascending seq order, one batch of consecutive members of the set of every service at a
// time, until the cache holds NEAR_WARM_PERCENT of its budget: the same fetch a cold page
// makes (one that crossed a delta keeps nothing, and is tried again), yielding to requests
// between batches. Sandboxes are not warmed: their pages fill as they are read.
import type { NearCache } from './near-cache.js';

/** documents fetched in one call (one Redis HMGET): small enough that requests wait little between batches */
export const WARM_BATCH = 256;
/** fetches of one batch at most, while a delta arrives during each (then it is left to the pages) */
export const WARM_TRIES = 3;

/** What the warmer reads: the live index's production namespace (search/searches.ts warmSource). */
export interface WarmSource {
  /** production's base at the live generation, when the near cache may answer; else null */
  base(): string | null;
  /** every production seq, ascending (the near cache's copy of the set of every service) */
  all(base: string): Promise<Float64Array | null>;
  /** the plain bytes of production's documents of `seqs` (null: not there) */
  fetch(base: string, seqs: number[]): Promise<(Buffer | null)[]>;
}

export class NearWarmer {
  /** documents the passes fetched and kept; batches a delta kept out WARM_TRIES times */
  readonly stats = { documents: 0, cut: 0 };
  /** the base and clear count the last pass began for: a pass runs once for each */
  private warmedFor = '';
  private running = false;
  private stopped = false;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly near: NearCache,
    private readonly source: WarmSource,
    /** share of the near cache's budget to fill, in percent (0: never warm) */
    private readonly percent: number,
    /** how often to look for a base not warmed yet, ms */
    private readonly everyMs = 1000,
  ) {}

  start(): void {
    if (this.percent <= 0 || !this.near.enabled) return;
    this.stopped = false;
    this.timer = setInterval(() => void this.check(), this.everyMs);
    this.timer.unref();
    void this.check();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Warm the live production base if it was not warmed since it went live or since the cache was cleared. */
  async check(): Promise<void> {
    if (this.running || this.stopped) return;
    const base = this.source.base();
    if (base === null) return;
    const key = this.keyOf(base);
    if (key === this.warmedFor) return;
    this.running = true;
    this.warmedFor = key;
    try {
      if (!(await this.pass(base, key))) this.warmedFor = ''; // (cut short: again at the next check)
    } catch {
      this.warmedFor = ''; // Redis away or an outage: again at a later check
    } finally {
      this.running = false;
    }
  }

  /** What a pass runs once for: the base, and the near cache's clear count (a clear empties it) */
  private keyOf(base: string): string {
    return base + '\0' + this.near.clears;
  }

  /** One pass over `base`: true when it ended (full, or every document read), false when cut short. */
  private async pass(base: string, key: string): Promise<boolean> {
    const all = await this.source.all(base);
    if (!all) return false;
    const target = (this.near.maxBytes * this.percent) / 100;
    const fetch = (seqs: number[]) => this.source.fetch(base, seqs);
    for (let i = 0; i < all.length; i += WARM_BATCH) {
      if (this.near.bytes >= target) return true;
      if (this.stopped || this.source.base() !== base || this.keyOf(base) !== key) return false;
      // (a copy: the set's array may change under a delta while the fetch is out); fetched
      // again when a delta arrived meanwhile, as writes to production may come at any time
      const batch = all.slice(i, i + WARM_BATCH);
      let held: number | null = null;
      for (let k = 0; held === null && k < WARM_TRIES; k++) held = await this.near.warm(base, batch, fetch);
      if (held === null) this.stats.cut++;
      this.stats.documents += held ?? 0;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    return true;
  }
}
