// Leases and heartbeats (contract, "Liveness: leases and heartbeats"; issue 23), against
// real Redis and PostgreSQL. Deadlines run on an injected clock (ThreadHooks.now) and the
// sweeper is driven by hand (sweepOnce): no test sleeps through a ttl.
import t from 'tap';
import { ids, isError, jsonBody, keyed, serve } from '../helpers/checks.js';
import { createSandbox, registerProduction } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { monitorRedis } from '../helpers/redis-monitor.js';
import { PRODUCTION } from '../../src/hot/domain/keys.js';
import { rebuildIndex } from '../../src/hot/index/rebuild.js';

let clock = Date.now();
const s = await serve(t, { hooks: { leaseNow: () => clock, sweep: false } });
const advance = (seconds: number) => (clock += seconds * 1000);
const sweep = () => s.app.sweeper.sweepOnce();

type Svc = { id: string; health: { status: string; ttl: number | null }; heartbeatToken?: string };
const beat = (path: string, token: string, body?: unknown) =>
  s.req(path, { method: 'PUT', headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body) });
const health = async (id: string) => ((await (await s.req(`/services/${id}`)).json()) as Svc).health;
const row = async (id: string) => (await s.app.pg.query<{ version: string; xmin: string; hs: string }>('SELECT version, xmin::text, health_status AS hs FROM services WHERE id = $1', [id])).rows[0];
const events = async (id: string) => (await s.app.pg.query<{ type: string }>('SELECT type FROM change_events WHERE service_id = $1 ORDER BY id', [id])).rows.map((r) => r.type);

t.test('registration with a ttl: passing, a heartbeat token once; without one: unknown, no token', async (t) => {
  const a = (await registerProduction(s, { endpoint: 'https://lease-a.example.com', capability: 'lease-reg', ttl: 30 })) as unknown as Svc;
  t.same(a.health, { status: 'passing', ttl: 30 });
  t.match(a.heartbeatToken, /^prod_hb_[0-9A-Za-z]{38}$/);
  const b = (await registerProduction(s, { endpoint: 'https://lease-b.example.com', capability: 'lease-reg' })) as unknown as Svc;
  t.same(b.health, { status: 'unknown', ttl: null });
  t.notOk('heartbeatToken' in b);
  const got = (await (await s.req(`/services/${a.id}`)).json()) as Svc;
  t.notOk('heartbeatToken' in got, 'the token is shown once, never in the document');
  t.same(got.health, { status: 'passing', ttl: 30 });
  const stored = await s.app.pg.query<{ h: Buffer }>('SELECT hb_token_hash AS h FROM services WHERE id = $1', [a.id]);
  t.equal(stored.rows[0]!.h.length, 32, 'only a sha256 is stored');
  t.notMatch(stored.rows[0]!.h.toString('latin1'), a.heartbeatToken!);
});

t.test('a registration without a lease sends no lease script to Redis; one with a lease does', async (t) => {
  // MONITOR sees every command in the order Redis ran it: once the leased registration's
  // lease-apply shows, one of the earlier registration would have shown before it
  const mon = await monitorRedis(process.env.REDIS_URL!);
  t.teardown(() => mon.close());
  // a line: +<time> [<db> <client>] "evalsha" "<sha>" "<numkeys>" "<key>" ...
  const leaseKey = /"[^"]*lv:\{\d+\}:l"/;
  const leaseCalls = () => mon.lines.filter((l) => /^\+\S+ \[[^\]]*\] "evalsha" /i.test(l) && leaseKey.test(l));
  await new Promise((r) => setTimeout(r, 50));
  const bare = (await registerProduction(s, { endpoint: 'https://no-lease-apply.example.com', capability: 'lease-apply-count' })) as unknown as Svc;
  const leased = (await registerProduction(s, { endpoint: 'https://lease-apply.example.com', capability: 'lease-apply-count', ttl: 30 })) as unknown as Svc;
  await waitFor('the leased registration\'s lease-apply is seen', () => leaseCalls().some((l) => l.includes(leased.id)), 10_000, 20);
  t.same(leaseCalls().filter((l) => l.includes(bare.id)), [], 'no lease script for the service without a lease');
  t.same(await health(leased.id), { status: 'passing', ttl: 30 }, 'the leased one holds its lease');
});

