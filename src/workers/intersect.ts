// Pure intersection of sorted sequence-number arrays (typed arrays in, typed array out).
// Galloping from the smallest array keeps it O(m log(n/m)) when sizes differ a lot.

/** First index i >= lo with a[i] >= x (a sorted ascending), by exponential then binary search. */
export function gallop(a: Float64Array, x: number, lo: number): number {
  let step = 1;
  let hi = lo;
  while (hi < a.length && a[hi]! < x) {
    lo = hi + 1;
    hi += step;
    step *= 2;
  }
  if (hi > a.length) hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Members present in every array, greater than `after`, in ascending order, at most `max`
 * of them (callers ask for limit + 1 to learn whether more exist).
 */
export function intersectSorted(arrays: Float64Array[], after: number, max: number): Float64Array {
  if (!arrays.length) return new Float64Array(0);
  if (arrays.length === 1) {
    // one set: its members from the cursor on, as a view (a set's array never changes in place)
    const a = arrays[0]!;
    const i = gallop(a, after + 1e-9, 0);
    return a.subarray(i, Math.min(a.length, i + Math.max(0, max)));
  }
  const sorted = [...arrays].sort((a, b) => a.length - b.length);
  const small = sorted[0]!;
  const rest = sorted.slice(1);
  const pos = new Array<number>(rest.length).fill(0);
  const out = new Float64Array(Math.max(0, Math.min(max, small.length)));
  let n = 0;
  let i = gallop(small, after + 1e-9, 0);
  for (; i < small.length && n < max; i++) {
    const x = small[i]!;
    if (x <= after) continue;
    let all = true;
    for (let j = 0; j < rest.length; j++) {
      const a = rest[j]!;
      const p = gallop(a, x, pos[j]!);
      pos[j] = p;
      if (p >= a.length) return out.subarray(0, n); // one array exhausted: nothing more
      if (a[p] !== x) {
        all = false;
        break;
      }
    }
    if (all) out[n++] = x;
  }
  return out.subarray(0, n);
}

/** A dense set as bits: bit b of words[i] is member (w0 + i) * 32 + b. */
export interface Bitmap {
  /** first word's index on the global grid (seq / 32) */
  w0: number;
  words: Int32Array;
}

/** bitmapOf's cache: a set's array never changes in place (a change makes a new array). */
const bitmaps = new WeakMap<Float64Array, Bitmap | null>();

/** Bytes of the bitmap built for `a` (0: none built, or none possible). */
export function bitmapBytes(a: Float64Array): number {
  return bitmaps.get(a)?.words.byteLength ?? 0;
}

/**
 * The words a bitmap of `a` has or would have (Infinity: none possible), without building one:
 * a bitmap when that is no larger than the array itself (at least one member in 64 of its
 * range, and 64 members).
 */
export function bitmapWords(a: Float64Array): number {
  if (a.length < 64) return Number.POSITIVE_INFINITY;
  const n = Math.floor(a[a.length - 1]! / 32) - Math.floor(a[0]! / 32) + 1;
  return n * 32 <= a.length * 64 ? n : Number.POSITIVE_INFINITY;
}

/**
 * The array as a bitmap (bitmapWords), else null. Built once per array and kept as long as
 * it: a caller that holds arrays in a budget counts it (intersectDense() says what it built).
 */
export function bitmapOf(a: Float64Array): Bitmap | null {
  let bm = bitmaps.get(a);
  if (bm !== undefined) return bm;
  bm = null;
  const n = bitmapWords(a);
  if (Number.isFinite(n)) {
    const w0 = Math.floor(a[0]! / 32);
    const words = new Int32Array(n);
    for (let i = 0; i < a.length; i++) {
      const x = a[i]!;
      words[Math.floor(x / 32) - w0]! |= 1 << x % 32;
    }
    bm = { w0, words };
  }
  bitmaps.set(a, bm);
  return bm;
}

/**
 * intersectSorted() over bitmaps: 32 candidates per AND of one word of each set, where
 * galloping probes every member of the smallest set (docs/decisions/near-cache-pages.md).
 */
export function intersectBitmaps(bms: Bitmap[], after: number, max: number): Float64Array {
  let lo = Math.floor((after + 1) / 32);
  let hi = Number.POSITIVE_INFINITY;
  for (const b of bms) {
    if (b.w0 > lo) lo = b.w0;
    if (b.w0 + b.words.length < hi) hi = b.w0 + b.words.length;
  }
  const out = new Float64Array(Math.max(0, max));
  let n = 0;
  if (bms.length === 2) {
    // the common case (a capability and a property, say), with the two word arrays in locals
    const a = bms[0]!.words;
    const b = bms[1]!.words;
    const oa = bms[0]!.w0;
    const ob = bms[1]!.w0;
    for (let w = lo; w < hi && n < max; w++) n = emit(a[w - oa]! & b[w - ob]!, w, after, out, n, max);
    return out.subarray(0, n);
  }
  for (let w = lo; w < hi && n < max; w++) {
    let m = -1;
    for (let j = 0; j < bms.length && m !== 0; j++) m &= bms[j]!.words[w - bms[j]!.w0]!;
    n = emit(m, w, after, out, n, max);
  }
  return out.subarray(0, n);
}

/** The members of word `w` set in `m` and greater than `after`, into out[n..max); the new n. */
function emit(m: number, w: number, after: number, out: Float64Array, n: number, max: number): number {
  while (m !== 0 && n < max) {
    const low = m & -m;
    const x = w * 32 + (31 - Math.clz32(low));
    if (x > after) out[n++] = x;
    m ^= low;
  }
  return n;
}

/** An intersection's members, and the bytes of the bitmaps it built (held as long as their arrays). */
export interface Dense {
  hits: Float64Array;
  /** bytes of bitmaps this call built (0: none): the caller that holds the arrays counts them */
  built: number;
}

/**
 * intersectSorted(), over bitmaps when there are several sets and every one is dense. What it
 * built is returned, not kept in a counter: the caller is the one writer of its budget.
 */
export function intersectDense(arrays: Float64Array[], after: number, max: number): Dense {
  if (arrays.length < 2) return { hits: intersectSorted(arrays, after, max), built: 0 };
  const bms: Bitmap[] = [];
  let built = 0;
  for (const a of arrays) {
    const had = bitmaps.has(a);
    const b = bitmapOf(a);
    if (!had && b) built += b.words.byteLength;
    if (!b) return { hits: intersectSorted(arrays, after, max), built };
    bms.push(b);
  }
  return { hits: intersectBitmaps(bms, after, max), built };
}
