// The near cache's byte budget, without I/O: least recently used out, a second chance for
// documents read again, a bitmap counted with its set, empty sets in a bounded pool, and
// counted bytes that are the allocation.
import t from 'tap';
import { NearCache } from '../../src/hot/search/near/near-cache.js';
import { EMPTY_MAX, EMPTY_OVERHEAD, keyBytes, newSeqArray, SET_OVERHEAD } from '../../src/hot/search/near/state.js';
import { CHUNK_OVERHEAD, PER_DOC } from '../../src/hot/search/near/docs.js';
import { bitmapBytes, bitmapOf, intersectDense } from '../../src/workers/intersect.js';
import { arr, B, delta, loader } from '../helpers/near-fixtures.js';

t.test('bounded by bytes: least recently used out', async (t) => {
  const n = new NearCache(3 * (SET_OVERHEAD + keyBytes(B + 'c:0') + 100 * 8));
  const big = (v: number) => loader(1, Array.from({ length: 100 }, (_, i) => v * 1000 + i));
  const ls = [big(1), big(2), big(3), big(4)];
  for (let i = 0; i < 3; i++) await n.set(B, `c:${i}`, ls[i]!.f);
  await n.set(B, 'c:0', ls[0]!.f); // used again: now the newest
  await n.set(B, 'c:3', ls[3]!.f);
  t.ok(n.bytes <= n.maxBytes, 'within budget');
  t.equal(n.setCount, 3);
  await n.set(B, 'c:0', ls[0]!.f);
  t.equal(ls[0]!.calls(), 1, 'the recently used one stayed');
  await n.set(B, 'c:1', ls[1]!.f);
  t.equal(ls[1]!.calls(), 2, 'the least recently used one went');
});

t.test('documents: a chunk read since it was stored survives eviction (second chance)', async (t) => {
  // documents are held in chunks of 256 consecutive seqs: one document per chunk here
  const doc = Buffer.alloc(100);
  const fetch = async (seqs: number[]) => seqs.map(() => doc);
  // what a chunk of one such document weighs (near-docs.ts: its bytes, room, index), measured
  const probe = new NearCache(1 << 20);
  await probe.documents(B, Float64Array.from([1]), fetch);
  const n = new NearCache(3 * probe.bytes); // three chunks of one document
  const seq = (k: number) => 1 + 256 * k;
  await n.documents(B, Float64Array.from([seq(1), seq(2), seq(3)]), fetch);
  await n.documents(B, Float64Array.from([seq(1)]), fetch); // 1 read again: marked
  let fetched: number[] = [];
  const watch = async (seqs: number[]) => ((fetched = seqs), fetch(seqs));
  await n.documents(B, Float64Array.from([seq(4)]), watch); // over budget: 2 (unread) goes, not 1
  t.ok(n.bytes <= n.maxBytes, 'within budget');
  t.equal(n.docCount, 3);
  await n.documents(B, Float64Array.from([seq(1)]), watch);
  t.same(fetched, [seq(4)], 'the document read again stayed');
  await n.documents(B, Float64Array.from([seq(2)]), watch);
  t.same(fetched, [seq(2)], 'the oldest unread one went');
});

t.test('a bitmap built for a set held is counted in the budget, and evicts to it', async (t) => {
  const n = new NearCache(1 << 20);
  const dense = loader(1, Array.from({ length: 20_000 }, (_, i) => i * 2)); // one member in two: a bitmap
  const arr = await n.set(B, 'c:dense', dense.f);
  const alone = n.bytes;
  const other = loader(1, Array.from({ length: 20_000 }, (_, i) => i * 3)); // one in three: a bitmap too
  const arr2 = await n.set(B, 'c:other', other.f);
  const first = intersectDense([arr!, arr2!], -1, 10);
  t.same(Array.from(first.hits), [0, 6, 12, 18, 24, 30, 36, 42, 48, 54]);
  t.equal(first.built, bitmapBytes(arr!) + bitmapBytes(arr2!), 'the intersection says what it built: both bitmaps');
  t.equal(intersectDense([arr!, arr2!], 54, 10).built, 0, 'and nothing the second time (they are kept with their arrays)');
  t.ok(bitmapOf(arr!), 'dense enough for a bitmap');
  n.account(B, ['c:other']);
  const before = n.bytes;
  n.account(B, ['c:dense']);
  t.equal(n.bytes - before, bitmapBytes(arr!), 'its bytes counted with the set');
  t.ok(bitmapBytes(arr!) > 4000, `(${bitmapBytes(arr!)} bytes)`);
  // a budget the set fits only without its bitmap: counting the bitmap evicts it
  const tight = new NearCache(alone + 100);
  const a2 = await tight.set(B, 'c:dense', loader(1, Array.from({ length: 20_000 }, (_, i) => i * 2)).f);
  t.equal(tight.setCount, 1);
  bitmapOf(a2!);
  tight.account(B, ['c:dense']);
  t.equal(tight.setCount, 0, 'over budget with its bitmap: evicted');
  t.ok(tight.bytes <= tight.maxBytes);
});

