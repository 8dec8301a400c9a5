// The near cache's warmer (search/near/warm.ts) on a real NearCache, with a source of
// documents (its own interface, standing for the index): a batch whose fetch a write's delta
// crossed keeps nothing, so it is fetched again, up to WARM_TRIES times; a batch crossed every
// time is counted as cut and the pass goes on. (test/http/near-warm.test.ts: the same against
// Redis and a server.)
import t from 'tap';
import { NearCache } from '../../src/hot/search/near/near-cache.js';
import { NearWarmer, WARM_BATCH, WARM_TRIES, type WarmSource } from '../../src/hot/search/near/warm.js';
import { B, delta } from '../helpers/near-fixtures.js';

const N = 3 * WARM_BATCH;
const ALL = Float64Array.from({ length: N }, (_, i) => i);

/** A source whose fetches of the batches in `crossed` (by first seq) meet a delta that many times. */
function source(near: NearCache, crossed: Map<number, number>): WarmSource & { fetches: number } {
  let ver = 1;
  const s = {
    fetches: 0,
    base: () => B,
    all: async () => ALL,
    async fetch(_base: string, seqs: number[]) {
      s.fetches++;
      const left = crossed.get(seqs[0]!) ?? 0;
      if (left > 0) {
        crossed.set(seqs[0]!, left - 1);
        near.onDelta(delta(++ver, '', [], '', [])); // a write elsewhere in the namespace, during the fetch
      }
      return seqs.map((q) => Buffer.from(`{"seq":${q}}`));
    },
  };
  return s;
}

t.test('a batch crossed by a delta is fetched again, and kept', async (t) => {
  const near = new NearCache(64 * 2 ** 20);
  const src = source(near, new Map([[WARM_BATCH, WARM_TRIES - 1]]));
  const w = new NearWarmer(near, src, 90);
  await w.check();
  t.equal(near.docCount, N, 'every document held');
  t.equal(w.stats.documents, N);
  t.equal(w.stats.cut, 0);
  t.equal(src.fetches, 3 + WARM_TRIES - 1, 'the crossed batch fetched again until a fetch met no delta');
  t.equal(near.stats.docMisses + near.stats.docHits, 0, 'counted as neither hits nor misses');
});

t.test('a batch crossed every time is left to the pages; the pass goes on', async (t) => {
  const near = new NearCache(64 * 2 ** 20);
  const src = source(near, new Map([[0, WARM_TRIES]]));
  const w = new NearWarmer(near, src, 90);
  await w.check();
  t.equal(near.docCount, N - WARM_BATCH, 'the batches after it held');
  t.equal(near.joinNow(B, ALL.slice(0, 1)), null, 'the first batch is not');
  t.equal(w.stats.cut, 1);
  t.equal(src.fetches, WARM_TRIES + 2);
  await w.check();
  t.equal(src.fetches, WARM_TRIES + 2, 'the pass ended: not run again for the same base');
});