t.test('ttl and deregisterAfter are validated: 400, nothing written', async (t) => {
  for (const bad of [{ ttl: 4 }, { ttl: 86401 }, { ttl: '30' }, { ttl: 5.5 }, { ttl: 30, deregisterAfter: 59 }, { ttl: 30, deregisterAfter: 604801 }]) {
    await isError(t, await s.admin('POST', '/admin/api/services', { endpoint: 'https://bad-lease.example.com', capability: 'bad-lease', ...bad }), 400, 'VALIDATION_FAILED', JSON.stringify(bad));
  }
  t.same(await ids(await s.req('/services?capability=bad-lease')), []);
});

t.test('a heartbeat that changes nothing: 204, no PostgreSQL row touched, same document and ETag', async (t) => {
  const a = (await registerProduction(s, { endpoint: 'https://quiet.example.com', capability: 'quiet', ttl: 10 })) as unknown as Svc;
  const first = await s.req('/services?capability=quiet&healthy=true');
  const etag = first.headers.get('etag')!;
  const doc = await (await s.req(`/services/${a.id}`)).text();
  const before = await row(a.id);
  const evs = await events(a.id);
  for (let i = 0; i < 5; i++) {
    advance(8); // within the ttl each time, 40 s in all: only the heartbeats keep it passing
    t.equal((await beat(`/services/${a.id}/heartbeat`, a.heartbeatToken!)).status, 204);
    await sweep();
  }
  t.equal((await beat(`/services/${a.id}/heartbeat`, a.heartbeatToken!, { status: 'passing' })).status, 204, 'an explicit passing body');
  t.same(await row(a.id), before, 'same version and xmin: no row was written');
  t.same(await events(a.id), evs, 'no change event');
  t.equal(await (await s.req(`/services/${a.id}`)).text(), doc, 'same document');
  const again = await s.req('/services?capability=quiet&healthy=true', { headers: { 'if-none-match': etag } });
  t.equal(again.status, 304, 'same ETag: the cached page still holds');
});

t.test('expiry: critical after ttl without a heartbeat (a durable write and an event), passing again on the next heartbeat', async (t) => {
  const a = (await registerProduction(s, { endpoint: 'https://expire.example.com', capability: 'expire', ttl: 5 })) as unknown as Svc;
  const etag = (await s.req('/services?capability=expire')).headers.get('etag')!;
  advance(4);
  await sweep();
  t.equal((await health(a.id)).status, 'passing', 'not before the deadline');
  advance(2);
  await sweep();
  t.same(await health(a.id), { status: 'critical', ttl: 5 });
  t.equal((await row(a.id))!.hs, 'critical', 'in PostgreSQL');
  t.same((await events(a.id)).slice(-1), ['service.updated']);
  const r = await s.req('/services?capability=expire', { headers: { 'if-none-match': etag } });
  t.equal(r.status, 200, 'a transition changes the ETag');
  t.same(await ids(await s.req('/services?capability=expire&healthy=true')), [], 'healthy=true leaves it out');
  t.same(await ids(await s.req('/services?capability=expire')), [a.id], 'without healthy it stays');

  t.equal((await beat(`/services/${a.id}/heartbeat`, a.heartbeatToken!)).status, 204);
  t.same(await health(a.id), { status: 'passing', ttl: 5 }, 'visible right after the 204');
  t.same(await ids(await s.req('/services?capability=expire&healthy=true')), [a.id]);
  advance(3);
  await sweep();
  t.equal((await health(a.id)).status, 'passing', 'the heartbeat renewed the lease');
});

t.test('a heartbeat reporting critical, then passing', async (t) => {
  const a = (await registerProduction(s, { endpoint: 'https://self.example.com', capability: 'self-report', ttl: 60 })) as unknown as Svc;
  t.equal((await beat(`/services/${a.id}/heartbeat`, a.heartbeatToken!, { status: 'critical' })).status, 204);
  t.same(await health(a.id), { status: 'critical', ttl: 60 });
  const v = (await row(a.id))!.version;
  t.equal((await beat(`/services/${a.id}/heartbeat`, a.heartbeatToken!, { status: 'critical' })).status, 204);
  t.equal((await row(a.id))!.version, v, 'critical again changes nothing');
  t.equal((await beat(`/services/${a.id}/heartbeat`, a.heartbeatToken!)).status, 204);
  t.same(await health(a.id), { status: 'passing', ttl: 60 });
  await isError(t, await beat(`/services/${a.id}/heartbeat`, a.heartbeatToken!, { status: 'dead' }), 400, 'VALIDATION_FAILED');
  await isError(t, await beat(`/services/${a.id}/heartbeat`, a.heartbeatToken!, { status: 'critical', x: 1 }), 400, 'VALIDATION_FAILED');
});

