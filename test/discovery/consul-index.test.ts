// X-Consul-Index (contract, "Consul-compatible catalog"; docs/decisions/consul-index.md): a
// positive integer that grows whenever a query's answer changes — a member's write, a service
// that joins, one that leaves by a patch or a deletion, a health transition, a write applied
// to the index after a newer one (out of revision order) — does not move for writes to other
// capabilities or other namespaces, and never decreases, across a loss of Redis and the
// rebuild from PostgreSQL too.
import t, { type Test } from 'tap';
import { jsonBody } from '../helpers/checks.js';
import { applyHook, createSandbox, registerProduction, serve } from '../helpers/server.js';
import { rebuildIndex } from '../../src/hot/reindex/rebuild.js';
import { waitFor } from '../helpers/wait.js';

const hook = applyHook();
const s = await serve(t, { hooks: hook.hooks });

const answer = async (path: string): Promise<{ index: bigint; body: string }> => {
  const r = await s.req(path);
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${await r.text()}`);
  return { index: BigInt(r.headers.get('x-consul-index')!), body: await r.text() };
};
const QUERIES = ['/v1/health/service/web', '/v1/catalog/service/web', '/v1/catalog/services', '/v1/health/service/db'];
const indexes = async () => Object.fromEntries(await Promise.all(QUERIES.map(async (q) => [q, (await answer(q)).index] as const)));

/** `change` must raise the index of `path`, and change its answer when `changes` */
async function grows(t: Test, path: string, what: string, change: () => Promise<unknown>): Promise<void> {
  const before = await answer(path);
  await change();
  const after = await answer(path);
  t.not(after.body, before.body, `${what}: the answer changed`);
  t.ok(after.index > before.index, `${what}: ${path} index ${before.index} -> ${after.index}`);
}

const w1 = await registerProduction(s, { endpoint: 'https://w1.example.com', capabilities: ['web'], ttl: 3600 });
const w2 = await registerProduction(s, { endpoint: 'https://w2.example.com', capabilities: ['web', 'db'] });

t.test('a positive integer, the same while nothing changes', async (t) => {
  const a = await answer('/v1/health/service/web');
  t.ok(a.index > 0n);
  t.equal((await answer('/v1/health/service/web')).index, a.index);
  t.equal((await answer('/v1/health/service/nothing-here')).index, 1n, 'a capability nothing ever had: 1');
});

t.test('grows with every change of the answer', async (t) => {
  let w3 = '';
  await grows(t, '/v1/health/service/web', 'a registration', async () => (w3 = (await registerProduction(s, { endpoint: 'https://w3.example.com', capabilities: ['web'] })).id));
  await grows(t, '/v1/health/service/web', "a member's patch", () => s.admin('PATCH', `/admin/api/services/${w2.id}`, { properties: { k: 'v' } }));
  await grows(t, '/v1/catalog/services', "a member's patch (the whole catalog)", () => s.admin('PATCH', `/admin/api/services/${w2.id}`, { properties: { k: 'w' } }));
  await grows(t, '/v1/health/service/web', 'a member that leaves the capability', () => s.admin('PATCH', `/admin/api/services/${w3}`, { capabilities: ['other'] }));
  await grows(t, '/v1/health/service/web', 'it comes back', () => s.admin('PATCH', `/admin/api/services/${w3}`, { capabilities: ['web', 'other'] }));
  await grows(t, '/v1/health/service/web', 'a deletion', () => s.admin('DELETE', `/admin/api/services/${w3}`));
  const token = (w1 as unknown as { heartbeatToken: string }).heartbeatToken;
  const beat = (status: string) => s.req(`/services/${w1.id}/heartbeat`, { method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ status }) });
  await grows(t, '/v1/health/service/web', 'a turn to critical', () => beat('critical'));
  await grows(t, '/v1/health/service/web', 'and back to passing', () => beat('passing'));
  await grows(t, '/v1/health/service/db', 'a patch of the db member', () => s.admin('PATCH', `/admin/api/services/${w2.id}`, { properties: { k: 'x' } }));
});

t.test('writes to other capabilities and other namespaces leave it alone', async (t) => {
  const before = await indexes();
  const other = await registerProduction(s, { endpoint: 'https://o.example.com', capabilities: ['other'] });
  await s.admin('PATCH', `/admin/api/services/${other.id}`, { properties: { a: 'b' } });
  await s.admin('DELETE', `/admin/api/services/${other.id}`);
  const sb = await createSandbox(s, 'Index Box');
  const r = await s.req(`/sandbox/${sb.uuid}/services`, jsonBody('POST', { endpoint: 'https://sb.example.com', capabilities: ['web', 'db'] }, sb.apiKey));
  t.equal(r.status, 201);
  const after = await indexes();
  for (const q of QUERIES.filter((x) => x !== '/v1/catalog/services')) t.equal(after[q], before[q], `${q}: unchanged`);
  t.ok(after['/v1/catalog/services']! >= before['/v1/catalog/services']!, 'the whole catalog may grow (it lists every capability)');
});

t.test('a write applied after a newer one (out of revision order) still raises it', async (t) => {
  const m1 = await registerProduction(s, { endpoint: 'https://r1.example.com', capabilities: ['race'] });
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let held = false;
  hook.set(async (ids) => {
    if (ids.includes(m1.id)) {
      held = true;
      await gate;
    }
  });
  // the patch commits first (the smaller revision) and waits before its apply
  const patched = s.admin('PATCH', `/admin/api/services/${m1.id}`, { properties: { late: 'yes' } });
  await waitFor('the patch held before its apply', () => held);
  // a registration commits after it (a larger revision) and is applied first
  await registerProduction(s, { endpoint: 'https://r2.example.com', capabilities: ['race'] });
  const mid = await answer('/v1/health/service/race');
  t.notMatch(mid.body, /"late"/, 'the patch is not in the answer yet');
  release();
  t.equal((await patched).status, 200);
  hook.set(null);
  const end = await answer('/v1/health/service/race');
  t.match(end.body, /"late"/, 'now it is');
  t.ok(end.index > mid.index, `the index grew: ${mid.index} -> ${end.index}`);
});

t.test('never decreases across a loss of Redis and the rebuild', async (t) => {
  // a service that left 'web' and one deleted from it: their tombstones must survive
  const gone = await registerProduction(s, { endpoint: 'https://gone.example.com', capabilities: ['web', 'db'] });
  const moved = await registerProduction(s, { endpoint: 'https://moved.example.com', capabilities: ['web'] });
  await s.admin('DELETE', `/admin/api/services/${gone.id}`);
  await s.admin('PATCH', `/admin/api/services/${moved.id}`, { capabilities: ['elsewhere'] });
  const before = await indexes();
  const bodies = Object.fromEntries(await Promise.all(QUERIES.map(async (q) => [q, (await answer(q)).body] as const)));
  const redis = s.app.redis;
  for (const k of await redis.keys(s.cfg.redisKeyPrefix + '*')) await redis.del(k);
  const r = await rebuildIndex(s.app.pg, redis, s.app.keys, s.cfg.tiers);
  if (r) await s.app.index.refreshGen();
  await waitFor('the rebuilt index live', async () => (await redis.get(s.app.keys.gen())) && !(await redis.get(s.app.keys.building())) && s.app.state.ready && (await s.req('/v1/health/service/web')).status === 200);
  const after = await indexes();
  for (const q of QUERIES) {
    const a = await answer(q);
    t.equal(a.body, bodies[q], `${q}: the same answer`);
    t.ok(after[q]! >= before[q]!, `${q}: ${before[q]} -> ${after[q]}`);
  }
});
