// Heavy intersections run in the Piscina pool: the same pages as Redis's own scan, a
// bounded queue that answers 503 + Retry-After when full.
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { registerProduction, startTestServer } from '../helpers/server.js';

t.test('pool intersections equal Redis intersections, page by page', async (t) => {
  const redisSide = await startTestServer({ env: { HEAVY_INTERSECTION_THRESHOLD: '0', RESULT_CACHE_ENTRIES: '0' } });
  t.teardown(() => redisSide.close());
  const poolSide = await startTestServer({
    env: { HEAVY_INTERSECTION_THRESHOLD: '1', RESULT_CACHE_ENTRIES: '0' },
    databaseUrl: redisSide.cfg.databaseUrl,
    redisKeyPrefix: redisSide.cfg.redisKeyPrefix,
  });
  t.teardown(() => poolSide.stop());
  t.ok(poolSide.app.intersectPool, 'the pool exists');
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
      const [r1, r2]: [Response, Response] = await Promise.all([redisSide.req(path), poolSide.req(path)]);
      t.equal(r2.status, 200);
      t.equal(await r2.text(), await r1.text(), `${path} body`);
      t.equal(r2.headers.get('link'), r1.headers.get('link'), `${path} next link`);
      const link: string | null = r1.headers.get('link');
      path = link ? /<([^>]+)>/.exec(link)![1]! : null;
      pages++;
    }
    t.ok(pages >= 1, `${q}: ${pages} pages compared`);
  }
});

t.test('a full queue answers 503 with Retry-After', async (t) => {
  const s = await startTestServer({ env: { HEAVY_INTERSECTION_THRESHOLD: '1', RESULT_CACHE_ENTRIES: '0', POOL_MAX_QUEUE: '1', POOL_THREADS: '1' } });
  t.teardown(() => s.close().then(() => s.app.intersectPool?.close()));
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