t.test('401 for every credential but the service own token, and nothing changes', async (t) => {
  const sb = await createSandbox(s, 'Beats');
  const a = (await registerProduction(s, { endpoint: 'https://guard.example.com', capability: 'guard', ttl: 5 })) as unknown as Svc;
  const b = (await registerProduction(s, { endpoint: 'https://guard2.example.com', capability: 'guard', ttl: 5 })) as unknown as Svc;
  const r = await s.req(`/sandbox/${sb.uuid}/services`, jsonBody('POST', { endpoint: 'https://sbguard.example.com', capability: 'guard', ttl: 5 }, sb.apiKey));
  t.equal(r.status, 201);
  const c = (await r.json()) as Svc;
  t.match(c.heartbeatToken, /^beats_hb_[0-9A-Za-z]{38}$/, "a sandbox token carries the sandbox key's prefix");
  const forged = a.heartbeatToken!.slice(0, -1) + (a.heartbeatToken!.endsWith('A') ? 'B' : 'A');
  const creds = [sb.apiKey, b.heartbeatToken!, c.heartbeatToken!, forged, 'prod_hb_x', ''];
  const before = await row(a.id);
  for (const cred of creds) {
    const res = await s.req(`/services/${a.id}/heartbeat`, { method: 'PUT', headers: cred ? { authorization: `Bearer ${cred}` } : {} });
    await isError(t, res, 401, 'UNAUTHORIZED', cred.slice(0, 12));
  }
  await isError(t, await beat(`/sandbox/${sb.uuid}/services/${a.id}/heartbeat`, a.heartbeatToken!), 401, 'UNAUTHORIZED', 'a production token under a sandbox path');
  await isError(t, await beat(`/services/${c.id}/heartbeat`, c.heartbeatToken!), 401, 'UNAUTHORIZED', 'a sandbox token under the production path');
  await isError(t, await beat(`/services/nosuchservice/heartbeat`, a.heartbeatToken!), 401, 'UNAUTHORIZED', 'an unknown id');
  t.same(await row(a.id), before);
  advance(6);
  await sweep();
  t.equal((await health(a.id)).status, 'critical', 'none of them renewed the lease');
  // the sandbox's own heartbeat works and counts against its rate limit
  const poll = async () => ((await (await s.req(`/sandbox/${sb.uuid}/poll`)).json()) as { total: number }).total;
  const n0 = await poll();
  const ok = await beat(`/sandbox/${sb.uuid}/services/${c.id}/heartbeat`, c.heartbeatToken!);
  t.equal(ok.status, 204);
  t.match(ok.headers.get('ratelimit') ?? '', /"sandbox";r=\d+/);
  t.equal(await poll(), n0 + 1, 'counted');
  const sbDoc = (await (await s.req(`/sandbox/${sb.uuid}/services/${c.id}`, keyed(sb.apiKey))).json()) as Svc;
  t.same(sbDoc.health, { status: 'passing', ttl: 5 }, 'renewed (and turned passing again after the expiry)');
});

