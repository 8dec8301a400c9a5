// The intersect stage: the sets' common members after the cursor, at most limit + 1 of them.
// Inline on this thread (bitmaps for dense sets, galloping otherwise: workers/intersect.ts),
// or in the worker pool when the sets are large and spread (the pool reads them on shared
// memory, or decodes the ones fetched from Redis: workers/intersect-task.ts).
import type { IntersectPool } from '../../../workers/pool.js';
import { bitmapWords } from '../../../workers/intersect.js';

export { intersectDense } from '../../../workers/intersect.js';

/** Bitmaps at most this many words (2^15: a range of ~1M seqs) intersect inline, not in the pool. */
const INLINE_BITMAP_WORDS = 2 ** 15;

/**
 * The worker pool when an intersection of these sets is heavy enough for it (several sets,
 * the smallest above the threshold) and its queue has room; null: intersect inline.
 */
export function heavyPool(sets: Float64Array[], pool: IntersectPool | null, threshold: number): IntersectPool | null {
  if (sets.length < 2 || !pool || threshold <= 0 || pool.busy()) return null;
  for (const a of sets) if (a.length <= threshold) return null;
  // dense sets over a range up to ~1M seqs intersect inline as bitmaps (intersectDense): one
  // AND per 32 seqs costs less than the trip to the pool and back
  // (docs/decisions/near-cache-pages.md; bench/README.md, "Main and cold scenarios")
  if (sets.every((a) => bitmapWords(a) <= INLINE_BITMAP_WORDS)) return null;
  return pool;
}