t.test('filters that match nothing cost no set entry: a pool of at most EMPTY_MAX, counted', async (t) => {
  const n = new NearCache(1 << 30);
  n.resume();
  let loads = 0;
  const none = async () => {
    loads++;
    return { ver: 1, members: newSeqArray(0) };
  };
  const key = (i: number) => `c:u${String(i).padStart(8, '0')}`;
  const one = EMPTY_OVERHEAD + keyBytes(B + key(0));
  let most = 0;
  let nonEmpty = 0;
  for (let i = 0; i < 3 * EMPTY_MAX; i++) {
    if ((await n.set(B, key(i), none))?.length !== 0) nonEmpty++;
    most = Math.max(most, n.bytes);
  }
  t.equal(nonEmpty, 0, 'every one answered empty');
  t.equal(n.setCount, 0, 'no set entry for any of them');
  t.equal(n.emptyCount, EMPTY_MAX, 'the pool is full, and no fuller');
  t.equal(n.bytes, EMPTY_MAX * one, 'and counted: key and overhead each');
  t.equal(most, EMPTY_MAX * one, 'the count never passed the pool bound');
  // the newest are held: answered without a load; the oldest went
  const before = loads;
  t.same(arr(await n.set(B, key(3 * EMPTY_MAX - 1), none)), []);
  t.same(arr(n.setNow(B, key(3 * EMPTY_MAX - 2))), [], 'the sync path answers it too');
  t.equal(loads, before, 'held: no load');
  t.equal(n.stats.emptyHits, 2);
  await n.set(B, key(0), none);
  t.equal(loads, before + 1, 'the oldest was dropped: loaded again');
  // a write that gives an empty filter a member: the empty entry goes, the set loads with it
  n.onDelta(delta(2, '', [], 42, [key(0)]));
  t.equal(n.setNow(B, key(0)), null, 'not held as empty any more');
  t.same(arr(await n.set(B, key(0), async () => ({ ver: 2, members: Float64Array.from([42]) }))), [42]);
  t.equal(n.setCount, 1);
  t.equal(n.emptyCount, EMPTY_MAX - 1);
  n.clear();
  t.equal(n.bytes, 0);
  t.equal(n.emptyCount, 0);
});

t.test('counted bytes are the allocation: each buffer at its byteLength, the key, the measured overhead', async (t) => {
  const n = new NearCache(1 << 30);
  let want = 0;
  for (let i = 1; i <= 50; i++) {
    const suffix = `c:cap.${'x'.repeat(i)}`;
    const m = newSeqArray(i * 7);
    for (let k = 0; k < m.length; k++) m[k] = k * 2;
    await n.set(B, suffix, async () => ({ ver: 1, members: m }));
    want += SET_OVERHEAD + keyBytes(B + suffix) + m.buffer.byteLength;
  }
  t.equal(n.bytes, want, 'the sum of buffers, keys and overheads');
  // a delta that removes a member merges into a new array shorter than its buffer: the buffer counts
  n.onDelta(delta(2, 0, ['c:cap.x'], '', []));
  const a = await n.set(B, 'c:cap.x', async () => null);
  t.same(arr(a), [2, 4, 6, 8, 10, 12]);
  t.equal(a!.buffer.byteLength, 7 * 8, '(its buffer is the old length: merged, not copied twice)');
  n.account(B, ['c:cap.x']);
  t.equal(n.bytes, want, 'counted at the buffer kept alive, not at its length');
  // documents: their bytes (and a comma each) plus the per-document and per-chunk overheads
  const docs = new NearCache(1 << 30);
  const sizes: number[] = [];
  const fetch = async (seqs: number[]) => seqs.map((s) => Buffer.alloc(100 + (s % 50), 'a'));
  const seqs = Float64Array.from({ length: 1000 }, (_, i) => i);
  await docs.documents(B, seqs, fetch);
  for (const s of seqs) sizes.push(100 + (s % 50) + 1);
  const bytes = sizes.reduce((x, y) => x + y, 0);
  const chunks = Math.ceil(1000 / 256);
  const least = bytes + 1000 * PER_DOC + chunks * CHUNK_OVERHEAD;
  t.ok(docs.bytes >= least, `documents: ${docs.bytes} >= ${least} (bytes, slots, chunks)`);
  t.ok(docs.bytes <= least * 1.6, `and at most their room for more above it (${docs.bytes})`);
});
