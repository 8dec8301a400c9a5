// The near cache following deltas, without I/O: sets loaded at a version follow the deltas
// after it (and only those), a page of expiries is one version, a skipped version drops the
// namespace, a set loaded before deltas replays the log, read-your-writes gating, and the
// version check.
import t from 'tap';
import { NearCache } from '../../src/hot/search/near/near-cache.js';
import { arr, B, delta, loader } from '../helpers/near-fixtures.js';

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

t.test("read-your-writes: until this thread's own write arrives, not fresh", async (t) => {
  const n = new NearCache(1 << 20);
  t.ok(n.fresh(B));
  n.require(B, 4);
  t.notOk(n.fresh(B));
  n.onDelta(delta(4, '', [], 1, ['c:a']));
  t.ok(n.fresh(B));
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
