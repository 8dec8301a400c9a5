// The near cache's records (near-sets.ts and near.ts own them): a held set and its pending
// overlay, what this thread knows of a namespace, their sizes in the budget, and the pure
// steps on them (merging an overlay, applying a delta (redis/delta.ts parses one), the
// version check's verdict).
import { bitmapBytes } from '../../../workers/intersect.js';
import { sharedSeqArray } from '../../../workers/buckets.js';
import { Oldest } from '../../domain/oldest.js';
import type { Delta } from '../../redis/delta.js';

export { type Delta, parseDelta } from '../../redis/delta.js';

export type Loader = (suffix: string) => Promise<{ ver: number; members: Float64Array } | null>;

export interface SetEntry {
  /** sorted, duplicate-free seqs (the last materialised state) */
  arr: Float64Array;
  /** seq -> present (true) or absent (false): deltas since `arr`, merged on the next read */
  overlay: Map<number, boolean>;
  /** namespace version it was loaded at: deltas up to it are in already */
  loadedVer: number;
  /** its namespace's reset count when stored: an older one is dead */
  resets: number;
  bytes: number;
  /** read since eviction last passed it (a second chance: NearCache.evict) */
  used: boolean;
}

/** What this thread knows of one namespace (by its base): the deltas received, its own writes awaited. */
export interface NsState {
  /** the newest delta version received; every one before it was received too (0: none yet) */
  latest: number;
  /** the newest version this thread's own writes produced (read-your-writes) */
  required: number;
  /** bumped on every delta: documents fetched across one are not kept */
  epoch: number;
  /** bumped when a delta was lost: every set and document of the namespace is dead */
  resets: number;
  /** lowest version a set was loaded at before the first delta arrived */
  minLoaded: number;
  /** recent deltas (contiguous versions), to bring a set loaded at an older version up to date */
  log: Delta[];
  /** Redis's version when the last version check found this copy behind it (0: not behind) */
  behind: number;
}

export const LOG_MAX = 4096;
/**
 * Measured in resident memory (bench/overheads.ts, docs/decisions/memory-budgets.md): a held
 * set apart from its key's characters and its array's buffer: the entry object, its empty
 * overlay Map, the Float64Array and SharedArrayBuffer objects with the buffer's native backing
 * store, its slot in `sets`, and the heap's own slack around them. RSS grew ~900 B a set over
 * 400,000 one-member sets (heapUsed: ~520 B): rounded up.
 */
export const SET_OVERHEAD = 1024;
/** an overlay entry (OrderedHashMap slot, heap number key); Maps double: at the worst */
const OVERLAY_ENTRY = 48;
/** a string's header; its characters are one byte each (keys are ASCII: canonical filters) */
export const STRING_HEADER = 24;
/** an entry of the empty-set pool apart from its key's characters: its object and Map slot (heapUsed: 120-250 B) */
export const EMPTY_OVERHEAD = 256;
/** how many empty sets the pool holds: enough for every real filter of a namespace that matches nothing now */
export const EMPTY_MAX = 1024;
/** the one empty array every empty set answers with (never written: no array is) */
export const EMPTY: Float64Array = sharedSeqArray(0);

/** A Float64Array on shared memory: the worker pool reads it without a copy. */
export const newSeqArray = sharedSeqArray;


/** Merge a set's overlay into its array: one pass. */
export function materialise(e: SetEntry): Float64Array {
  if (!e.overlay.size) return e.arr;
  const adds: number[] = [];
  for (const [seq, present] of e.overlay) if (present) adds.push(seq);
  adds.sort((a, b) => a - b);
  const a = e.arr;
  const out = newSeqArray(a.length + adds.length);
  let n = 0;
  let j = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    while (j < adds.length && adds[j]! < x) out[n++] = adds[j++]!;
    if (e.overlay.has(x)) continue; // absent now, or present and taken from adds
    out[n++] = x;
  }
  while (j < adds.length) out[n++] = adds[j++]!;
  e.arr = out.subarray(0, n);
  e.overlay.clear();
  return e.arr;
}

