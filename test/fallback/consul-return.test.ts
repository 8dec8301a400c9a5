// The Consul catalog across a Redis outage that keeps its data (docs/decisions/consul-index.md,
// "While the index is away"): Redis behind a TCP proxy the test cuts and restores. While it is
// cut, the catalog answers from PostgreSQL with the index a rebuild would give — a service
// that left `web` and was written since counts at its revision now, above the revision the
// live index recorded — and the outage's registration shows. Once Redis is back (the same
// generation, no rebuild) no Consul client sees the index step back below what PostgreSQL
// answered: the catalog stays on PostgreSQL until the index's tombstones were raised, and the
// index then answers no less — also for a service that left during the outage and was written
// again before Redis came back. Three times: an outage a readiness round saw; one shorter than
// a round (seen only by the requests that failed), which no round reports; and that one again
// with a second thread of the process whose own connection to Redis never failed.
import t, { type Test } from 'tap';
import { processShared } from '../../src/hot/compose.js';
import { registerProduction, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { startRedis } from '../helpers/redis-server.js';
import { startProxy } from '../helpers/tcp-proxy.js';

const QUERIES = ['/v1/health/service/web', '/v1/catalog/service/web', '/v1/catalog/services', '/v1/health/service/elsewhere'];

async function answer(s: TestServer, path: string): Promise<{ status: number; body: string; index: bigint }> {
  const r = await s.req(path, { signal: AbortSignal.timeout(20_000) });
  return { status: r.status, body: await r.text(), index: BigInt(r.headers.get('x-consul-index') ?? '-1') };
}
const readyz = async (s: TestServer) => (await (await s.req('/readyz')).json()) as { reads: string; redis: boolean };
const answers = async (s: TestServer) => Object.fromEntries(await Promise.all(QUERIES.map(async (q) => [q, await answer(s, q)] as const)));

async function outage(t: Test, seenByARound: boolean, threads: 1 | 2 = 1): Promise<void> {
  const redis = await startRedis();
  const proxy = await startProxy(redis.port);
  const env = { REDIS_URL: `redis://127.0.0.1:${proxy.port}`, REDIS_CLUSTER_NODES: '', RESULT_CACHE_ENTRIES: '0', OUTBOX_SWEEP_MS: '200' };
  // (two: a second thread of the same process, on the same database and prefix, whose own
  // connection to Redis never fails: only the first one's does)
  const shared = processShared();
  const s = await startTestServer({ env, hooks: { sweep: false }, shared });
  const other = threads === 2 ? await startTestServer({ env: { ...env, REDIS_URL: `redis://127.0.0.1:${redis.port}` }, hooks: { sweep: false }, shared, on: { cfg: s.app.cfg } }) : null;
  const asked = other ? [s, other] : [s];
  t.teardown(async () => {
    await proxy.set('pass');
    await other?.close();
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
  const live = await answers(s);
  const gen = s.app.index.gen;

  await proxy.set('refuse');
  if (seenByARound) await waitFor('a readiness round saw Redis away', async () => !(await readyz(s)).redis);
  else await waitFor('reads from PostgreSQL', async () => (await readyz(s)).reads === 'postgres');
  const w = await s.admin('POST', '/admin/api/services', { endpoint: 'https://during.example.com', capabilities: ['web'] });
  t.equal(w.status, 201, 'a registration during the outage');
  const during = ((await w.json()) as { id: string }).id;
  // one that leaves web during the outage and is written again: the index must not keep its leaving revision
  for (const body of [{ capabilities: ['elsewhere'] }, { properties: { written: 'again' } }]) {
    const r = await s.admin('PATCH', `/admin/api/services/${late.id}`, body);
    t.equal(r.status, 200, 'a patch during the outage');
  }
  const away = await answers(s);
  for (const q of QUERIES) {
    t.equal(away[q]!.status, 200, `${q}: 200 from PostgreSQL`);
    t.ok(away[q]!.index >= live[q]!.index, `${q}: ${live[q]!.index} (index) <= ${away[q]!.index} (PostgreSQL)`);
  }
  t.match(away['/v1/health/service/web']!.body, new RegExp(`"ID":"${during}"`), "the outage's registration is listed");
  t.notMatch(away['/v1/health/service/web']!.body, new RegExp(late.id), '... and the one that left is not');
  t.ok(s.app.state.catalogCatchingUp, 'PostgreSQL answered the catalog: it stays there until the index caught up');
  if (other) {
    const beside = await answers(other);
    for (const q of QUERIES) t.ok(beside[q]!.index >= away[q]!.index, `${q}: ${away[q]!.index} (PostgreSQL, the first thread) <= ${beside[q]!.index} (the other thread, meanwhile)`);
  }

  await proxy.set('pass');
  // from now until the index caught up (Redis reconnects, a readiness round raises the
  // tombstones, the outbox applies the outage's writes), asked again and again: never a step
  // back. Beside it, clients that never stop asking: their answers, held on PostgreSQL, do not
  // hold the catalog there for good
  let rounds = 0;
  const stepsBack: string[] = [];
  let stop = false;
  const clients = asked.flatMap((x, n) =>
    QUERIES.map(async (q) => {
      while (!stop) {
        const a = await answer(x, q);
        if (a.index < away[q]!.index) stepsBack.push(`${q}: ${a.index} after ${away[q]!.index} (a client of thread ${n})`);
      }
    }),
  );
  await waitFor('reads from the index again, its tombstones raised', async () => {
    const done = (await readyz(s)).reads === 'index' && asked.every((x) => !x.app.state.catalogCatchingUp);
    for (const [n, x] of asked.entries()) {
      const now = await answers(x);
      for (const q of QUERIES) if (now[q]!.index < away[q]!.index) stepsBack.push(`${q}: ${now[q]!.index} after ${away[q]!.index} (thread ${n})`);
    }
    rounds++;
    return done;
  }, 20_000, 20).finally(() => (stop = true));
  await Promise.all(clients);
  t.same(stepsBack, [], `no step back while Redis returned (${rounds} rounds of the four queries)`);
  t.equal(s.app.index.gen, gen, 'the same generation: Redis kept its data, no rebuild');
  await waitFor("the outage's writes reached the index", async () => (await answer(s, '/v1/health/service/web')).body === away['/v1/health/service/web']!.body);
  for (const x of asked) {
    for (const q of QUERIES) {
      const back = await answer(x, q);
      t.equal(back.body, away[q]!.body, `${q}: the index answers what PostgreSQL answered`);
      t.ok(back.index >= away[q]!.index, `${q}: ${away[q]!.index} (PostgreSQL) <= ${back.index} (the index, back)`);
    }
  }
}

t.test('Redis away, seen by a readiness round, and back with its data: the index never answers below what PostgreSQL answered', (t) => outage(t, true));
t.test('Redis away between two readiness rounds and back with its data: the same', (t) => outage(t, false));
t.test('... and another thread of the process, whose Redis never failed, does not step back below the first one either', (t) => outage(t, false, 2));
