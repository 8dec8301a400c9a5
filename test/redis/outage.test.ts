// Redis unreachable while the server runs. Writes still commit to PostgreSQL and are
// acknowledged; discovery reads answer 200 from PostgreSQL (the fallback: the same bodies as
// the index, the writes of the outage included) and /readyz stays 200 saying so
// (docs/decisions/fallback-reads.md); keyed requests are admitted uncounted (rate limiting
// fails open); sandbox creation is refused (its throttle fails closed); nothing hangs. When
// Redis is back the index catches up with no manual step: from the outbox when Redis kept its
// data, by a rebuild when it came back empty. Redis sits behind a TCP proxy the test can cut.
import t, { type Test } from 'tap';
import { createSandbox, registerProduction, type TestServer, serve } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { startRedis } from '../helpers/redis-server.js';
import { startProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { ids as idsOf } from '../helpers/checks.js';
import { ADMIN_KEY } from '../helpers/env.js';

/** A request that must answer within `ms` (the hang detector; not a performance bound). */
async function answer(s: TestServer, path: string, init: RequestInit = {}, ms = 20_000): Promise<{ status: number; body: string; headers: Headers }> {
  const r = await s.req(path, { ...init, signal: AbortSignal.timeout(ms) });
  return { status: r.status, body: await r.text(), headers: r.headers };
}

const json = (key: string, body: unknown): RequestInit => ({
  method: 'POST',
  headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

async function ids(s: TestServer, path: string, key?: string): Promise<string[] | null> {
  const r = await s.req(path, key ? { headers: { authorization: `Bearer ${key}` } } : {});
  if (r.status !== 200) return null;
  return idsOf(r);
}

t.test('Redis unreachable: writes acknowledged, reads from PostgreSQL, index catches up afterwards', async (t) => {
  const redis = await startRedis();
  const proxy: TcpProxy = await startProxy(redis.port);
  t.teardown(async () => {
    await proxy.close();
    await redis.kill();
  });
  const s = await serve(t, { through: { redis: proxy }, env: { RESULT_CACHE_ENTRIES: '0', OUTBOX_SWEEP_MS: '200' } });
  const sb = await createSandbox(s, 'Outage');
  const before = await registerProduction(s, { endpoint: 'https://before.example.com', capability: 'outage' });
  t.same(await ids(s, '/services?capability=outage'), [before.id]);
  // the key is known to this thread now; a fresh thread would find it in PostgreSQL
  t.equal((await answer(s, `/sandbox/${sb.uuid}/services`, { headers: { authorization: `Bearer ${sb.apiKey}` } })).status, 200);

  const outage = async (t: Test, how: string) => {
    await waitFor(`${how}: /readyz says reads come from PostgreSQL`, async () => {
      const r = await answer(s, '/readyz');
      const b = JSON.parse(r.body) as { reads: string; redis: boolean };
      return r.status === 200 && b.reads === 'postgres' && !b.redis;
    });
    t.match(JSON.parse((await answer(s, '/readyz')).body), { status: 'degraded', redis: false, degraded: ['redis'] }, `${how}: /readyz stays 200 and names Redis`);
    // writes: committed to PostgreSQL and acknowledged
    const w = await answer(s, '/admin/api/services', json(ADMIN_KEY, { endpoint: `https://during-${how}.example.com`, capability: `during-${how}` }));
    t.equal(w.status, 201, `${how}: a production write is acknowledged`);
    const prodId = (JSON.parse(w.body) as { id: string }).id;
    const sw = await answer(s, `/sandbox/${sb.uuid}/services`, json(sb.apiKey, { endpoint: `https://sb-${how}.example.com`, capability: `sb-${how}` }));
    t.equal(sw.status, 201, `${how}: a keyed sandbox write is admitted (rate limiting fails open) and acknowledged`);
    t.notOk(sw.headers.get('ratelimit'), `${how}: uncounted, so no RateLimit field`);
    const sbId = (JSON.parse(sw.body) as { id: string }).id;
    // reads that need the index: from PostgreSQL, the outage's writes included
    for (const [path, key, expected] of [
      ['/services?capability=outage', undefined, [before.id]],
      [`/services?capability=during-${how}`, undefined, [prodId]],
      [`/sandbox/${sb.uuid}/services?capability=sb-${how}`, sb.apiKey, [sbId]],
      ['/services?capability=outage', sb.apiKey, []],
    ] as const) {
      t.same(await ids(s, path, key), expected, `${how}: ${path}${key ? ' (keyed)' : ''} answers 200 from PostgreSQL`);
    }
    const one = await answer(s, `/services/${before.id}`);
    t.equal(one.status, 200, `${how}: /services/{id} too`);
    t.equal((JSON.parse(one.body) as { id: string }).id, before.id);
    // sandbox creation: its per-address throttle lives in Redis and fails closed
    const c = await answer(s, '/sandboxes', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"during"}' });
    t.equal(c.status, 503, `${how}: sandbox creation is refused`);
    t.ok(c.headers.get('retry-after'), `${how}: ... with Retry-After`);
    t.equal((await answer(s, '/livez')).status, 200, `${how}: alive throughout`);
    return { prodId, sbId };
  };

  const caughtUp = async (t: Test, how: string, w: { prodId: string; sbId: string }) => {
    await waitFor(`${how}: reads from the index again`, async () => (JSON.parse((await answer(s, '/readyz')).body) as { reads: string }).reads === 'index', 30_000);
    await waitFor(`${how}: the production write is searchable`, async () => (await ids(s, `/services?capability=during-${how}`))?.[0] === w.prodId);
    await waitFor(`${how}: the sandbox write is searchable`, async () => (await ids(s, `/sandbox/${sb.uuid}/services?capability=sb-${how}`, sb.apiKey))?.[0] === w.sbId);
    t.same(await ids(s, '/services?capability=outage'), [before.id], `${how}: earlier data intact`);
    await waitFor(`${how}: the outbox drains`, async () => (await s.app.pg.query<{ n: string }>('SELECT count(*) AS n FROM outbox')).rows[0]!.n === '0');
    t.pass(`${how}: caught up with no manual step`);
  };

  await t.test('connection refused, Redis keeps its data: the outbox catches up', async (t) => {
    await proxy.set('refuse');
    const w = await outage(t, 'refused');
    await proxy.set('pass');
    await caughtUp(t, 'refused', w);
  });

  await t.test('network partition (no answers at all): nothing hangs', async (t) => {
    await proxy.set('blackhole');
    const w = await outage(t, 'partition');
    await proxy.set('pass');
    await caughtUp(t, 'partition', w);
  });

  await t.test('Redis stopped, then started empty: the index is rebuilt', async (t) => {
    await redis.kill();
    const w = await outage(t, 'restart');
    await redis.restart();
    await caughtUp(t, 'restart', w);
  });
});