t.test('token rotation: the new token works, the old one is refused', async (t) => {
  const a = (await registerProduction(s, { endpoint: 'https://rotate.example.com', capability: 'rotate', ttl: 30 })) as unknown as Svc;
  const r = await s.admin('POST', `/admin/api/services/${a.id}/heartbeat-token`);
  t.equal(r.status, 201);
  const { heartbeatToken } = (await r.json()) as { heartbeatToken: string };
  t.match(heartbeatToken, /^prod_hb_/);
  t.not(heartbeatToken, a.heartbeatToken);
  await isError(t, await beat(`/services/${a.id}/heartbeat`, a.heartbeatToken!), 401, 'UNAUTHORIZED', 'old token');
  t.equal((await beat(`/services/${a.id}/heartbeat`, heartbeatToken)).status, 204, 'new token');
  const plain = await registerProduction(s, { endpoint: 'https://rotate2.example.com', capability: 'rotate' });
  await isError(t, await s.admin('POST', `/admin/api/services/${plain.id}/heartbeat-token`), 409, 'CONFLICT', 'no lease, no token');
  await isError(t, await s.admin('POST', `/admin/api/services/nosuch/heartbeat-token`), 404, 'NOT_FOUND');
  const sb = await createSandbox(s, 'Rotate');
  const c = (await (await s.req(`/sandbox/${sb.uuid}/services`, jsonBody('POST', { endpoint: 'https://sbrot.example.com', capability: 'rotate', ttl: 30 }, sb.apiKey))).json()) as Svc;
  await isError(t, await s.req(`/sandbox/${sb.uuid}/services/${c.id}/heartbeat-token`, { method: 'POST' }), 401, 'UNAUTHORIZED', 'the sandbox key is required');
  const r2 = await s.req(`/sandbox/${sb.uuid}/services/${c.id}/heartbeat-token`, { method: 'POST', headers: { authorization: `Bearer ${sb.apiKey}` } });
  t.equal(r2.status, 201);
  const tok2 = ((await r2.json()) as { heartbeatToken: string }).heartbeatToken;
  t.match(tok2, /^rotate_hb_/);
  await isError(t, await beat(`/sandbox/${sb.uuid}/services/${c.id}/heartbeat`, c.heartbeatToken!), 401, 'UNAUTHORIZED');
  t.equal((await beat(`/sandbox/${sb.uuid}/services/${c.id}/heartbeat`, tok2)).status, 204);
});

t.test('PATCH: "ttl": null drops the lease, a ttl starts one with a token', async (t) => {
  const a = await registerProduction(s, { endpoint: 'https://patch-lease.example.com', capability: 'patch-lease' });
  const p = await s.admin('PATCH', `/admin/api/services/${a.id}`, { ttl: 20, deregisterAfter: 120 });
  t.equal(p.status, 200);
  const pb = (await p.json()) as Svc;
  t.same(pb.health, { status: 'passing', ttl: 20 });
  t.match(pb.heartbeatToken, /^prod_hb_/);
  t.equal((await beat(`/services/${a.id}/heartbeat`, pb.heartbeatToken!)).status, 204);
  const p2 = (await (await s.admin('PATCH', `/admin/api/services/${a.id}`, { ttl: 30 })).json()) as Svc;
  t.same(p2.health, { status: 'passing', ttl: 30 });
  t.notOk('heartbeatToken' in p2, 'a lease that has a token keeps it');
  const p3 = (await (await s.admin('PATCH', `/admin/api/services/${a.id}`, { ttl: null })).json()) as Svc;
  t.same(p3.health, { status: 'unknown', ttl: null });
  await isError(t, await beat(`/services/${a.id}/heartbeat`, pb.heartbeatToken!), 401, 'UNAUTHORIZED', 'no lease, no heartbeat');
  advance(100);
  await sweep();
  t.same(await health(a.id), { status: 'unknown', ttl: null }, 'nothing expires');
});

t.test('deregisterAfter: a service critical that long is deleted as by DELETE', async (t) => {
  const a = (await registerProduction(s, { endpoint: 'https://dereg.example.com', capability: 'dereg', ttl: 5, deregisterAfter: 60 })) as unknown as Svc;
  const lister = await registerProduction(s, { endpoint: 'https://lister.example.com', capability: 'dereg-lister', deprecated: true });
  t.equal((await s.admin('POST', `/admin/api/services/${lister.id}/replacements`, { serviceId: a.id })).status, 201);
  advance(6);
  await sweep();
  t.equal((await health(a.id)).status, 'critical');
  advance(59);
  await sweep();
  t.equal((await s.req(`/services/${a.id}`)).status, 200, 'not before deregisterAfter');
  advance(2);
  await sweep();
  await isError(t, await s.req(`/services/${a.id}`), 404, 'NOT_FOUND', 'deleted');
  t.same((await events(a.id)).slice(-1), ['service.deleted']);
  t.same(await (await s.req(`/services/${lister.id}/replacements`)).json(), [], 'it left the replacement list');
  const b = (await registerProduction(s, { endpoint: 'https://dereg2.example.com', capability: 'dereg', ttl: 5, deregisterAfter: 60 })) as unknown as Svc;
  advance(6);
  await sweep();
  advance(30);
  t.equal((await beat(`/services/${b.id}/heartbeat`, b.heartbeatToken!)).status, 204, 'back to passing');
  advance(40);
  await sweep();
  t.equal((await s.req(`/services/${b.id}`)).status, 200, 'a service that came back is not deleted');
});

