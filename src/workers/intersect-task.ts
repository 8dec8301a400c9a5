// Piscina tasks: intersections, and nothing else. A worker gets its sets from the serving
// thread, which holds or fetches them (the page pipeline's sets stage,
// src/hot/search/pipeline/sets.ts): sorted Float64Arrays on SharedArrayBuffers, read here
// without a copy, or, for sets the serving thread has not held yet, the bucket strings it
// read from Redis, decoded here onto shared memory (so decoding tens of thousands of members
// never runs on a serving thread's event loop) and handed back for it to keep. No worker
// opens a connection of its own; the serving thread fetches the page's documents and joins
// them as every other path does (pipeline/join.ts).
import { decodeBuckets, sharedSeqArray } from './buckets.js';
import { intersectSorted } from './intersect.js';

/** sets held (shared memory): at most `max` seqs greater than `after` */
export interface IntersectTask {
  sets: Float64Array[];
  after: number;
  max: number;
}

/** as IntersectTask, with sets still to decode: each its (bucket, offsets) pairs as read from Redis */
export interface FetchedTask extends IntersectTask {
  raw: [string, Buffer][][];
}

/** The hits, and the sets decoded from `raw` (in its order, on shared memory: the caller keeps them). */
export interface FetchedResult {
  hits: Float64Array;
  decoded: Float64Array[];
}

/**
 * A heavy intersection over the near cache's sets (src/hot/search/near/sets.ts): they arrive
 * as Float64Arrays on SharedArrayBuffers, so this thread reads the serving thread's memory
 * without a copy; the sets never change in place (a change makes a new array).
 */
export function intersectShared(t: IntersectTask): Float64Array {
  return intersectSorted(t.sets, t.after, t.max);
}

/** A heavy intersection of the Redis path: the sets not held yet are decoded first. */
export function intersectFetched(t: FetchedTask): FetchedResult {
  const decoded = t.raw.map((pairs) => decodeBuckets(pairs, sharedSeqArray));
  return { hits: intersectSorted([...t.sets, ...decoded], t.after, t.max), decoded };
}

export default intersectShared;
