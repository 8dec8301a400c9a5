// The Consul catalog across a Redis outage that keeps its data (docs/decisions/consul-index.md,
// "While the index is away"): Redis behind a TCP proxy the test cuts and restores. While it is
// cut, the catalog answers from PostgreSQL with the index a rebuild would give — a service
// that left `web` and was written since counts at its revision now, above the revision the
// live index recorded — and the outage's registration shows. Once Redis is back (the same
// generation, no rebuild) and the outage's writes reached it, the index answers no smaller
// an X-Consul-Index than PostgreSQL did: no Consul client sees it step back — also for a
// service that left during the outage and was written again before Redis came back.
import t from 'tap';
import { registerProduction, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { startRedis } from '../helpers/redis-server.js';
import { startProxy } from '../helpers/tcp-proxy.js';

const QUERIES = ['/v1/health/service/web', '/v1/catalog/service/web', '/v1/catalog/services', '/v1/health/service/elsewhere'];

async function answer(s: TestServer, path: string): Promise<{ status: number; body: string; index: bigint }> {
  const r = await s.req(path, { signal: AbortSignal.timeout(20_000) });
  return { status: r.status, body: await r.text(), index: BigInt(r.headers.get('x-consul-index') ?? '-1') };
}
const reads = async (s: TestServer) => ((await (await s.req('/readyz')).json()) as { reads: string }).reads;

t.test('Redis away and back with its data: the index never answers below what PostgreSQL answered', async (t) => {
  const redis = await startRedis();
  const proxy = await startProxy(redis.port);
  const s = await startTestServer({ env: { REDIS_URL: `redis://127.0.0.1:${proxy.port}`, REDIS_CLUSTER_NODES: '', RESULT_CACHE_ENTRIES: '0', OUTBOX_SWEEP_MS: '200' }, hooks: { sweep: false } });
  t.teardown(async () => {
    await proxy.set('pass');
    await s.close();
    await proxy.close();
    await redis.kill();
  });
  await registerProduction(s, { endpoint: 'https://w.example.com', capabilities: ['web'] });
  const moved = await registerProduction(s, { endpoint: 'https://moved.example.com', capabilities: ['web'] });
  const late = await registerProduction(s, { endpoint: 'https://late.example.com', capabilities: ['web'] });
  for (const body of [{ capabilities: ['elsewhere'] }, { properties: { written: 'since' } }]) {
    const r = await s.admin('PATCH', `/admin/api/services/${moved.id}`, body);
    t.equal(r.status, 200);
  }
  const live = Object.fromEntries(await Promise.all(QUERIES.map(async (q) => [q, await answer(s, q)] as const)));
  const gen = s.app.index.gen;

  await proxy.set('refuse');
  await waitFor('reads from PostgreSQL', async () => (await reads(s)) === 'postgres');
  const w = await s.admin('POST', '/admin/api/services', { endpoint: 'https://during.example.com', capabilities: ['web'] });
  t.equal(w.status, 201, 'a registration during the outage');
  const during = ((await w.json()) as { id: string }).id;
  // one that leaves web during the outage and is written again: the index must not keep its leaving revision
  for (const body of [{ capabilities: ['elsewhere'] }, { properties: { written: 'again' } }]) {
    const r = await s.admin('PATCH', `/admin/api/services/${late.id}`, body);
    t.equal(r.status, 200, 'a patch during the outage');
  }
  const away = Object.fromEntries(await Promise.all(QUERIES.map(async (q) => [q, await answer(s, q)] as const)));
  for (const q of QUERIES) {
    t.equal(away[q]!.status, 200, `${q}: 200 from PostgreSQL`);
    t.ok(away[q]!.index >= live[q]!.index, `${q}: ${live[q]!.index} (index) <= ${away[q]!.index} (PostgreSQL)`);
  }
  t.match(away['/v1/health/service/web']!.body, new RegExp(`"ID":"${during}"`), "the outage's registration is listed");
  t.notMatch(away['/v1/health/service/web']!.body, new RegExp(late.id), '... and the one that left is not');

  await proxy.set('pass');
  await waitFor('reads from the index again', async () => (await reads(s)) === 'index');
  t.equal(s.app.index.gen, gen, 'the same generation: Redis kept its data, no rebuild');
  await waitFor("the outage's writes reached the index", async () => (await answer(s, '/v1/health/service/web')).body === away['/v1/health/service/web']!.body);
  for (const q of QUERIES) {
    const back = await answer(s, q);
    t.equal(back.body, away[q]!.body, `${q}: the index answers what PostgreSQL answered`);
    t.ok(back.index >= away[q]!.index, `${q}: ${away[q]!.index} (PostgreSQL) <= ${back.index} (the index, back)`);
  }
});