t.test('healthy=true on /services, /sandbox/{uuid}/services and /devices; canonical only as true', async (t) => {
  const iot = { deviceClasses: ['meter'], protocols: ['mqtt'] };
  const live = (await registerProduction(s, { endpoint: 'https://h-live.example.com', capability: 'hsearch', ttl: 30, iot })) as unknown as Svc;
  const dead = (await registerProduction(s, { endpoint: 'https://h-dead.example.com', capability: 'hsearch', ttl: 5, iot })) as unknown as Svc;
  const none = await registerProduction(s, { endpoint: 'https://h-none.example.com', capability: 'hsearch', iot });
  const sb = await createSandbox(s, 'Healthy');
  const post = async (body: unknown) => (await (await s.req(`/sandbox/${sb.uuid}/services`, jsonBody('POST', body, sb.apiKey))).json()) as Svc;
  const sLive = await post({ endpoint: 'https://sh-live.example.com', capability: 'hsearch', ttl: 30 });
  const sDead = await post({ endpoint: 'https://sh-dead.example.com', capability: 'hsearch', ttl: 5 });
  advance(6);
  await sweep();
  t.same(new Set(await ids(await s.req('/services?capability=hsearch&healthy=true'))), new Set([live.id, none.id]), 'unknown stays in, critical goes');
  t.same(new Set(await ids(await s.req('/services?capability=hsearch'))), new Set([live.id, dead.id, none.id]));
  t.same(new Set(await ids(await s.req('/services?healthy=true&iotReady=true'))).has(dead.id), false);
  t.same(new Set(await ids(await s.req(`/sandbox/${sb.uuid}/services?capability=hsearch&healthy=true`, keyed(sb.apiKey)))), new Set([sLive.id]));
  t.same(new Set(await ids(await s.req(`/sandbox/${sb.uuid}/services?healthy=true`, keyed(sb.apiKey)))), new Set([sLive.id]));
  t.same(new Set(await ids(await s.req(`/sandbox/${sb.uuid}/services`, keyed(sb.apiKey)))), new Set([sLive.id, sDead.id]));
  const dev = async (q: string) => new Set(((await (await s.req('/devices' + q)).json()) as { serviceId: string }[]).map((d) => d.serviceId));
  t.same(await dev('?capability=hsearch&healthy=true'), new Set([live.id, none.id]));
  t.same(await dev('?capability=hsearch'), new Set([live.id, dead.id, none.id]));
  // canonical: kept only as true (any case), dropped otherwise
  const r1 = await s.req('/services?healthy=TRUE&capability=hsearch');
  t.equal(r1.status, 302);
  t.equal(r1.headers.get('location'), '/services?capability=hsearch&healthy=true');
  const r2 = await s.req('/services?capability=hsearch&healthy=false');
  t.equal(r2.status, 302);
  t.equal(r2.headers.get('location'), '/services?capability=hsearch');
  const r3 = await s.req('/devices?healthy=yes');
  t.equal(r3.status, 302);
  t.equal(r3.headers.get('location'), '/devices');
  await isError(t, await s.req('/services?healthy=true&limit=0'), 400, undefined, 'a canonical query is still validated');
});

t.test('the sweep lock: one sweeper per shard; a dead holder is taken over', async (t) => {
  const { LeaseSweeper } = await import('../../src/hot/liveness/sweeper.js');
  const { LEASE_SHARDS } = await import('../../src/hot/domain/keys.js');
  const mk = (owner: string) => new LeaseSweeper(s.app.pg, s.app.redis, s.app.keys, s.app.projector, s.app.log, { intervalMs: 1000, lockMs: 60_000, now: () => clock, owner });
  await s.app.sweeper.stop(); // hand over the test thread's own shards
  const a = mk('node-a');
  const b = mk('node-b');
  await a.sweepOnce();
  await b.sweepOnce();
  t.equal(a.held.size, LEASE_SHARDS, 'the first node took every shard');
  t.equal(b.held.size, 0, 'the second one none while the first is alive');
  const svc = (await registerProduction(s, { endpoint: 'https://takeover.example.com', capability: 'takeover', ttl: 5 })) as unknown as Svc;
  advance(6);
  await b.sweepOnce();
  t.equal((await health(svc.id)).status, 'passing', 'a node without the lock does not sweep');
  // node a dies: it never sweeps nor releases again, and its locks' TTL runs out (played by
  // Redis expiring them now instead of in a minute)
  for (let i = 0; i < LEASE_SHARDS; i++) await s.app.redis.pexpire(s.app.keys.sweepLock(i), 1);
  await new Promise((r) => setTimeout(r, 20));
  await b.sweepOnce();
  t.equal(b.held.size, LEASE_SHARDS, 'the second node took every shard over');
  t.equal((await health(svc.id)).status, 'critical', 'and swept them');
  await b.stop();
});

