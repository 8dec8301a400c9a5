// Heavy intersections run in the Piscina pool: the same pages as Redis's own scan, whether
// the serving thread fetched the sets from Redis for it (near cache off; the worker decodes
// and intersects, it opens no connection) or the worker reads the near cache's shared
// memory; a bounded queue that answers 503 + Retry-After when full and the near cache is
// off, and no 503 with it (the intersection runs inline instead, from memory).
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { registerProduction, serve } from '../helpers/server.js';

t.test('pool intersections equal Redis intersections, page by page', async (t) => {
  const redisSide = await serve(t, { env: { HEAVY_INTERSECTION_THRESHOLD: '0', RESULT_CACHE_ENTRIES: '0', NEAR_CACHE_MB: '0' } });
  const side = async (env: Record<string, string>) => {
    return serve(t, { env: { HEAVY_INTERSECTION_THRESHOLD: '1', RESULT_CACHE_ENTRIES: '0', ...env }, on: redisSide });
  };
  const fetchSide = await side({ NEAR_CACHE_MB: '0' }); // the serving thread fetches the sets from Redis for the worker
  const sharedSide = await side({}); // the worker reads the near cache's shared memory
  t.ok(fetchSide.app.intersectPool && sharedSide.app.intersectPool, 'the pools exist');
  t.equal(redisSide.app.intersectPool, null, 'threshold 0 disables it');

  for (let i = 0; i < 40; i++) {
    const caps = ['heavy-a'];
    if (i % 2 === 0) caps.push('heavy-b');
    if (i % 3 === 0) caps.push('heavy-c');
    await registerProduction(redisSide, { endpoint: `https://h${i}.example.com`, capabilities: caps, properties: { mod: String(i % 4) } });
  }
  for (const q of ['capability=heavy-a&capability=heavy-b&limit=4', 'capability=heavy-b&capability=heavy-c&limit=3', 'capability=heavy-a&capability=heavy-c&property=mod:0']) {
    let path: string | null = `/services?${q}`;
    let pages = 0;
    while (path) {
      const [r1, r2, r3]: Response[] = await Promise.all([redisSide.req(path), fetchSide.req(path), sharedSide.req(path)]);
      const want = await r1!.text();
      for (const [name, r] of [['fetching worker', r2!], ['shared-memory worker', r3!]] as const) {
        t.equal(r.status, 200);
        t.equal(await r.text(), want, `${path} body (${name})`);
        t.equal(r.headers.get('link'), r1!.headers.get('link'), `${path} next link (${name})`);
        t.equal(r.headers.get('etag'), r1!.headers.get('etag'), `${path} ETag (${name}): the same page, the same tag`);
      }
      const link: string | null = r1!.headers.get('link');
      path = link ? /<([^>]+)>/.exec(link)![1]! : null;
      pages++;
    }
    t.ok(pages >= 1, `${q}: ${pages} pages compared`);
  }
  t.ok(sharedSide.app.intersectPool!.piscina.completed > 0, 'the shared-memory side ran its intersections in the pool');
  t.ok(sharedSide.app.index.near!.stats.setHits > 0, 'over sets held in memory');
  t.ok(fetchSide.app.index.fetchedSets > 0, 'the fetching side read the sets itself and handed them to its workers');

  // a write after the sets were read: the pool path reads them again at the new version
  const path = '/services?capability=heavy-a&capability=heavy-b';
  const first = await fetchSide.req(path);
  t.equal(first.status, 200);
  const before = (await first.json()) as { id: string }[];
  const added = await registerProduction(redisSide, { endpoint: 'https://h-late.example.com', capabilities: ['heavy-a', 'heavy-b'] });
  const [want, got] = await Promise.all([redisSide.req(path), fetchSide.req(path)]);
  const after = (await got.json()) as { id: string }[];
  t.same(after, await want.json(), 'the page after the write: as Redis scans it');
  t.equal(after.length, before.length + 1, 'with the new service');
  t.ok(after.some((x) => x.id === added.id), 'which is the one just written');
});

t.test('with the near cache off, a full queue answers 503 with Retry-After', async (t) => {
  const s = await serve(t, { env: { HEAVY_INTERSECTION_THRESHOLD: '1', RESULT_CACHE_ENTRIES: '0', POOL_MAX_QUEUE: '1', POOL_THREADS: '1', NEAR_CACHE_MB: '0' } });
  for (let i = 0; i < 30; i++) await registerProduction(s, { endpoint: `https://q${i}.example.com`, capabilities: ['qa', 'qb'] });
  const path = '/services?capability=qa&capability=qb&limit=5';
  t.equal((await s.req(path)).status, 200, 'served by the pool while it has room');
  // occupy the pool's one thread and its queue of one with tasks that wait for the test
  const flag = new SharedArrayBuffer(4);
  const piscina = s.app.intersectPool!.piscina;
  const filename = fileURLToPath(new URL('../helpers/hold-task.js', import.meta.url));
  const held = [piscina.run({ flag }, { filename }), piscina.run({ flag }, { filename })];
  t.ok(piscina.queueSize >= 1, 'the queue is full');
  const busy = await s.req(path);
  t.equal(busy.status, 503, 'a heavy search meanwhile is refused');
  t.equal(busy.headers.get('retry-after'), '1');
  t.match(await busy.json(), { error: { code: 'OVERLOADED' } });
  const f = new Int32Array(flag);
  Atomics.store(f, 0, 1);
  Atomics.notify(f, 0);
  t.same(await Promise.all(held), [1, 1], 'the held tasks finish once released');
  t.equal((await s.req(path)).status, 200, 'and the pool serves again');
});

t.test('with the near cache, the same burst is answered in full: no 503', async (t) => {
  const s = await serve(t, { env: { HEAVY_INTERSECTION_THRESHOLD: '1', RESULT_CACHE_ENTRIES: '0', POOL_MAX_QUEUE: '1', POOL_THREADS: '1' } });
  for (let i = 0; i < 30; i++) await registerProduction(s, { endpoint: `https://q${i}.example.com`, capabilities: ['qa', 'qb'] });
  const one = await s.req('/services?capability=qa&capability=qb&limit=1000');
  const all = (await one.json()) as { id: string }[];
  t.equal(all.length, 30);
  const rs = await Promise.all(Array.from({ length: 60 }, (_, i) => s.req(`/services?capability=qa&capability=qb&limit=${1 + (i % 20)}`)));
  t.same(rs.map((r) => r.status), rs.map(() => 200), 'every one 200');
  const bodies = await Promise.all(rs.map(async (r) => ((await r.json()) as { id: string }[]).map((x) => x.id)));
  t.ok(bodies.every((b, i) => JSON.stringify(b) === JSON.stringify(all.slice(0, 1 + (i % 20)).map((x) => x.id))), 'each the right page');
});
