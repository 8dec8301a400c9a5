// The search, sandbox and rate-limit flows against a Redis Cluster (3 primaries, started by
// `scripts/services.sh cluster-up`; REDIS_CLUSTER_NODES or TEST_REDIS_CLUSTER_NODES names
// it). Every multi-key script must stay in one slot: zero CROSSSLOT (and zero "non local
// key") errors, counted by the cluster nodes themselves (INFO errorstats) and in the
// server's own error log. The index is also lost and rebuilt, and reindexed over a live
// generation (the old one is dropped on every primary) — by deleting this test's own keys,
// never FLUSHALL, since the cluster may be shared.
import t from 'tap';
import { Cluster } from 'ioredis';
import { Writable } from 'node:stream';
import { rebuildIndex } from '../../src/hot/reindex/rebuild.js';
import { createSandbox, registerProduction, type TestServer, serve } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { ids } from '../helpers/checks.js';
import { ADMIN_KEY } from '../helpers/env.js';

const NODES = process.env.REDIS_CLUSTER_NODES || process.env.TEST_REDIS_CLUSTER_NODES || '';

/** CROSSSLOT and script-routing errors each primary has answered so far. */
async function slotErrors(c: Cluster): Promise<number> {
  let n = 0;
  for (const node of c.nodes('master')) {
    const info = await node.info('errorstats');
    // (a script touching another slot fails with a plain ERR, which ioredis's handshake also
    // produces: those show up as 5xx and error log lines instead, checked below)
    n += Number(/errorstat_CROSSSLOT:count=(\d+)/.exec(info)?.[1] ?? 0);
  }
  return n;
}

async function ok(r: Promise<Response>, want: number, what: string): Promise<Response> {
  const res = await r;
  if (res.status !== want) throw new Error(`${what}: ${res.status} ${await res.text()}`);
  return res;
}

