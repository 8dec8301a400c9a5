// The set members of the pages a rebuild has written, held until the pages are past their
// buckets: then each bucket is written once, whole (index-sets-1.lua), instead of being read
// and rewritten by every page that adds to it (docs/decisions/rebuild.md). Pages come in seq
// order, so every set's members arrive ascending and a bucket is complete once a page ends
// past it. Used by rebuild.ts.
import { encodeSets } from '../../workers/buckets.js';
import type { IndexPageRow } from '../registry/index.js';

/** One index-sets-1.lua call's members: its index string and blob (encodeSets()). */
export interface SetsCall {
  index: string;
  blob: Buffer;
}

/**
 * One set's held seqs, ascending, in a typed array grown by doubling: the collector does not
 * walk its contents, as it walks plain arrays' in every major collection
 * (docs/decisions/rebuild.md).
 */
class SeqList {
  a = new Float64Array(16);
  n = 0;
  push(q: number): void {
    if (this.n === this.a.length) {
      const b = new Float64Array(this.a.length * 2);
      b.set(this.a);
      this.a = b;
    }
    this.a[this.n++] = q;
  }
  get last(): number {
    return this.n ? this.a[this.n - 1]! : -1;
  }
}

export class PendingSets {
  /** namespace → set suffix → seqs */
  private readonly byNs = new Map<string, Map<string, SeqList>>();

  /** a run of one namespace's services as index-page-1.lua wrote it (seq order, after the pages already added) */
  add(ns: string, run: readonly IndexPageRow[]): void {
    let sets = this.byNs.get(ns);
    if (!sets) this.byNs.set(ns, (sets = new Map()));
    for (const [, , , seq, , members] of run) {
      const q = Number(seq);
      for (const m of members.split('\n')) {
        if (!m) continue;
        let l = sets.get(m);
        if (!l) sets.set(m, (l = new SeqList()));
        if (l.last !== q) l.push(q); // not a suffix listed twice in one row
      }
    }
  }

  /**
   * Take out every namespace's members below `bound` (a bucket boundary, or Infinity) as
   * index-sets-1.lua calls of about `maxMembers` each (a set's range is never split, so one
   * set alone may pass it), per namespace in set order.
   */
  take(bound: number, maxMembers: number): Map<string, SetsCall[]> {
    const out = new Map<string, SetsCall[]>();
    for (const [ns, sets] of this.byNs) {
      const calls: SetsCall[] = [];
      let batch: [string, Float64Array][] = [];
      let n = 0;
      const taken: [string, SeqList, number][] = [];
      for (const [sfx, l] of sets) {
        const k = l.last < bound ? l.n : firstAtLeast(l.a, l.n, bound);
        if (k === 0) continue;
        taken.push([sfx, l, k]);
        if (n && n + k > maxMembers) {
          calls.push(encodeSets(batch, n));
          batch = [];
          n = 0;
        }
        batch.push([sfx, l.a.subarray(0, k)]);
        n += k;
      }
      if (n) calls.push(encodeSets(batch, n));
      // encoded (copied into the calls' blobs): now the lists lose what was taken
      for (const [sfx, l, k] of taken) {
        if (k === l.n) sets.delete(sfx);
        else {
          l.a.copyWithin(0, k, l.n);
          l.n -= k;
        }
      }
      if (!sets.size) this.byNs.delete(ns);
      if (calls.length) out.set(ns, calls);
    }
    return out;
  }
}

/** index of the first of the n ascending elements of a that is >= x (n when none) */
function firstAtLeast(a: Float64Array, n: number, x: number): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
