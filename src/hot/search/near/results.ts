// The near cache's whole answers (docs/decisions/whole-answers.md): the whole answer of a query
// of several sets or of one sparse set (worthWhole), asked for again and again with other
// cursors, kept as one buffer of its documents in seq order (each followed by ","), their
// seqs, where each begins and their digests. A page of it is a search for the cursor and one copy, where a page joined from the
// chunks reads its documents scattered over them (one cache miss or more a document). Valid
// while its namespace has received no delta since it was made (its epoch): any write to the
// namespace drops it. NearCache owns them and counts their bytes in its budget.
import { lastSeq } from '../pipeline/plan.js';
import { nextUnused, Oldest } from '../../domain/oldest.js';

/** One query's answer, whole. */
export interface Result {
  /** the namespace base and the query's set suffixes, "\0" between them (NearCache.resultPage) */
  key: string;
  base: string;
  /** the namespace's epoch (deltas received) when it was made */
  epoch: number;
  seqs: Float64Array;
  /** document i is bytes [offs[i], offs[i + 1] - 1), followed by "," */
  offs: Int32Array;
  bytes: Buffer;
  /** 16 bytes a document, in seq order (digestBytes()'s layout) */
  digests: Uint8Array;
  /** bytes accounted for it */
  size: number;
  /** asked for since eviction last passed it */
  used: boolean;
}

/** a result apart from its arrays, estimated (not measured): the object, its Map entry, the arrays' headers */
const RESULT_OVERHEAD = 400;

export const resultSize = (r: Omit<Result, 'size' | 'used'>): number => RESULT_OVERHEAD + r.key.length * 2 + r.seqs.byteLength + r.offs.byteLength + r.bytes.length + r.digests.byteLength;

/** A page of a result: the same body, digests, "more" and last seq as a page joined from chunks. */
export interface ResultPage {
  body: Buffer;
  digests: Uint8Array;
  more: boolean;
  last: string;
}

/** Documents a whole answer lacks (the first of them): fetched, then it is tried again at once. */
export interface Missing {
  key: string;
  missing: number[];
}

/**
 * Documents of one whole answer at most, and its smallest set's members: making one is a
 * synchronous intersection and copy on the event loop, in time proportional to both.
 */
export const WHOLE_MAX_DOCS = 65_536;
export const WHOLE_MAX_SMALLEST = 4 * WHOLE_MAX_DOCS;
/** documents copied into whole answers per second and thread at most: queries made up to be made whole cost little more */
const WHOLE_DOCS_PER_S = 262_144;

/**
 * Whether a query's pages are worth an answer kept whole: several sets (a page of their
 * intersection is scattered over the chunks), or one sparse set (fewer members than a quarter
 * of its range). A dense set's pages are already contiguous in the chunks.
 */
export function worthWhole(sets: readonly Float64Array[]): boolean {
  if (sets.length !== 1) return sets.length > 1;
  const a = sets[0]!;
  return a.length > 1 && a.length * 4 < a[a.length - 1]! - a[0]! + 1;
}

/** Cold pages of one query before its answer is made whole (then every RETRY more while it cannot be). */
export const ADMIT = 4;
const RETRY = 64;
/** queries counted at most (the count of pages asked is forgotten beyond it) */
const COUNTED_MAX = 4096;
/** whole answers held at most per thread (a delta looks at each of them) */
export const WHOLE_MAX_HELD = 4096;

export class NearResults {
  private byKey = new Map<string, Result>();
  /** the clock's hand over `byKey` (domain/oldest.ts: a result passed is moved to the end or dropped) */
  private readonly oldest = new Oldest(this.byKey);
  /** cold pages asked per query not held, since its last attempt */
  private asked = new Map<string, number>();
  /** queries whose answer could not be made whole at their last attempt (over budget, a document not held) */
  private tried = new Set<string>();
  bytes = 0;
  private body = Buffer.allocUnsafeSlow(64 * 1024);
  /** documents that may still be copied into whole answers (WHOLE_DOCS_PER_S, refilled with time) */
  private allowance = WHOLE_DOCS_PER_S;
  private refilled = performance.now();

