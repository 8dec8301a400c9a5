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
  const sorted = [...arrays].sort((a, b) => a.length - b.length);
  const small = sorted[0]!;
  const rest = sorted.slice(1);
  const pos = new Array<number>(rest.length).fill(0);
  const out: number[] = [];
  let i = gallop(small, after + 1e-9, 0);
  for (; i < small.length && out.length < max; i++) {
    const x = small[i]!;
    if (x <= after) continue;
    let all = true;
    for (let j = 0; j < rest.length; j++) {
      const a = rest[j]!;
      const p = gallop(a, x, pos[j]!);
      pos[j] = p;
      if (p >= a.length) return Float64Array.from(out); // one array exhausted: nothing more
      if (a[p] !== x) {
        all = false;
        break;
      }
    }
    if (all) out.push(x);
  }
  return Float64Array.from(out);
}