if (!NODES) {
  t.test('Redis Cluster flows', { skip: 'set REDIS_CLUSTER_NODES (or TEST_REDIS_CLUSTER_NODES) to the nodes of `scripts/services.sh cluster-up`' }, async () => undefined);
} else {
  t.test('search, sandbox and rate-limit flows on a Redis Cluster, without a CROSSSLOT', async (t) => {
    const probe = new Cluster(NODES.split(',').map((n) => ({ host: n.split(':')[0]!, port: Number(n.split(':')[1]) })));
    probe.on('error', () => undefined);
    await new Promise((r) => probe.once('ready', r)); // nodes('master') is empty until then
    const errorsBefore = await slotErrors(probe);
    const log: string[] = [];
    t.teardown(() => probe.disconnect());
    const s: TestServer = await serve(t, {
      env: { REDIS_CLUSTER_NODES: NODES, TIERS: 'free=8,pro=600,enterprise=6000', LOG_LEVEL: 'warn', RESULT_CACHE_ENTRIES: '0' },
      logStream: new Writable({ write: (c: Buffer, _e, cb) => (log.push(c.toString()), cb()) }),
    });
    t.ok(s.app.redis instanceof Cluster, 'the server runs ioredis in cluster mode');

    // ---- search ----
    const a = await registerProduction(s, { endpoint: 'https://a.example.com', capabilities: ['print', 'scan'], properties: { color: 'red' }, iot: { deviceClasses: ['sensor'], protocols: ['mqtt'] } });
    const b = await registerProduction(s, { endpoint: 'https://b.example.com', capabilities: ['print'], properties: { color: 'blue' }, deprecated: true });
    const c = await registerProduction(s, { endpoint: 'https://c.example.com', capabilities: ['print', 'scan'], properties: { color: 'red' } });
    t.same(await ids(await ok(s.req('/services?capability=print&capability=scan&property=color:red'), 200, 'intersection')), [a.id, c.id], 'an intersection of three sets');
    const p1 = await ok(s.req('/services?capability=print&limit=2'), 200, 'page 1');
    const next = /<([^>]+)>; rel="next"/.exec(p1.headers.get('link') ?? '')?.[1];
    t.same(await ids(p1), [a.id, b.id]);
    t.same(await ids(await ok(s.req(next!), 200, 'page 2')), [c.id], 'paging through a Link');
    t.same(await ids(await ok(s.req('/services?iotReady=true'), 200, 'iot')), [a.id]);
    t.equal(((await (await ok(s.req('/devices?protocol=mqtt'), 200, 'devices')).json()) as unknown[]).length, 1, 'device query');
    t.equal((await ok(s.req(`/services/${b.id}`), 200, 'one service')).headers.get('deprecation') !== null, true, 'get-service with its deprecation data');
    await ok(s.admin('POST', `/admin/api/services/${b.id}/replacements`, { serviceId: c.id }), 201, 'add candidate');
    const miss = await ok(s.req(`/services/${b.id}/replacements`), 200, 'replacements');
    t.equal(miss.headers.get('x-cache'), 'MISS');
    t.same(await ids(miss), [c.id]);
    t.equal((await ok(s.req(`/services/${b.id}/replacements`), 200, 'replacements again')).headers.get('x-cache'), 'HIT', 'the shared cache lives in the namespace slot');
    await ok(s.admin('PATCH', `/admin/api/services/${c.id}`, { properties: { color: 'green' } }), 200, 'patch');
    t.equal((await ok(s.req(`/services/${b.id}/replacements`), 200, 'after a write')).headers.get('x-cache'), 'MISS', 'a write drops the entry');
    await ok(s.admin('DELETE', `/admin/api/services/${a.id}`), 204, 'delete');
    t.same(await ids(await ok(s.req('/services?capability=scan'), 200, 'after delete')), [c.id]);

    // ---- sandbox ----
    const sb = await createSandbox(s, 'Cluster Sandbox', { lat: 1, lon: 2 });
    const key = { authorization: `Bearer ${sb.apiKey}` };
    const json = { ...key, 'content-type': 'application/json' };
    const sa = (await (await ok(s.req(`/sandbox/${sb.uuid}/services`, { method: 'POST', headers: json, body: '{"endpoint":"https://sa.example.com","capability":"print"}' }), 201, 'sandbox write')).json()) as { id: string };
    t.same(await ids(await ok(s.req('/services?capability=print', { headers: key }), 200, 'keyed search')), [sa.id], 'a key searches its own sandbox');
    t.same(await ids(await ok(s.req(`/sandbox/${sb.uuid}/services`, { headers: key }), 200, 'sandbox list')), [sa.id]);
    await ok(s.req(`/sandbox/${sb.uuid}/services/${sa.id}`, { headers: key }), 200, 'sandbox get');
    await ok(s.req(`/sandbox/${sb.uuid}/dashboard`), 200, 'dashboard');

    // ---- rate limit: free = 8 a minute here; 4 counted so far (the dashboard is public) ----
    let statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await s.req(`/sandbox/${sb.uuid}/services`, { headers: key })).status);
    t.same(statuses, [200, 200, 200, 200, 429, 429], 'the sliding window counts in the sandbox slot');
    const limited = await s.req(`/sandbox/${sb.uuid}/services`, { headers: key });
    t.ok(limited.headers.get('retry-after') && limited.headers.get('ratelimit-policy'), '429 with Retry-After and RateLimit-Policy');
    const poll = (await (await ok(s.req(`/sandbox/${sb.uuid}/poll`), 200, 'poll')).json()) as { total: number; rateLimit: number };
    t.equal(poll.total, 11, 'poll counts every request');
    t.equal(poll.rateLimit, 8);
    await ok(s.admin('POST', `/admin/api/sandboxes/${sb.uuid}/tier`, { tier: 'pro' }), 200, 'tier change');
    statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await s.req(`/sandbox/${sb.uuid}/services`, { headers: key })).status);
    t.same(statuses, [200, 200, 200], 'the new limit applies to the next request');

    // ---- admin session (single keys, no hash tag) ----
    const login = await ok(s.req('/admin/session', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ apiKey: ADMIN_KEY }) }), 200, 'login');
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0]!;
    await ok(s.req('/admin/api/stats', { headers: { cookie } }), 200, 'stats through the session cookie');

    // ---- the index lost (this test's keys only) and rebuilt ----
    const k = s.app.keys;
    const gen = s.app.index.gen!;
    await Promise.all(probe.nodes('master').map(async (node) => {
      for (const pattern of [k.genPattern(gen), k.gen(), k.sandbox('*'), k.sandboxKey('*')]) {
        const keys = await node.keys(pattern);
        await Promise.all(keys.map((x) => node.unlink(x)));
      }
    }));
    await waitFor('rebuilt after the loss', async () => (await s.req('/readyz')).status === 200 && s.app.index.gen !== gen);
    t.same(await ids(await ok(s.req('/services?capability=print'), 200, 'after rebuild')), [b.id, c.id], 'rebuilt from PostgreSQL');
    t.same(await ids(await ok(s.req(`/sandbox/${sb.uuid}/services`, { headers: key }), 200, 'sandbox after rebuild')), [sa.id], 'the sandbox key resolves again');

    // ---- reindex over a live generation: the old one disappears from every primary ----
    const old = s.app.index.gen!;
    // the server's rebuild after the loss is live before it lets its lock go (it switches,
    // then tells the threads, then releases): a rebuild started in between is refused (null)
    await waitFor('the server\'s rebuild released its lock', async () => (await s.app.redis.exists(k.rebuildLock())) === 0);
    const r = await rebuildIndex(s.app.pg, s.app.redis, k, s.cfg.tiers);
    t.ok(r && r.gen !== old, 'reindexed into a new generation');
    await waitFor('the old generation is dropped on every primary', async () => {
      for (const node of probe.nodes('master')) if ((await node.keys(k.genPattern(old))).length) return false;
      return true;
    });
    t.same(await ids(await ok(s.req('/services?capability=print'), 200, 'after reindex')), [b.id, c.id]);

    t.equal(await slotErrors(probe), errorsBefore, 'no CROSSSLOT error on any primary');
    t.same(log.filter((l) => /CROSSSLOT|non local key|different slot/i.test(l)), [], 'none in the server log either');
    t.same(log.filter((l) => /"level":50/.test(l)), [], 'and no error logged at all');
  });
}
