// The Consul-compatible catalog while the index is away (contract, "Availability": "the Consul
// and DNS answers"; docs/decisions/consul-index.md, "While the index is away"). A answers from
// its Redis index, B shares A's database without any Redis (every read from PostgreSQL). Each
// catalog route must answer B 200 with A's body and an X-Consul-Index at least A's — and
// exactly the index a rebuild of the index gives (the tombstone of a service that left and
// changed since counts at its revision now) — a registration made while the index is away
// shows in B's answers, A's own answers come from PostgreSQL once its index is dropped, DNS
// answers B as A, and the fallback's bounds hold (503 beyond FALLBACK_MAX_QUERIES, 422 beyond DISCOVERY_MAX_TARGETS).
import t from 'tap';
import pg from 'pg';
import { registerProduction, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { dig } from '../discovery/dns/fixture.js';
import { rebuildIndex } from '../../src/hot/reindex/rebuild.js';
import { PRODUCTION } from '../../src/hot/domain/keys.js';

const dns = { DNS_PORT: '0', DNS_DOMAIN: 'fb.test.' };
const a = await startTestServer({ env: { RESULT_CACHE_ENTRIES: '0', ...dns }, hooks: { sweep: false } });
const noRedis = { REDIS_URL: 'redis://127.0.0.1:1', REDIS_CLUSTER_NODES: '', RESULT_CACHE_ENTRIES: '0' };
const b = await startTestServer({ databaseUrl: a.cfg.databaseUrl, env: { ...noRedis, ...dns }, hooks: { sweep: false } });
t.teardown(async () => {
  await b.stop();
  await a.close();
});

await registerProduction(a, { endpoint: 'https://w1.example.com:8443/x', capabilities: ['web', 'api'], properties: { zone: 'a' }, ttl: 3600 });
await registerProduction(a, { endpoint: 'http://[2001:db8::2]', capabilities: ['web'], properties: { zone: 'b' } });
const db = await registerProduction(a, { endpoint: 'http://10.1.2.3:5432', capabilities: ['db', 'web'] });
// a critical member, one that left 'web' and changed since, one deleted from it
const sick = await registerProduction(a, { endpoint: 'https://sick.example.com', capabilities: ['web'], ttl: 3600 });
const hb = await a.req(`/services/${sick.id}/heartbeat`, { method: 'PUT', headers: { authorization: `Bearer ${String(sick.heartbeatToken)}`, 'content-type': 'application/json' }, body: JSON.stringify({ status: 'critical' }) });
if (hb.status !== 204) throw new Error(`heartbeat: ${hb.status}`);
const moved = await registerProduction(a, { endpoint: 'https://moved.example.com', capabilities: ['web'] });
const gone = await registerProduction(a, { endpoint: 'https://gone.example.com', capabilities: ['web', 'db'] });
for (const [m, p, body] of [['PATCH', moved.id, { capabilities: ['elsewhere'] }], ['PATCH', moved.id, { properties: { after: 'leaving' } }], ['DELETE', gone.id, undefined]] as const) {
  const r = await a.admin(m, `/admin/api/services/${p}`, body);
  if (r.status >= 300) throw new Error(`${m} ${p}: ${r.status}`);
}

const QUERIES = [
  '/v1/catalog/services',
  '/v1/catalog/service/web',
  '/v1/catalog/service/web?tag=zone%3Da',
  '/v1/health/service/web',
  '/v1/health/service/web?passing',
  '/v1/health/service/db',
  '/v1/catalog/service/elsewhere',
  '/v1/health/service/nothing-here',
];

interface Answer {
  status: number;
  body: string;
  index: bigint;
}

async function answer(s: TestServer, path: string): Promise<Answer> {
  const r = await s.req(path);
  const index = r.headers.get('x-consul-index');
  return { status: r.status, body: await r.text(), index: index === null ? -1n : BigInt(index) };
}
const answers = async (s: TestServer) => Object.fromEntries(await Promise.all(QUERIES.map(async (q) => [q, await answer(s, q)] as const)));

t.test('B answers each catalog route from PostgreSQL: 200, the index’s body, an index at least the index’s', async (t) => {
  t.match(await (await b.req('/readyz')).json(), { reads: 'postgres', degraded: ['redis'] }, 'B has no index');
  const fromIndex = await answers(a);
  const fromPg = await answers(b);
  for (const q of QUERIES) {
    t.equal(fromIndex[q]!.status, 200, `${q}: the index answers 200`);
    t.equal(fromPg[q]!.status, 200, `${q}: PostgreSQL answers 200`);
    t.equal(fromPg[q]!.body, fromIndex[q]!.body, `${q}: the same body`);
    t.ok(fromPg[q]!.index >= fromIndex[q]!.index, `${q}: index ${fromIndex[q]!.index} (Redis) <= ${fromPg[q]!.index} (PostgreSQL)`);
  }
  t.match(fromPg['/v1/health/service/web']!.body, /"Status":"critical"/, 'the critical member reads critical');
  t.notMatch(fromPg['/v1/health/service/web?passing']!.body, new RegExp(sick.id), '... and ?passing leaves it out');
  t.notMatch(fromPg['/v1/health/service/web']!.body, new RegExp(`${moved.id}|${gone.id}`), 'who left is not listed');
  // 'moved' left web and was patched since: its tombstone counts at its revision now, as a rebuild writes it
  t.ok(fromPg['/v1/health/service/web']!.index > fromIndex['/v1/health/service/web']!.index, 'web: the tombstone of a service changed since it left counts at its revision now');
  t.equal(fromPg['/v1/health/service/nothing-here']!.index, 1n, 'a capability nothing ever had: 1');
});

t.test('DNS from PostgreSQL: the answers the index gives', async (t) => {
  const names: [string, string][] = [['web.service.fb.test', 'SRV'], ['db.web.service.fb.test', 'SRV'], ['_web._tcp.service.fb.test', 'SRV'], ['web.service.fb.test', 'AAAA'], [`${db.id}.addr.fb.test`, 'A'], ['elsewhere.service.fb.test', 'SRV'], ['nothing.service.fb.test', 'SRV']];
  for (const [name, type] of names) {
    const [x, y] = await Promise.all([a, b].map(async (s) => {
      const r = await dig(s.thread.dnsPort()!, name, type);
      return { status: r.status, answer: r.answer.map((z) => `${z.name} ${z.ttl} ${z.type} ${z.data}`).sort(), additional: r.additional.map((z) => `${z.name} ${z.type} ${z.data}`).sort() };
    }));
    t.same(y, x, `${type} ${name}: ${x!.status}, ${x!.answer.length} answers`);
  }
});

t.test("A's index dropped: A answers from PostgreSQL too, and the rebuilt index gives PostgreSQL's X-Consul-Index", async (t) => {
  const fromPg = await answers(b);
  const redis = a.app.redis;
  for (const k of await redis.keys(a.cfg.redisKeyPrefix + '*')) await redis.del(k);
  // A still names its generation: catalog-1.lua finds the namespace not indexed, and either() asks PostgreSQL
  const dropped = await answers(a);
  for (const q of QUERIES) t.same(dropped[q], fromPg[q], `${q}: A without its index answers as B`);
  const r = await rebuildIndex(a.app.pg, redis, a.app.keys, a.cfg.tiers);
  if (r) await a.app.index.refreshGen();
  await waitFor('the rebuilt index live', async () => !!(await redis.get(a.app.keys.gen())) && !(await redis.get(a.app.keys.building())) && a.app.state.ready && (await a.req('/readyz').then((x) => x.json() as Promise<{ reads: string }>)).reads === 'index');
  const rebuilt = await answers(a);
  for (const q of QUERIES) t.same(rebuilt[q], fromPg[q], `${q}: the rebuilt index answers PostgreSQL's body and index`);
});

t.test('a registration while the index is away shows in the answer from PostgreSQL', async (t) => {
  const before = await answer(b, '/v1/health/service/web');
  const r = await b.admin('POST', '/admin/api/services', { endpoint: 'https://during.example.com', capabilities: ['web'] });
  t.equal(r.status, 201, 'B takes the write without Redis');
  const id = ((await r.json()) as { id: string }).id;
  const after = await answer(b, '/v1/health/service/web');
  t.equal(after.status, 200);
  t.match(after.body, new RegExp(`"ID":"${id}"`), 'the new member is listed');
  t.ok(after.index > before.index, `the index grew: ${before.index} -> ${after.index}`);
  t.match((await answer(b, '/v1/catalog/services')).body, /"web":/);
  // a blocking query on PostgreSQL: held until `wait` passes (no Redis to wake it), then the answer as it stands
  const t0 = Date.now();
  const held = await answer(b, `/v1/health/service/web?index=${after.index}&wait=300ms`);
  t.ok(Date.now() - t0 >= 250, 'held for the wait');
  t.same(held, after, '... then the same answer');
});

t.test('bounded: FALLBACK_MAX_QUERIES in flight, one more is 503 at once; DISCOVERY_MAX_TARGETS is 422', async (t) => {
  const c = await startTestServer({ databaseUrl: a.cfg.databaseUrl, env: { ...noRedis, FALLBACK_PG_CONNECTIONS: '2', FALLBACK_MAX_QUERIES: '3', DISCOVERY_MAX_TARGETS: '2' } });
  t.teardown(() => c.stop());
  const tooMany = await c.req('/v1/health/service/web');
  t.equal(tooMany.status, 422, 'more members than DISCOVERY_MAX_TARGETS: 422');
  t.match(await tooMany.json(), { error: { code: 'TOO_MANY_TARGETS', message: /more than 2/ } });
  t.equal((await c.req('/v1/health/service/db')).status, 200, 'two members: 200');
  const lock = new pg.Client({ connectionString: a.cfg.databaseUrl });
  await lock.connect();
  await lock.query('BEGIN');
  await lock.query('LOCK TABLE services IN ACCESS EXCLUSIVE MODE');
  // distinct tags: no two share a computation (single flight)
  const pending = Array.from({ length: 10 }, (_, i) => c.req(`/v1/health/service/db?tag=t${i}`).then(async (r) => ({ status: r.status, retryAfter: r.headers.get('retry-after'), body: await r.text() })));
  const settled: { status: number; retryAfter: string | null; body: string }[] = [];
  for (const p of pending) void p.then((x) => settled.push(x));
  await waitFor('the refusals', async () => settled.length === 7);
  t.ok(settled.every((x) => x.status === 503 && x.retryAfter === '1'), '7 refused with 503 and Retry-After: 1');
  t.match(JSON.parse(settled[0]!.body), { error: { code: 'OVERLOADED' } });
  await lock.query('ROLLBACK');
  await lock.end();
  const all = await Promise.all(pending);
  t.equal(all.filter((x) => x.status === 200 && x.body === '[]').length, 3, 'the 3 admitted answer 200 once PostgreSQL can');
  t.equal((await c.req('/v1/health/service/db?tag=again')).status, 200, 'and the gate is open again');
});

t.test("the index's capability tombstones never fall: a leave applied at a smaller revision keeps a raised entry", async (t) => {
  // (the readiness watcher raises them to the revisions PostgreSQL counted when Redis comes
  // back; a state of the outage applied afterwards by the outbox must not lower them)
  const x = await registerProduction(a, { endpoint: 'https://x.example.com', capabilities: ['raise'] });
  const key = a.app.keys.base(PRODUCTION, a.app.index.gen!) + 'ct:raise';
  await a.app.redis.hset(key, x.id, '999999999');
  t.equal((await a.admin('PATCH', `/admin/api/services/${x.id}`, { capabilities: ['raised'] })).status, 200, 'it leaves');
  t.equal(await a.app.redis.hget(key, x.id), '999999999', 'the larger entry stays');
  const y = await registerProduction(a, { endpoint: 'https://y.example.com', capabilities: ['raise'] });
  await a.admin('DELETE', `/admin/api/services/${y.id}`);
  t.ok(Number(await a.app.redis.hget(key, y.id)) > 0, 'a leave with no entry before records its revision');
});
