// Leases (contract, "Liveness: leases and heartbeats"; issue 23): how a service gets one and
// loses it. A registration with a ttl gets a lease and a heartbeat token shown once, one
// without sends no lease script to Redis; ttl and deregisterAfter are validated; a PATCH
// starts or drops a lease. Against real Redis and PostgreSQL, deadlines on an injected clock
// (helpers/leases.ts): no test sleeps through a ttl.
import t from 'tap';
import { ids, isError } from '../helpers/checks.js';
import { registerProduction } from '../helpers/server.js';
import { waitFor, sleep } from '../helpers/wait.js';
import { monitorRedis } from '../helpers/redis-monitor.js';
import { serveOnLeaseClock } from '../helpers/leases.js';
import type { Svc } from '../helpers/svc.js';

const { s, advance, sweep, beat, health } = await serveOnLeaseClock(t);

t.test('registration with a ttl: passing, a heartbeat token once; without one: unknown, no token', async (t) => {
  const a = await registerProduction(s, { endpoint: 'https://lease-a.example.com', capability: 'lease-reg', ttl: 30 });
  t.same(a.health, { status: 'passing', ttl: 30 });
  t.match(a.heartbeatToken, /^prod_hb_[0-9A-Za-z]{38}$/);
  const b = await registerProduction(s, { endpoint: 'https://lease-b.example.com', capability: 'lease-reg' });
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
  await sleep(50);
  const bare = await registerProduction(s, { endpoint: 'https://no-lease-apply.example.com', capability: 'lease-apply-count' });
  const leased = await registerProduction(s, { endpoint: 'https://lease-apply.example.com', capability: 'lease-apply-count', ttl: 30 });
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
