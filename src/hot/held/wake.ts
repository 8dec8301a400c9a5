// What wakes held requests, on every thread of every node: the index's deltas (redis/delta.ts:
// a write's, or a page of expiries', published by the Lua scripts that applied them and
// received by each thread's subscriber, search/invalidation.ts), turned into the answers they
// may change (watches.ts affected()). A delta of another generation (a rebuild's) wakes
// nothing; a skipped version (a lost message) has every answer of its namespace computed again,
// and so does a lost final delta once the near cache's version check finds it (lost()).
//
// On the thread that made a write, WriteApplied (registry/write-applied.ts) comes before the
// write's 2xx. Its delta normally arrives within a millisecond; should it not have arrived
// `fallbackMs` later, every answer of the namespace is computed again (the contract's 100 ms
// on the writing node does not hang on pub/sub).
import type { WriteApplied, WriteAppliedEvents } from '../registry/index.js';
import { parseDelta } from '../redis/delta.js';
import type { HeldRequests } from './held.js';

/** namespace bases whose version is followed at most (every sandbox with writes has one) */
const LATEST_MAX = 100_000;

export class Wakes {
  /** per namespace base: the newest delta version seen */
  private latest = new Map<string, number>();
  /** per namespace base: the version this thread's own write reached, its delta not seen yet */
  private pending = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly held: HeldRequests,
    /** the namespace of a base of the live generation; null for anything else */
    private readonly nsOf: (base: string) => string | null,
    private readonly fallbackMs = 50,
  ) {}

  /** A delta message of the index's channel. */
  delta(msg: string): void {
    const watches = this.held.watches;
    if (!watches.size) {
      // nothing held, nothing to wake: only its version is followed (a gap is then seen at
      // the first delta after a request is held), from its head alone
      const [, base, ver] = msg.split('\t', 3);
      const v = Number(ver);
      if (base && Number.isSafeInteger(v)) this.seen(base, v);
      return;
    }
    const p = parseDelta(msg);
    if (!p) return;
    const ns = this.nsOf(p.base);
    if (ns === null) return;
    const { base, delta } = p;
    const last = this.latest.get(base);
    if (last !== undefined && delta.ver <= last) return; // (a duplicate: never expected)
    this.seen(base, delta.ver);
    const waited = this.pending.get(base);
    if (waited !== undefined && waited <= delta.ver) this.pending.delete(base);
    if (!watches.hasNs(ns)) return;
    if (last !== undefined && delta.ver > last + 1) {
      for (const g of watches.inNs(ns)) this.held.mark(g);
      return;
    }
    for (const g of watches.affected(ns, delta)) this.held.mark(g);
  }

  /** `base` reached `ver` (the map of versions is bounded: emptied when full, a gap then unseen once). */
  private seen(base: string, ver: number): void {
    if (this.latest.size >= LATEST_MAX && !this.latest.has(base)) this.latest.clear();
    this.latest.set(base, ver);
  }

  /**
   * The near cache's version check found `base` behind Redis twice (a final delta lost with
   * no later write to reveal it: search/near/check.ts): every answer of its namespace again.
   */
  lost(base: string): void {
    this.latest.delete(base);
    const ns = this.nsOf(base);
    if (ns !== null) for (const g of this.held.watches.inNs(ns)) this.held.mark(g);
  }

  /** Follow this thread's own writes (after the caches that its answers read have dropped them). */
  follow(writes: WriteAppliedEvents): void {
    writes.subscribe((e) => this.write(e));
  }

  write(e: WriteApplied): void {
    const watches = this.held.watches;
    if (!watches.size) return;
    for (const [base, ver] of e.versions) {
      const ns = this.nsOf(base);
      if (ns === null || !watches.hasNs(ns) || (this.latest.get(base) ?? 0) >= ver) continue;
      this.pending.set(base, Math.max(ver, this.pending.get(base) ?? 0));
      this.timer ??= setTimeout(() => this.late(), this.fallbackMs).unref();
    }
  }

  /** The deltas of this thread's writes that have not come: every answer of their namespaces again. */
  private late(): void {
    this.timer = null;
    for (const [base, ver] of this.pending) {
      if ((this.latest.get(base) ?? 0) >= ver) continue;
      const ns = this.nsOf(base);
      if (ns !== null) for (const g of this.held.watches.inNs(ns)) this.held.mark(g);
    }
    this.pending.clear();
  }

  /** Deltas may have been missed (a subscriber that reconnected) or the generation changed: everything again. */
  cleared(): void {
    this.latest.clear();
    this.pending.clear();
    this.held.markAll();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
