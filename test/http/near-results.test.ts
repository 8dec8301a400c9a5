// Whole answers (search/near/results.ts) through the server: with NEAR_RESULT_ADMIT=1 a
// query of several sets, or of one sparse set, is answered from its answer kept whole, page
// after page, and every page equals the Redis path's (body, Link, ETag); a write drops it, so
// the writing node reads its own write at once and the other follows its delta; a deleted
// service leaves.
// Result caches are off so that every request runs the search.
import t from 'tap';
import { registerProduction, serve } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { pages } from '../helpers/pages.js';
import { parseProm, sample } from '../helpers/metrics-util.js';

// two queries of several sets and one of a sparse set (w: 1 service in 6)
const QUERIES = ['/services?capability=x&capability=y&limit=2', '/services?capability=y&limit=3&property=zone:z1', '/services?capability=w&limit=2'];

t.test('pages of whole answers equal the Redis path, before and after writes, on the writing node and another', async (t) => {
  const env = { RESULT_CACHE_ENTRIES: '0', NEAR_RESULT_ADMIT: '1' };
  const a = await serve(t, { env });
  const b = await serve(t, { env, on: a });
  const redisOnly = await serve(t, { env: { ...env, NEAR_CACHE_MB: '0' }, on: a });
  const made: string[] = [];
  for (let i = 0; i < 20; i++) {
    const s = await registerProduction(a, { endpoint: `https://w${i}.example.com`, capabilities: [...(i % 3 ? ['x', 'y'] : ['x']), ...(i % 6 ? [] : ['w'])], properties: { zone: `z${i % 2}` } });
    made.push(s.id);
  }
  const near = [a, b].map((s) => s.app.index.near!);
  const same = async (what: string) => {
    for (const q of QUERIES) {
      const want = await pages(redisOnly, q);
      t.same(await pages(a, q), want, `${what}: ${q} on A`);
      t.same(await pages(b, q), want, `${what}: ${q} on B`);
    }
  };
  // the first pass fetches the documents (and asks for the ones the answers lack); then the
  // answers are made whole and every later page comes from them
  await waitFor('both queries whole on both nodes', async () => {
    for (const q of QUERIES) for (const s of [a, b]) await pages(s, q);
    return near.every((n) => n.wholeCount === QUERIES.length);
  }, 5000, 20);
  const served = near.map((n) => n.stats.wholePages);
  await same('whole answers');
  t.ok(near.every((n, i) => n.stats.wholePages > served[i]!), 'and the pages came from them');
  const m = parseProm(await (await a.metrics()).text());
  t.equal(sample(m, 'registry_near_cache_total', { kind: 'answer', result: 'hit' }), near[0]!.stats.wholePages, 'exported: pages from whole answers');
  t.ok((sample(m, 'registry_near_cache_total', { kind: 'answer', result: 'miss' }) ?? 0) >= 1, 'and the ones joined before they were whole');

  // a write to a service in the first two answers: A reads it at once, B once its delta arrived
  const w = made.find((_, i) => i % 3 && i % 2)!;
  const p = await a.admin('PATCH', `/admin/api/services/${w}`, { endpoint: 'https://moved.example.com' });
  t.equal(p.status, 200);
  await p.body?.cancel();
  for (const q of QUERIES.slice(0, 2)) t.match((await pages(a, q)).join('\n'), 'https://moved.example.com', `read-your-writes on A: ${q}`);
  await waitFor('B to see the write', async () => (await pages(b, QUERIES[1]!)).join('\n').includes('https://moved.example.com'));
  const del = await a.admin('DELETE', `/admin/api/services/${made.find((id) => id !== w && made.indexOf(id) % 3 && made.indexOf(id) % 2)!}`);
  t.equal(del.status, 204);
  await waitFor('B to see the delete', () => near[1]!.fresh(b.app.keys.base('production', b.app.index.gen!)));
  await waitFor('A to follow', () => near[0]!.fresh(a.app.keys.base('production', a.app.index.gen!)));
  await same('after writes');
  // and whole again: the answers are made anew from the documents held
  await waitFor('whole again', async () => {
    for (const q of QUERIES) for (const s of [a, b]) await pages(s, q);
    return near.every((n) => n.wholeCount === QUERIES.length);
  }, 5000, 20);
  await same('whole answers after writes');
});