  constructor(private readonly admitAfter = ADMIT) {}

  get size(): number {
    return this.byKey.size;
  }

  /** The result of `key` made at `epoch`, or null (none, or made before a delta: dropped). */
  get(key: string, epoch: number): Result | null {
    const r = this.byKey.get(key);
    if (!r) return null;
    if (r.epoch !== epoch) {
      this.drop(r);
      return null;
    }
    r.used = true;
    return r;
  }

  /** Whether a cold page of `key` should make its answer whole now: its ADMIT-th, then every RETRY-th after a failed attempt. */
  admit(key: string): boolean {
    if (this.admitAfter <= 0) return false;
    const n = (this.asked.get(key) ?? 0) + 1;
    if (n < (this.tried.has(key) ? RETRY : this.admitAfter)) {
      if (this.asked.size >= COUNTED_MAX) this.asked.clear();
      this.asked.set(key, n);
      return false;
    }
    this.asked.delete(key);
    if (this.tried.size >= COUNTED_MAX) this.tried.clear();
    this.tried.add(key); // (until put() holds it)
    return true;
  }

  /** Whether `n` documents may be copied into a whole answer now (and they are counted). */
  spend(n: number): boolean {
    const now = performance.now();
    this.allowance = Math.min(WHOLE_DOCS_PER_S, this.allowance + ((now - this.refilled) * WHOLE_DOCS_PER_S) / 1000);
    this.refilled = now;
    if (n > this.allowance) return false;
    this.allowance -= n;
    return true;
  }

  /** The documents `key` lacked are held now: its next cold page tries again (counted from 1). */
  retryNow(key: string): void {
    this.tried.delete(key);
    this.asked.delete(key);
  }

  put(r: Result): void {
    const old = this.byKey.get(r.key);
    if (old) this.drop(old);
    while (this.byKey.size >= WHOLE_MAX_HELD && this.evictOne());
    this.byKey.set(r.key, r);
    this.bytes += r.size;
    this.tried.delete(r.key);
  }

  /**
   * The page of `r` after seq `after` (exclusive, -1: from the start), at most `limit`
   * documents. The body is a view of scratch memory, valid until the next call; the digests
   * a view of the result's.
   */
  page(r: Result, after: number, limit: number): ResultPage {
    const s = r.seqs;
    let lo = 0;
    let hi = s.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (s[mid]! <= after) lo = mid + 1;
      else hi = mid;
    }
    const i = lo;
    const j = Math.min(s.length, i + limit);
    const a = r.offs[i]!;
    const b = r.offs[j]!;
    const len = j > i ? b - a + 1 : 2; // "[" + documents and their commas but the last one + "]"
    if (len > this.body.length) this.body = Buffer.allocUnsafeSlow(2 ** Math.ceil(Math.log2(len)));
    const out = this.body;
    out[0] = 0x5b; // [
    if (j > i) r.bytes.copy(out, 1, a, b - 1);
    out[len - 1] = 0x5d; // ]
    return { body: out.subarray(0, len), digests: r.digests.subarray(i * 16, j * 16), more: j < s.length, last: lastSeq(s.subarray(i, j)) };
  }

  /** A delta of `base` arrived: its results are stale. */
  dropBase(base: string): void {
    for (const r of this.byKey.values()) if (r.base === base) this.drop(r);
  }

  /** Evict one result (a used one gets a second chance first: moved to the end); false when none is held. */
  evictOne(): boolean {
    const k = nextUnused(this.oldest, this.byKey);
    if (k === undefined) return false;
    this.drop(this.byKey.get(k)!);
    return true;
  }

  private drop(r: Result): void {
    if (this.byKey.get(r.key) !== r) return;
    this.byKey.delete(r.key);
    this.bytes -= r.size;
  }

  clear(): void {
    this.oldest.clear(); // (the map too)
    this.asked.clear();
    this.tried.clear();
    this.bytes = 0;
  }
}
