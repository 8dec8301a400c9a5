// The near cache's documents and synchronous reads, without I/O: hits, drops by delta,
// documents fetched across a delta not kept, and the synchronous page and set reads under
// the same rules as the async ones.
import t from 'tap';
import { NearCache } from '../../src/hot/search/near/near-cache.js';
import { digestBytes, digested } from '../../src/hot/domain/digest.js';
import { B, delta, loader } from '../helpers/near-fixtures.js';

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
