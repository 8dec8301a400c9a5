// The near cache's bookkeeping without I/O: sets loaded at a version follow the deltas after
// it (and only those), a skipped version drops the namespace, documents fetched across a
// delta are not kept, read-your-writes gating, and the byte budget.
import t from 'tap';
import { EMPTY_MAX, EMPTY_OVERHEAD, keyBytes, NearCache, newSeqArray, SET_OVERHEAD } from '../../src/hot/index/near.js';
import { CHUNK_OVERHEAD, PER_DOC } from '../../src/hot/index/near-docs.js';
import { digestBytes, digested } from '../../src/hot/domain/digest.js';
import { bitmapBytes, bitmapOf, intersectDense } from '../../src/workers/intersect.js';

const B = 'reg:{production}:g1:';
const delta = (ver: number, oldSeq: number | '', oldMem: string[], newSeq: number | '', newMem: string[]) =>
  ['delta', B, ver, oldSeq, oldMem.join('\n'), newSeq, newMem.join('\n')].join('\t');
const loader = (ver: number, members: number[]) => {
  let calls = 0;
  const f = async () => {
    calls++;
    return { ver, members: Float64Array.from(members) };
  };
  return { f, calls: () => calls };
};
const arr = (a: Float64Array | null) => (a ? Array.from(a) : null);

t.test('a loaded set follows later deltas key by key; other sets are untouched', async (t) => {
  const n = new NearCache(1 << 20);
  const a = loader(5, [1, 3, 7]);
  const b = loader(5, [2, 3]);
  t.same(arr(await n.set(B, 'c:a', a.f)), [1, 3, 7]);
  t.same(arr(await n.set(B, 'c:b', b.f)), [2, 3]);
  n.onDelta(delta(4, 9, ['c:a'], 9, ['c:a'])); // already in the snapshot: ignored for these sets
  n.onDelta(delta(5, '', [], 4, ['c:a']));
  n.onDelta(delta(6, 3, ['all', 'c:a', 'c:b'], 3, ['all', 'c:b'])); // service 3 drops capability a
  n.onDelta(delta(7, '', [], 5, ['c:a', 'c:z'])); // a new service
  t.same(arr(await n.set(B, 'c:a', a.f)), [1, 5, 7], 'removed 3, added 5 (4 was older than the load)');
  t.same(arr(await n.set(B, 'c:b', b.f)), [2, 3], 'kept 3 (both old and new member)');
  t.equal(a.calls() + b.calls(), 2, 'no reload');
  n.onDelta(delta(8, 1, ['c:a'], '', []));
  t.same(arr(await n.set(B, 'c:a', a.f)), [5, 7], 'a delete');
});

const page = (ver: number, seqs: number[], left: string[], joined: string[]) => ['deltas', B, ver, seqs.join(','), left.join('\n'), joined.join('\n')].join('\t');

