// Decoding a bucketed set (redis/lib/buckets.lua) read whole from Redis: its bucket fields
// and their strings of sorted 16-bit big-endian offsets become one sorted array of seqs.
// Used by the near cache's loads (near-load-2.lua) and the pool path's set fetch (decoded in
// the worker: intersect-task.ts).

/** A Float64Array on shared memory: a worker of the pool reads it without a copy. */
export function sharedSeqArray(n: number): Float64Array {
  return new Float64Array(new SharedArrayBuffer(Math.max(1, n) * 8), 0, n);
}

/** seqs per bucket: bucket b holds the seqs b*BUCKET_WIDTH .. (b+1)*BUCKET_WIDTH-1 */
export const BUCKET_WIDTH = 4096;

/**
 * The members of a set from its (bucket field, offsets) pairs, in any order; fields that are
 * not bucket numbers ("n", "hi") are skipped. `alloc` makes the array (the near cache's is
 * on shared memory).
 */
export function decodeBuckets(pairs: Iterable<[string, Buffer]>, alloc: (n: number) => Float64Array = (n) => new Float64Array(n)): Float64Array {
  const buckets: { b: number; s: Buffer }[] = [];
  let n = 0;
  for (const [f, s] of pairs) {
    if (!/^\d+$/.test(f)) continue;
    buckets.push({ b: Number(f), s });
    n += s.length >> 1;
  }
  buckets.sort((x, y) => x.b - y.b);
  const out = alloc(n);
  let at = 0;
  for (const { b, s } of buckets) {
    const base = b * BUCKET_WIDTH;
    for (let i = 0; i + 1 < s.length; i += 2) out[at++] = base + ((s[i]! << 8) | s[i + 1]!);
  }
  return out;
}

/**
 * The other way, for the rebuild's pages (index-page-1.lua): sets of ascending, distinct seqs
 * as one index string of "<set>\n<bucket>\n<offsets in the blob>\n" per bucket a set has
 * members in (a set's buckets consecutive, ascending) and one blob of all their 2-byte
 * big-endian offsets in the same order: two script arguments for a page instead of three a
 * bucket (the client's cost is per argument).
 */
export function encodeSets(sets: Iterable<[string, ArrayLike<number>]>, members: number): { index: string; blob: Buffer } {
  const blob = Buffer.allocUnsafe(members * 2);
  let index = '';
  let at = 0;
  for (const [name, seqs] of sets) {
    for (let i = 0; i < seqs.length; ) {
      const b = Math.floor(seqs[i]! / BUCKET_WIDTH);
      const base = b * BUCKET_WIDTH;
      const end = base + BUCKET_WIDTH;
      const from = i;
      for (; i < seqs.length && seqs[i]! < end; i++) {
        blob.writeUInt16BE(seqs[i]! - base, at);
        at += 2;
      }
      index += name + '\n' + b + '\n' + (i - from) + '\n';
    }
  }
  return { index, blob: at === blob.length ? blob : blob.subarray(0, at) };
}
