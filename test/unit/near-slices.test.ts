// A large set read in slices (loadSet, near-load-2.lua) while a write lands between two of
// them: the slice before it is at the old version, the one after at the new. The set takes
// the oldest version, so the write's delta is applied to it whether it arrives after the load
// or during it (replayed from the log): the member the write moved out of the first slice
// leaves, the one it added to the second is there once. Replies as near-load-2.lua gives them.
import t from 'tap';
import { NearCache } from '../../src/hot/search/near/near-cache.js';
import { loadSet } from '../../src/hot/search/pipeline/sets.js';
import { decodeBuckets } from '../../src/workers/buckets.js';
import { arr, B, delta } from '../helpers/near-fixtures.js';

const b = (s: string) => Buffer.from(s);
const offsets = (...o: number[]) => Buffer.from(o.flatMap((x) => [x >> 8, x & 255]));
// bucket 0 holds seqs 3 and 10, bucket 1 seq 4100; the write (version 6) moves seq 10 to 5000
const before = [[b('5'), b('1'), b('0'), offsets(3, 10)], [b('5'), b('-1'), b('1'), offsets(4)]];
const after = [[b('6'), b('1'), b('0'), offsets(3)], [b('6'), b('-1'), b('1'), offsets(4, 904)]];
const write = delta(6, 10, ['c:a'], 5000, ['c:a']);

/** Slice 0 read before the write, slice 1 after it; `between` runs in between. */
function sliced(between: () => void) {
  return async () => {
    const r = await loadSet(async (from) => {
      if (from === 1) between();
      return (from === 0 ? before : after)[from];
    });
    return r && { ver: r.ver, members: decodeBuckets(r.buckets) };
  };
}

t.test('the oldest slice version: a write between slices is applied by its delta', async (t) => {
  const direct = await loadSet(async (from) => [before[0], after[1]][from]);
  t.same({ ver: direct!.ver, same: direct!.same }, { ver: 5, same: false }, 'slices at 5 and 6: the set is at 5, not at one version');
  t.same(Array.from(decodeBuckets(direct!.buckets)), [3, 10, 4100, 5000], 'as read: seq 10 not gone yet, 5000 there');

  const n = new NearCache(1 << 20);
  t.same(arr(await n.set(B, 'c:a', sliced(() => undefined))), [3, 10, 4100, 5000]);
  n.onDelta(write); // arrives after the load
  t.same(arr(await n.set(B, 'c:a', sliced(() => undefined))), [3, 4100, 5000], 'the delta after the load: 10 left, 5000 once');

  const m = new NearCache(1 << 20);
  m.onDelta(delta(5, '', [], 7, ['c:z'])); // following the namespace at 5
  t.same(arr(await m.set(B, 'c:a', sliced(() => m.onDelta(write)))), [3, 4100, 5000], 'the delta during the load: replayed from the log');
  t.equal(m.stats.resets, 0);
});

t.test('a slice that does not advance is refused', async (t) => {
  await t.rejects(loadSet(async () => [b('5'), b('0')]), /near-load/);
});
