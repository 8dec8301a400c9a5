// The answers held requests wait on, indexed by what changes them: by key (one group per
// answer), by namespace, by one of a search's sets (a write changes a search only if it
// names every one of its sets, so it must name the one indexed) and by a single read's seq.
// affected() turns a delta into the groups it may change, without looking at the others.
import type { Delta } from '../redis/delta.js';
import type { Group } from './types.js';

function addTo(m: Map<string, Set<Group>>, k: string, g: Group): void {
  let s = m.get(k);
  if (!s) m.set(k, (s = new Set()));
  s.add(g);
}

function dropFrom(m: Map<string, Set<Group>>, k: string, g: Group): void {
  const s = m.get(k);
  if (s?.delete(g) && !s.size) m.delete(k);
}

/** every set of `sets` is in `members` */
function within(sets: readonly string[], members: readonly string[]): boolean {
  for (const s of sets) if (!members.includes(s)) return false;
  return true;
}

export class Watches {
  private readonly byKey = new Map<string, Group>();
  private readonly byNs = new Map<string, Set<Group>>();
  private readonly bySet = new Map<string, Set<Group>>();
  private readonly bySeq = new Map<string, Set<Group>>();

  get size(): number {
    return this.byKey.size;
  }

  get(key: string): Group | undefined {
    return this.byKey.get(key);
  }

  hasNs(ns: string): boolean {
    return this.byNs.has(ns);
  }

  add(g: Group): void {
    this.byKey.set(g.key, g);
    addTo(this.byNs, g.watch.ns, g);
    const first = g.watch.sets?.[0];
    if (first !== undefined) addTo(this.bySet, g.watch.ns + '\0' + first, g);
    if (g.seq !== undefined) addTo(this.bySeq, g.watch.ns + '\0' + g.seq, g);
  }

  remove(g: Group): void {
    if (this.byKey.get(g.key) !== g) return;
    this.byKey.delete(g.key);
    dropFrom(this.byNs, g.watch.ns, g);
    const first = g.watch.sets?.[0];
    if (first !== undefined) dropFrom(this.bySet, g.watch.ns + '\0' + first, g);
    if (g.seq !== undefined) dropFrom(this.bySeq, g.watch.ns + '\0' + g.seq, g);
  }

  /** A single read's service has another seq now. */
  reseq(g: Group, seq: number | undefined): void {
    if (g.seq === seq) return;
    const indexed = this.byKey.get(g.key) === g;
    if (indexed && g.seq !== undefined) dropFrom(this.bySeq, g.watch.ns + '\0' + g.seq, g);
    g.seq = seq;
    if (indexed && seq !== undefined) addTo(this.bySeq, g.watch.ns + '\0' + seq, g);
  }

  /** Every group of `ns` (a delta was lost, or the fallback after this thread's write). */
  inNs(ns: string): Iterable<Group> {
    return this.byNs.get(ns) ?? [];
  }

  all(): Iterable<Group> {
    return this.byKey.values();
  }

  /**
   * The groups of `ns` that delta `d` may change. A write: the searches whose every set the
   * service was in before (oldSeq, oldMembers) or is in now (newSeq, newMembers), and the
   * single reads of its seq. A page of expiries: every search of the namespace (the health in
   * each document changed, whatever sets it is in; the recomputation tells which changed)
   * and the single reads of its seqs.
   */
  affected(ns: string, d: Delta): Set<Group> {
    const out = new Set<Group>();
    const seq = (s: number | null) => {
      if (s === null) return;
      for (const g of this.bySeq.get(ns + '\0' + s) ?? []) out.add(g);
    };
    if (d.seqs) {
      for (const g of this.byNs.get(ns) ?? []) if (g.watch.sets) out.add(g);
      for (const s of d.seqs) seq(s);
      return out;
    }
    seq(d.oldSeq);
    if (d.newSeq !== d.oldSeq) seq(d.newSeq);
    const seen = new Set<string>();
    for (const m of [...d.oldMembers, ...d.newMembers]) {
      if (seen.has(m)) continue;
      seen.add(m);
      for (const g of this.bySet.get(ns + '\0' + m) ?? []) {
        const sets = g.watch.sets!;
        if ((d.oldSeq !== null && within(sets, d.oldMembers)) || (d.newSeq !== null && within(sets, d.newMembers))) out.add(g);
      }
    }
    return out;
  }

  clear(): void {
    this.byKey.clear();
    this.byNs.clear();
    this.bySet.clear();
    this.bySeq.clear();
  }
}