t.test('a mass expiry across every shard: drained in one sweep, a few shards at a time, batch by batch', async (t) => {
  const { LeaseSweeper } = await import('../../src/hot/liveness/sweeper.js');
  const { shardOf } = await import('../../src/hot/liveness/redis-lease.js');
  const { LEASE_SHARDS } = await import('../../src/hot/domain/keys.js');
  await s.app.sweeper.stop(); // hand its shards over to the sweeper of this test
  const svcs: Svc[] = [];
  for (let b = 0; b < 2; b++) {
    const body = { services: Array.from({ length: 600 }, (_, i) => ({ endpoint: `https://mass-${b}-${i}.example.com`, capability: 'mass-expiry', ttl: 5 })) };
    const r = await s.admin('POST', '/admin/api/services/batch', body);
    t.equal(r.status, 201);
    svcs.push(...((await r.json()) as { services: Svc[] }).services);
  }
  const perShard = new Map<number, number>();
  for (const x of svcs) perShard.set(shardOf(x.id), (perShard.get(shardOf(x.id)) ?? 0) + 1);
  t.equal(perShard.size, LEASE_SHARDS, 'every shard holds some');
  t.ok(Math.min(...perShard.values()) > 20, 'each more than one batch of 20');
  // the sweeper's PostgreSQL connections, counted while held
  let inUse = 0;
  let most = 0;
  const connect = async () => {
    const c = await s.app.pg.connect();
    inUse++;
    most = Math.max(most, inUse);
    const release = c.release;
    c.release = (err?: Error | boolean) => {
      inUse--;
      c.release = release;
      return release.call(c, err);
    };
    return c;
  };
  const pool = new Proxy(s.app.pg, { get: (p, k) => (k === 'connect' ? connect : Reflect.get(p, k, p)) });
  const lags: number[] = [];
  const mass = new LeaseSweeper(pool, s.app.redis, s.app.keys, s.app.projector, s.app.log, { intervalMs: 60_000, lockMs: 60_000, batch: 20, parallel: 3, now: () => clock, owner: 'mass', onExpired: (ms) => lags.push(ms) });
  advance(4);
  t.equal(await mass.sweepOnce(), 0, 'nothing due before the ttl');
  advance(2);
  t.ok((await mass.sweepOnce()) >= svcs.length, 'one sweep expires all of them, not one batch per shard');
  t.equal(mass.held.size, LEASE_SHARDS);
  t.ok(most <= 3, `at most 3 connections at once (${most})`);
  t.ok(most >= 2, `shards swept concurrently (${most})`);
  t.ok(lags.length >= svcs.length);
  const hs = await s.app.pg.query<{ n: string }>("SELECT count(*) AS n FROM services WHERE id = ANY($1) AND health_status = 'critical'", [svcs.map((x) => x.id)]);
  t.equal(Number(hs.rows[0]!.n), svcs.length, 'all critical in PostgreSQL');
  const ev = await s.app.pg.query<{ n: string }>("SELECT count(*) AS n FROM change_events WHERE service_id = ANY($1) AND type = 'service.updated'", [svcs.map((x) => x.id)]);
  t.equal(Number(ev.rows[0]!.n), svcs.length, 'one service.updated each');
  t.same(await ids(await s.req('/services?capability=mass-expiry&healthy=true')), [], 'healthy=true leaves every one out');
  for (const x of [svcs[0]!, svcs[599]!, svcs[1199]!]) t.same(await health(x.id), { status: 'critical', ttl: 5 }, 'the document says so');
  // the index holds the committed versions: a heartbeat turns one back (the lease record in
  // Redis carries the state the transaction committed)
  t.equal((await beat(`/services/${svcs[7]!.id}/heartbeat`, svcs[7]!.heartbeatToken!)).status, 204);
  t.same(await health(svcs[7]!.id), { status: 'passing', ttl: 5 });
  t.equal(await mass.sweepOnce(), 0, 'nothing left due');
  await mass.stop();
});

