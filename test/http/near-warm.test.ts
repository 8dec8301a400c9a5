// Warming the near cache (search/near/warm.ts): a node that starts on a registry reads
// production's documents into its near cache before any search asks for them, so that its
// first cold pages are joined from memory, not fetched; up to NEAR_WARM_PERCENT of its budget
// and no further; again after the cache was cleared (a lost delta subscription); never with
// NEAR_WARM_PERCENT=0. Answers stay those of the Redis path.
import t from 'tap';
import { serve } from '../helpers/server.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { pages } from '../helpers/pages.js';
import { parseProm, sample } from '../helpers/metrics-util.js';

/** services across three chunks of 256 seqs */
const N = 600;
const env = { RESULT_CACHE_ENTRIES: '0' };
const a = await serve(t, { env: { ...env, NEAR_WARM_PERCENT: '0' } });
for (let b = 0; b < N / 200; b++) {
  const r = await a.admin('POST', '/admin/api/services/batch', {
    services: Array.from({ length: 200 }, (_, i) => ({ endpoint: `https://w${b}-${i}.warm.example.com/`, capabilities: [i % 2 ? 'odd' : 'even'], properties: { zone: `z${i % 3}` } })),
  });
  if (r.status !== 201) throw new Error(`batch ${b}: ${r.status} ${await r.text()}`);
  await r.body?.cancel();
}

t.test('a node warms its near cache with every production document before any search', async (t) => {
  const b = await serve(t, { env, on: a });
  const near = b.app.index.near!;
  await waitFor('B to hold every document', () => near.docCount === N);
  t.equal(near.stats.docMisses, 0, 'no search asked for them');
  t.equal(sample(parseProm(await (await b.metrics()).text()), 'registry_near_cache_warmed_documents_total', {}), N, 'exported');
  const redisOnly = await serve(t, { env: { ...env, NEAR_CACHE_MB: '0' }, on: a });
  for (const q of ['/services?limit=50', '/services?capability=odd&limit=40', '/services?limit=30&property=zone:z1']) {
    t.same(await pages(b, q), await pages(redisOnly, q), `${q}: the Redis path's pages`);
  }
  t.equal(near.stats.docMisses, 0, 'every page joined from memory: no document fetched');
  t.ok(near.stats.docHits >= N, 'and read from it');

  // a lost delta subscription clears the cache: warmed again
  near.clear();
  t.equal(near.docCount, 0, 'cleared');
  await waitFor('B to hold every document again', () => near.docCount === N);
});

t.test('no further than NEAR_WARM_PERCENT of the budget', async (t) => {
  // 1 MB, 3 %: ~31 KB, about a hundred documents of these (one batch of the warmer at most over)
  const c = await serve(t, { env: { ...env, NEAR_CACHE_MB: '1', NEAR_WARM_PERCENT: '3' }, on: a });
  const near = c.app.index.near!;
  await waitFor('C to warm', () => near.docCount > 0);
  const target = (near.maxBytes * 3) / 100;
  await waitFor('C to stop', () => near.bytes >= target);
  const held = near.docCount;
  await sleep(2500); // two more rounds of the warmer's check
  t.equal(near.docCount, held, 'it stopped');
  t.ok(held < N, `${held} of ${N} documents held`);
  t.ok(near.bytes < target * 2 + 256 * 400, `${near.bytes} bytes: the target ${target}, and at most the batch that crossed it`);
});

t.test('NEAR_WARM_PERCENT=0: nothing is read before a search asks', async (t) => {
  const d = await serve(t, { env: { ...env, NEAR_WARM_PERCENT: '0' }, on: a });
  const e = await serve(t, { env, on: a });
  await waitFor('E (warming) to hold every document', () => e.app.index.near!.docCount === N);
  await sleep(1500);
  t.equal(d.app.index.near!.docCount, 0, 'D holds none');
  t.equal(a.app.index.near!.docCount, 0, 'nor does A, which only wrote');
});
