// The sets stage: the sorted seqs of each filter set of a page, by source.
// - near cache, now: every set this thread holds (null when one is not: the caller loads)
// - near cache, loading: the missing ones read with near-load-2.lua (loadSet: each slice atomic
//   with the namespace version the near cache then follows by deltas: near.ts)
// - pool path: FetchedSets, the sets of heavy intersections this thread fetched from Redis,
//   kept by namespace version; a worker decodes the new ones (workers/intersect-task.ts)
import type { NearCache } from '../near/near-cache.js';
import { Oldest } from '../../domain/oldest.js';
import { nearLoadReply, UnexpectedReply } from '../../redis/replies.js';

/** How sets are read (NEAR_LOAD_WHOLE_MEMBERS, NEAR_LOAD_SLICE_BUCKETS): whole up to `whole` members, else in slices of `slice` buckets. */
export interface LoadBounds {
  whole: number;
  slice: number;
}

export const DEFAULT_LOAD_BOUNDS: LoadBounds = { whole: 65_536, slice: 32 };

/**
 * One set read from Redis with near-load, slice by slice (`call(from)`: the slice from that
 * bucket), so that no call holds Redis for long. Each slice is exact at the version it was
 * read at; the set's version is the oldest of them: the deltas after it bring the other
 * slices up to date as well, since adding a member that is there, or removing one that is
 * not, changes nothing. `same`: every slice at that one version (the pool path keeps a set by
 * version only then). Null: the namespace is not indexed.
 */
export async function loadSet(call: (from: number) => Promise<unknown>): Promise<{ ver: number; same: boolean; buckets: [string, Buffer][] } | null> {
  let r = nearLoadReply(await call(0));
  if (!r) return null;
  let ver = r.ver;
  let same = true;
  const buckets = r.buckets;
  while (r.next >= 0) {
    const from: number = r.next;
    r = nearLoadReply(await call(from));
    if (!r) return null;
    if (r.ver !== ver) same = false;
    ver = Math.min(ver, r.ver);
    if (r.next >= 0 && r.next <= from) throw new UnexpectedReply('near-load', 'a slice that does not advance');
    for (const b of r.buckets) buckets.push(b);
  }
  return { ver, same, buckets };
}

/** Loads one set of a namespace base for the near cache (null: the namespace is not indexed). */
export type SetLoad = (suffix: string) => Promise<{ ver: number; members: Float64Array } | null>;

/** Every set of `base` this thread holds now, or null when one is not held. */
export function heldSets(near: NearCache, base: string, suffixes: readonly string[]): Float64Array[] | null {
  const sets: Float64Array[] = [];
  for (const suffix of suffixes) {
    const a = near.setNow(base, suffix);
    if (!a) return null;
    sets.push(a);
  }
  return sets;
}

/** Every set of `base`, the missing ones loaded by `load`; null when the namespace is not indexed. */
export async function nearSets(near: NearCache, base: string, suffixes: readonly string[], load: SetLoad): Promise<Float64Array[] | null> {
  const arrays = await Promise.all(suffixes.map((suffix) => near.set(base, suffix, load)));
  for (const a of arrays) if (!a) return null;
  return arrays as Float64Array[];
}

/** Most sets FetchedSets keeps (the count a worker kept when each fetched its own). */
export const FETCHED_MAX = 64;

/**
 * The sets of the pool path (heavy intersections while the near cache cannot answer): kept
 * by key with the namespace version they were read at, least recently used out past
 * FETCHED_MAX; one held at another version than the page's is read again. On shared memory,
 * so the worker reads them without a copy.
 */
export class FetchedSets {
  private held = new Map<string, { ver: string; members: Float64Array }>();
  private readonly oldest = new Oldest(this.held);

  constructor(readonly max = FETCHED_MAX) {}

  /** The held sets of `keys` at `ver` (in `keys` order, null where not held). */
  get(keys: readonly string[], ver: string): (Float64Array | null)[] {
    return keys.map((k) => {
      const e = this.held.get(k);
      if (!e || e.ver !== ver) return null;
      this.held.delete(k); // least recently used goes first: re-insert at the end
      this.held.set(k, e);
      return e.members;
    });
  }

  keep(key: string, ver: string, members: Float64Array): void {
    this.held.delete(key);
    if (this.held.size >= this.max) this.held.delete(this.oldest.next()!);
    this.held.set(key, { ver, members });
  }

  clear(): void {
    this.oldest.clear(); // the map too (domain/oldest.ts)
  }

  get size(): number {
    return this.held.size;
  }
}