t.test('after a loss of Redis, every lease gets a full fresh ttl', async (t) => {
  const a = (await registerProduction(s, { endpoint: 'https://rebuild.example.com', capability: 'rebuild-lease', ttl: 10 })) as unknown as Svc;
  const c = (await registerProduction(s, { endpoint: 'https://rebuild-c.example.com', capability: 'rebuild-lease', ttl: 10 })) as unknown as Svc;
  t.equal((await beat(`/services/${c.id}/heartbeat`, c.heartbeatToken!, { status: 'critical' })).status, 204);
  advance(8);
  // Redis loses everything of this server: index and leases
  const keys = await s.app.redis.keys(s.cfg.redisKeyPrefix + '*');
  for (const k of keys) await s.app.redis.del(k);
  // the server's readiness watcher may notice the loss first and rebuild itself (with the
  // same injected clock): then this call finds the rebuild lock taken, and waits for it
  const r = await rebuildIndex(s.app.pg, s.app.redis, s.app.keys, s.cfg.tiers, undefined, undefined, () => clock);
  if (r) await s.app.index.refreshGen();
  for (let i = 0; i < 400 && !((await s.app.redis.get(s.app.keys.gen())) && !(await s.app.redis.get(s.app.keys.building())) && s.app.state.ready); i++) await new Promise((res) => setTimeout(res, 25));
  t.ok(await s.app.redis.get(s.app.keys.gen()), 'rebuilt');
  advance(5); // past the old deadline, within a fresh ttl
  await s.app.sweeper.sweepOnce();
  t.equal((await health(a.id)).status, 'passing', 'no false critical after the rebuild');
  t.equal((await health(c.id)).status, 'critical', 'a critical service stays critical (PostgreSQL says so)');
  t.equal((await beat(`/services/${a.id}/heartbeat`, a.heartbeatToken!)).status, 204, 'its token still works');
  advance(11);
  await s.app.sweeper.sweepOnce();
  t.equal((await health(a.id)).status, 'critical', 'and it expires a fresh ttl later');
  t.equal((await row(a.id))!.hs, 'critical');
  t.equal(PRODUCTION, 'production');
});

t.test('dashboard: global statistics and sandbox detail count services per health status', async (t) => {
  type H = Record<'passing' | 'critical' | 'unknown', { production: number; sandboxes: number }>;
  const stats = async () => ((await (await s.admin('GET', '/admin/api/stats')).json()) as { health: H }).health;
  const before = await stats();
  const sb = await createSandbox(s, 'Counts');
  const post = async (body: Record<string, unknown>) => (await (await s.req(`/sandbox/${sb.uuid}/services`, jsonBody('POST', { endpoint: 'https://count.example.com', capability: 'count', ...body }, sb.apiKey))).json()) as Svc;
  await post({ ttl: 60 });
  await post({ ttl: 60 });
  const c = await post({ ttl: 60 });
  await post({});
  t.equal((await beat(`/sandbox/${sb.uuid}/services/${c.id}/heartbeat`, c.heartbeatToken!, { status: 'critical' })).status, 204);
  await registerProduction(s, { endpoint: 'https://count-p.example.com', capability: 'count', ttl: 60 });
  const d = (await (await s.admin('GET', `/admin/api/sandboxes/${sb.uuid}`)).json()) as { health: Record<string, number> };
  t.same(d.health, { passing: 2, critical: 1, unknown: 1 }, 'sandbox detail');
  const after = await stats();
  t.same(
    { passing: after.passing.sandboxes - before.passing.sandboxes, critical: after.critical.sandboxes - before.critical.sandboxes, unknown: after.unknown.sandboxes - before.unknown.sandboxes },
    { passing: 2, critical: 1, unknown: 1 },
    'global statistics, sandboxes',
  );
  t.equal(after.passing.production - before.passing.production, 1, 'global statistics, production');
  const m = await (await s.metrics()).text();
  t.match(m, /registry_heartbeats_total\{result="renewed"\} [1-9]/, 'heartbeat metrics');
  t.match(m, /registry_health_transitions_total\{to="critical",cause="expiry"\} [1-9]/, 'transition metrics');
  t.match(m, /registry_lease_expiry_lag_seconds_count [1-9]/, 'sweeper lag metric');
  t.match(m, /registry_leased_services [1-9]/, 'leased services gauge');
});