t.test('a page of expiries is one version: each of its seqs leaves the sets left, joins the sets joined; its documents dropped', async (t) => {
  const n = new NearCache(1 << 20);
  const h = loader(5, [1, 2, 3, 4, 9]);
  const c = loader(5, [8]);
  const other = loader(5, [2, 3]);
  t.same(arr(await n.set(B, 'h', h.f)), [1, 2, 3, 4, 9]);
  t.same(arr(await n.set(B, 'crit', c.f)), [8]);
  t.same(arr(await n.set(B, 'c:b', other.f)), [2, 3]);
  let fetches = 0;
  const fetch = async (seqs: number[]) => {
    fetches++;
    return seqs.map((q) => Buffer.from(`{"id":"s${q}"}`));
  };
  await n.documents(B, Float64Array.from([2, 4, 9]), fetch);
  n.onDelta(page(6, [2, 4], ['h'], ['crit']));
  t.same(arr(await n.set(B, 'h', h.f)), [1, 3, 9], '2 and 4 left h');
  t.same(arr(await n.set(B, 'crit', c.f)), [2, 4, 8], 'and joined crit');
  t.same(arr(await n.set(B, 'c:b', other.f)), [2, 3], 'a set the page does not name is untouched');
  t.equal(h.calls() + c.calls() + other.calls(), 3, 'followed, not reloaded');
  t.equal(n.stats.resets, 0);
  n.onDelta(delta(7, 1, ['h'], 1, ['h', 'c:b'])); // the write after it: the next version, no gap
  t.equal(n.stats.resets, 0, 'a page took exactly one version');
  t.same(arr(await n.set(B, 'c:b', other.f)), [1, 2, 3]);
  await n.documents(B, Float64Array.from([2, 4, 9]), fetch);
  t.equal(fetches, 2, 'the page dropped the documents of 2 and 4 (9 kept)');
  // a page lost: the next message skips a version, the namespace is dropped and reloads
  n.onDelta(page(9, [3], ['h'], ['crit'])); // 8 never arrived
  t.equal(n.stats.resets, 1, 'a lost page is a gap like a lost write');
  await n.set(B, 'h', h.f);
  t.equal(h.calls(), 2, 'reloaded');
  // a set loaded before a page replays it from the log
  const m = new NearCache(1 << 20);
  m.onDelta(page(20, [5, 6], ['h'], []));
  const late = loader(19, [5, 6, 7]);
  t.same(arr(await m.set(B, 'h', late.f)), [7], 'replayed from the log');
  t.equal(m.onDelta(['deltas', B, 21, '', 'h', ''].join('\t')), undefined);
  t.equal(m.stats.deltas, 1, 'a page without seqs is malformed: ignored');
});

t.test('a skipped version (a lost message) drops the namespace: the next use reloads', async (t) => {
  const n = new NearCache(1 << 20);
  const a = loader(3, [1]);
  await n.set(B, 'c:a', a.f);
  n.onDelta(delta(4, '', [], 2, ['c:x']));
  n.onDelta(delta(6, '', [], 3, ['c:x'])); // 5 never arrived
  await n.set(B, 'c:a', a.f);
  t.equal(a.calls(), 2, 'reloaded');
  t.equal(n.stats.resets, 1);
  const first = new NearCache(1 << 20);
  const c = loader(3, [1]);
  await first.set(B, 'c:a', c.f);
  first.onDelta(delta(6, '', [], 3, ['c:x'])); // the first delta seen is not 4: 4 and 5 were missed
  await first.set(B, 'c:a', c.f);
  t.equal(c.calls(), 2, 'also before any delta was seen');
});

t.test('a set loaded at an older version than the deltas received replays the log', async (t) => {
  const n = new NearCache(1 << 20);
  n.onDelta(delta(10, '', [], 1, ['c:a']));
  n.onDelta(delta(11, '', [], 2, ['c:a']));
  n.onDelta(delta(12, 1, ['c:a'], '', []));
  const a = loader(10, [1]); // read before 11 and 12 were applied
  t.same(arr(await n.set(B, 'c:a', a.f)), [2]);
  t.same(arr(await n.set(B, 'c:a', a.f)), [2]);
  t.equal(a.calls(), 1, 'kept');
});

t.test('documents: hits, drops by delta, nothing kept across a delta', async (t) => {
  const n = new NearCache(1 << 20);
  let fetches = 0;
  const fetch = async (seqs: number[]) => {
    fetches++;
    return seqs.map((s) => Buffer.from(`{"s":${s}}`));
  };
  const one = await n.documents(B, Float64Array.from([1, 2]), fetch);
  t.same(one.map((d) => String(d?.buf)), ['{"s":1}', '{"s":2}']);
  t.same(one.map((d) => [d?.d0, d?.d1, d?.d2, d?.d3]), one.map((d) => { const g = digested(d!.buf); return [g.d0, g.d1, g.d2, g.d3]; }), 'each with its digest');
  await n.documents(B, Float64Array.from([1, 2]), fetch);
  t.equal(fetches, 1, 'second read from memory');
  n.onDelta(delta(2, 2, ['c:a'], 2, ['c:b']));
  await n.documents(B, Float64Array.from([1, 2]), fetch);
  t.equal(fetches, 2, 'the changed document is fetched again');
  t.equal(n.stats.docMisses, 3);
  const slow = async (seqs: number[]) => {
    n.onDelta(delta(3, 7, ['c:a'], 7, ['c:a'])); // a write lands while the fetch runs
    return fetch(seqs);
  };
  await n.documents(B, Float64Array.from([5]), slow);
  await n.documents(B, Float64Array.from([5]), fetch);
  t.equal(fetches, 4, 'the document fetched across a delta was not kept');
});

