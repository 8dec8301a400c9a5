// The near cache (issue 13 items 1-2): searches answered from this node's memory of index
// sets and documents give exactly the answers of the Redis path, follow writes key by key
// (no reload of the sets a write touched, none of the others), read their own writes at
// once, and reach other nodes through the published deltas. Result caches are off so that
// every request runs the search.
import t, { type Test } from 'tap';
import { registerProduction, type TestServer, serve, HOUR_CACHE } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { pages } from '../helpers/pages.js';

async function nodes(t: Test) {
  const env = { RESULT_CACHE_ENTRIES: '0' };
  const a = await serve(t, { env });
  const more = (extra: Record<string, string>) => serve(t, { env: { ...env, ...extra }, on: a });
  // b: another node with a near cache; redisOnly: the Redis path, the reference
  return { a, b: await more({}), redisOnly: await more({ NEAR_CACHE_MB: '0' }) };
}

const QUERIES = ['/services?limit=4', '/services?capability=x&limit=3', '/services?capability=x&capability=y&limit=2', '/services?capability=y&property=zone:z1', '/services?iotReady=true&limit=2', '/devices?limit=3&protocol=mqtt'];

t.test('near answers equal the Redis path, before and after writes, on both nodes', async (t) => {
  const { a, b, redisOnly } = await nodes(t);
  const made: string[] = [];
  for (let i = 0; i < 24; i++) {
    const caps = ['x', 'y', 'z'].filter((_, j) => (i >> j) & 1);
    const s = await registerProduction(a, {
      endpoint: `https://n${i}.example.com`,
      capabilities: caps.length ? caps : ['w'],
      properties: { zone: `z${i % 3}` },
      ...(i % 4 === 0 ? { iot: { deviceClasses: ['meter'], protocols: ['mqtt', 'coap'] } } : {}),
    });
    made.push(s.id);
  }
  const same = async (what: string) => {
    for (const q of QUERIES) {
      const want = await pages(redisOnly, q);
      t.same(await pages(a, q), want, `${what}: ${q} on A`);
      t.same(await pages(b, q), want, `${what}: ${q} on B`);
    }
  };
  await same('first use');
  const near = a.app.index.near!;
  t.ok(near.setCount > 0 && near.docCount > 0, 'A holds sets and documents');
  await same('from memory');
  t.ok(near.stats.setHits > 0 && near.stats.docHits > 0, 'and answered from them');

  // key-precise: a write changes the sets it names, no set is reloaded
  const misses = near.stats.setMisses;
  const p = await a.admin('PATCH', `/admin/api/services/${made[1]}`, { capabilities: ['y', 'z'], properties: { zone: 'z1' } });
  t.equal(p.status, 200);
  await p.body?.cancel();
  const mine = await (await a.req('/services?capability=y&property=zone:z1')).text();
  t.match(mine, made[1]!, 'read-your-writes on the writing node');
  await waitFor('the delta on A', () => near.fresh(a.app.keys.base('production', a.app.index.gen!)));
  const del = await a.admin('DELETE', `/admin/api/services/${made[3]}`);
  t.equal(del.status, 204);
  await waitFor('B to see the delete', async () => !(await (await b.req('/services?capability=x&limit=3')).text()).includes(made[3]!));
  await waitFor('A to follow', () => near.fresh(a.app.keys.base('production', a.app.index.gen!)));
  await same('after writes');
  t.equal(near.stats.setMisses, misses, 'no set was reloaded: the deltas kept them current');
  t.ok(near.stats.deltas >= 2, 'deltas arrived');
});