/** A key's bytes: its characters and its header, rounded up to words as the heap allocates. */
export const keyBytes = (key: string) => (STRING_HEADER + key.length + 7) & ~7;

/**
 * A set's bytes: its key, its array's whole buffer (a merged overlay leaves an array shorter
 * than its buffer), its overlay, and the bitmap built for its array if any (intersect.ts).
 */
export const sizeOf = (key: string, e: SetEntry) => SET_OVERHEAD + keyBytes(key) + e.arr.buffer.byteLength + e.overlay.size * OVERLAY_ENTRY + bitmapBytes(e.arr);

/**
 * The empty sets held (filters that match nothing), oldest first, at most EMPTY_MAX: a key and
 * its namespace's reset count each, no array (they all answer EMPTY), their bytes counted here.
 */
export class EmptySets {
  private held = new Map<string, number>();
  private readonly oldest = new Oldest(this.held);
  bytes = 0;

  /** EMPTY when `key` is held at reset count `resets` (moved to the end: used); a dead one is dropped */
  get(key: string, resets: number): Float64Array | null {
    const r = this.held.get(key);
    if (r === undefined) return null;
    this.held.delete(key);
    if (r !== resets) {
      this.bytes -= EMPTY_OVERHEAD + keyBytes(key);
      return null;
    }
    this.held.set(key, r);
    return EMPTY;
  }

  drop(key: string): void {
    if (this.held.delete(key)) this.bytes -= EMPTY_OVERHEAD + keyBytes(key);
  }

  /** Hold `key` as empty: the oldest one out when the pool is full. */
  keep(key: string, resets: number): void {
    this.drop(key);
    if (this.held.size >= EMPTY_MAX) this.dropOldest();
    this.held.set(key, resets);
    this.bytes += EMPTY_OVERHEAD + keyBytes(key);
  }

  /** Drop the least recently used; false when none is held. */
  dropOldest(): boolean {
    const k = this.oldest.next();
    if (k === undefined) return false;
    this.drop(k);
    return true;
  }

  clear(): void {
    this.oldest.clear(); // the map too (domain/oldest.ts)
    this.bytes = 0;
  }

  get size(): number {
    return this.held.size;
  }
}

/**
 * The version a namespace's copy is consistent with: the newest delta received; before the
 * first delta, the oldest version a set was loaded at; and 0 when this thread's own write is
 * still awaited (Infinity: nothing held, nothing to check).
 */
export function held(s: NsState): number {
  if (s.latest > 0 || s.required > 0) return s.latest;
  return s.minLoaded;
}

/** One delta's effect on one set (suffix): the old seq leaves, the new one joins (a page: each of its seqs leaves, then joins). */
export function applyTo(e: SetEntry, suffix: string, d: Delta): void {
  if (d.seqs) {
    const leaves = d.oldMembers.includes(suffix);
    const joins = d.newMembers.includes(suffix);
    if (joins) for (const seq of d.seqs) e.overlay.set(seq, true);
    else if (leaves) for (const seq of d.seqs) e.overlay.set(seq, false);
    return;
  }
  if (d.oldSeq !== null && d.oldMembers.includes(suffix)) e.overlay.set(d.oldSeq, false);
  if (d.newSeq !== null && d.newMembers.includes(suffix)) e.overlay.set(d.newSeq, true);
}

/**
 * The version check's verdict on one namespace (NearCache.checkVersions): Redis is at `r`. A
 * copy found behind at one check and still behind that version at the next lost a delta: it
 * is reset (true). Otherwise it is marked behind, or not, for the next check.
 */
export function lostDelta(s: NsState, r: number): boolean {
  const h = held(s);
  if (r <= h) s.behind = 0;
  else if (s.behind && h < s.behind) {
    s.resets++; // every set and document of it is dead; loads under way keep nothing
    s.log = [];
    s.epoch++;
    s.latest = Math.max(s.latest, r); // reloads read Redis at r or later; deltas after r follow
    s.behind = 0;
    return true;
  } else s.behind = r;
  return false;
}