t.test('synchronous reads: all or nothing, under the same rules as the async ones', async (t) => {
  const n = new NearCache(1 << 20);
  const fetch = async (seqs: number[]) => seqs.map((s) => Buffer.from(`{"s":${s}}`));
  const now = (seqs: number[]) => n.joinNow(B, Float64Array.from(seqs));
  t.notOk(now([1, 2]), 'nothing held: no synchronous page');
  await n.documents(B, Float64Array.from([1]), fetch);
  t.notOk(now([1, 2]), 'one missing: none');
  await n.documents(B, Float64Array.from([2]), fetch);
  const page = now([1, 2]);
  t.equal(String(page?.body), '[{"s":1},{"s":2}]', 'all held: the page joined');
  t.same(page?.digests, Buffer.from(digestBytes([digested(Buffer.from('{"s":1}')), digested(Buffer.from('{"s":2}'))])), 'with its digests');
  n.onDelta(delta(2, 2, ['c:a'], 2, ['c:b']));
  t.notOk(now([1, 2]), 'a delta dropped 2');
  t.equal(String(now([1])?.body), '[{"s":1}]', '1 is still held');
  const a = loader(1, [1, 2]);
  t.equal(n.setNow(B, 'c:a'), null, 'a set not loaded: none');
  await n.set(B, 'c:a', a.f);
  t.ok(n.setNow(B, 'c:a'), 'loaded: held');
  n.onDelta(delta(9, 5, ['c:a'], 5, ['c:a'])); // a version skipped: everything of B is dead
  t.equal(n.setNow(B, 'c:a'), null, 'after a lost delta: none');
  t.notOk(now([1]), 'and no document');
});

t.test("read-your-writes: until this thread's own write arrives, not fresh", async (t) => {
  const n = new NearCache(1 << 20);
  t.ok(n.fresh(B));
  n.require(B, 4);
  t.notOk(n.fresh(B));
  n.onDelta(delta(4, '', [], 1, ['c:a']));
  t.ok(n.fresh(B));
});

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

t.test('version check: a copy behind Redis at two checks in a row is dropped; one delta late is not', async (t) => {
  const n = new NearCache(1 << 20);
  n.resume();
  const l = loader(5, [1, 2]);
  await n.set(B, 'c:x', l.f);
  let redis = 5;
  const read = async (bases: string[]) => bases.map((b) => (b === B ? redis : null));
  t.equal(await n.checkVersions(read), 0, 'level with Redis');
  redis = 6; // a write applied, its delta not here yet
  t.equal(await n.checkVersions(read), 0, 'behind once: maybe in flight');
  n.onDelta(delta(6, '', [], 3, ['c:x'])); // it arrives
  t.equal(await n.checkVersions(read), 0, 'caught up');
  redis = 7; // this delta is lost
  t.equal(await n.checkVersions(read), 0);
  t.same(arr(await n.set(B, 'c:x', l.f)), [1, 2, 3], 'still the stale copy (no reload yet)');
  t.equal(await n.checkVersions(read), 1, 'still behind version 7: dropped');
  t.equal(n.stats.stale, 1);
  await n.set(B, 'c:x', loader(7, [1, 2]).f);
  t.equal(l.calls(), 1);
  n.onDelta(delta(8, 2, ['c:x'], '', []));
  t.equal(n.stats.resets, 0, 'the next delta follows on from the version the check took');
  t.same(arr(await n.set(B, 'c:x', l.f)), [1], 'and applies');
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