t.test('one page, one ETag: the near path and the Redis path agree, and a changed document changes it', async (t) => {
  const { a, b, redisOnly } = await nodes(t);
  const made: string[] = [];
  for (let i = 0; i < 6; i++) made.push((await registerProduction(a, { endpoint: `https://e${i}.example.com`, capability: 'etagged' })).id);
  const q = '/services?capability=etagged&limit=4';
  const tag = async (s: TestServer, path = q) => (await s.req(path)).headers.get('etag');
  const before = await tag(redisOnly);
  t.ok(before, 'the Redis path tags the page');
  // the async path (searchBody) on first use; then, everything held, the synchronous one
  const index = a.app.index;
  const searchBody = index.searchBody.bind(index);
  let asyncPages = 0;
  index.searchBody = (...args) => (asyncPages++, searchBody(...args));
  t.teardown(() => void (index.searchBody = searchBody));
  t.equal(await tag(a), before, 'near path on A, first use');
  t.equal(asyncPages, 1, 'first use: the async path (sets and documents loaded)');
  t.equal(await tag(a), before, 'near path on A, from memory');
  t.equal(asyncPages, 1, 'then the synchronous path: no searchBody()');
  t.ok(a.app.index.near!.stats.docHits > 0, 'A answered from memory');
  // a change inside one document of the page, its sets the same: the page's membership and
  // length do not move, its bytes do
  const p = await a.admin('PATCH', `/admin/api/services/${made[2]}`, { endpoint: 'https://e2-moved.example.com' });
  t.equal(p.status, 200);
  await p.body?.cancel();
  const mine = await tag(a);
  t.not(mine, before, 'the writing node: a new ETag at once');
  await waitFor('A to receive its own delta', () => index.near!.fresh(a.app.keys.base('production', index.gen!)));
  const pagesBefore = asyncPages;
  t.equal(await tag(a), mine, 'A from memory after the delta (the changed document refetched once) ...');
  t.equal(await tag(a), mine, '... then synchronously: the same tag');
  t.ok(asyncPages <= pagesBefore + 1, 'at most one async page to refetch the changed document');
  await waitFor('B to see the change', async () => (await tag(b)) !== before);
  t.equal(await tag(b), mine, 'B agrees');
  t.equal(await tag(redisOnly), mine, 'and so does the Redis path');
  const next = /<([^>]+)>/.exec((await a.req(q)).headers.get('link') ?? '')?.[1] ?? '';
  t.ok(next, 'the page has a next page');
  t.equal(await tag(a, next), await tag(redisOnly, next), 'the second page too');
});

t.test('a lost delta drops the namespace and the next search reloads (never a stale page)', async (t) => {
  const { a, redisOnly } = await nodes(t);
  for (let i = 0; i < 5; i++) await registerProduction(a, { endpoint: `https://l${i}.example.com`, capability: 'lost' });
  const q = '/services?capability=lost';
  t.same(await pages(a, q), await pages(redisOnly, q));
  const near = a.app.index.near!;
  const base = a.app.keys.base('production', a.app.index.gen!);
  // pretend a message went missing: the next one skips a version
  near.onDelta(['delta', base, 1e9, '', '', '', ''].join('\t'));
  const misses = near.stats.setMisses;
  t.same(await pages(a, q), await pages(redisOnly, q));
  t.ok(near.stats.setMisses > misses, 'reloaded');
  t.equal(near.stats.resets, 1);
});

t.test('a page computed synchronously and kept in the result cache is a copy: later pages do not overwrite it', async (t) => {
  const s = await serve(t, { env: HOUR_CACHE }); // result cache on (an hour: the walk may outlast 2 s on a loaded machine)
  for (let i = 0; i < 9; i++) await registerProduction(s, { endpoint: `https://sc${i}.example.com/${'x'.repeat(i * 40)}`, capability: 'scratch' });
  const first = '/services?capability=scratch&limit=3';
  const body = async (p: string) => {
    const r = await s.req(p);
    t.equal(r.status, 200);
    return { text: await r.text(), next: /<([^>]+)>/.exec(r.headers.get('link') ?? '')?.[1] ?? '' };
  };
  // first use loads sets and documents (async path); then every page of the walk is held
  let p = first;
  while (p) p = (await body(p)).next;
  const near = s.app.index.near!;
  const want = await body(first); // kept by the walk (a first page is kept at once)
  const deep = want.next;
  const hits = near.stats.docHits;
  // a page after a cursor joined from memory is not kept (it is joined again): this one
  const deepWant = await body(deep);
  t.ok(near.stats.docHits > hits, 'answered from memory');
  const cached = s.app.cache.hits;
  // other pages, each joined in the same scratch memory
  p = deepWant.next;
  while (p) p = (await body(p)).next;
  t.equal((await body(first)).text, want.text, 'the kept first page is intact');
  t.equal(s.app.cache.hits, cached + 1, 'it came from the result cache');
  const joined = near.stats.docHits;
  t.equal((await body(deep)).text, deepWant.text, 'the deep page is the same');
  t.equal(s.app.cache.hits, cached + 1, 'not from the result cache');
  t.ok(near.stats.docHits > joined, 'but joined from memory again');
});
