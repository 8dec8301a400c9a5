// The lease sweeper (contract, "Liveness: leases and heartbeats"; issue 23): one sweeper per
// shard, a dead holder's shards taken over; a mass expiry across every shard drained in one
// sweep, a few shards at a time, batch by batch; and after a loss of Redis every lease gets a
// full fresh ttl. Against real Redis and PostgreSQL, deadlines on an injected clock
// (helpers/leases.ts): no test sleeps through a ttl.
import t from 'tap';
import { ids } from '../helpers/checks.js';
import { registerProduction } from '../helpers/server.js';
import { serveOnLeaseClock } from '../helpers/leases.js';
import type { Svc } from '../helpers/svc.js';
import { PRODUCTION } from '../../src/hot/domain/keys.js';
import { rebuildIndex } from '../../src/hot/reindex/rebuild.js';
import { waitFor, sleep } from '../helpers/wait.js';

const { s, now, advance, beat, health, row } = await serveOnLeaseClock(t);

t.test('the sweep lock: one sweeper per shard; a dead holder is taken over', async (t) => {
  const { LeaseSweeper } = await import('../../src/hot/liveness/sweeper.js');
  const { LEASE_SHARDS } = await import('../../src/hot/domain/keys.js');
  const mk = (owner: string) => new LeaseSweeper(s.app.pg, s.app.redis, s.app.keys, s.app.projector, s.app.log, { intervalMs: 1000, lockMs: 60_000, now, owner });
  await s.app.sweeper.stop(); // hand over the test thread's own shards
  const a = mk('node-a');
  const b = mk('node-b');
  await a.sweepOnce();
  await b.sweepOnce();
  t.equal(a.held.size, LEASE_SHARDS, 'the first node took every shard');
  t.equal(b.held.size, 0, 'the second one none while the first is alive');
  const svc = await registerProduction(s, { endpoint: 'https://takeover.example.com', capability: 'takeover', ttl: 5 });
  advance(6);
  await b.sweepOnce();
  t.equal((await health(svc.id)).status, 'passing', 'a node without the lock does not sweep');
  // node a dies: it never sweeps nor releases again, and its locks' TTL runs out (played by
  // Redis expiring them now instead of in a minute)
  for (let i = 0; i < LEASE_SHARDS; i++) await s.app.redis.pexpire(s.app.keys.sweepLock(i), 1);
  await sleep(20);
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
  const mass = new LeaseSweeper(pool, s.app.redis, s.app.keys, s.app.projector, s.app.log, { intervalMs: 60_000, lockMs: 60_000, batch: 20, parallel: 3, now, owner: 'mass', onExpired: (ms) => lags.push(ms) });
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
  const a = await registerProduction(s, { endpoint: 'https://rebuild.example.com', capability: 'rebuild-lease', ttl: 10 });
  const c = await registerProduction(s, { endpoint: 'https://rebuild-c.example.com', capability: 'rebuild-lease', ttl: 10 });
  t.equal((await beat(`/services/${c.id}/heartbeat`, c.heartbeatToken!, { status: 'critical' })).status, 204);
  advance(8);
  // Redis loses everything of this server: index and leases
  const keys = await s.app.redis.keys(s.cfg.redisKeyPrefix + '*');
  for (const k of keys) await s.app.redis.del(k);
  // the server's readiness watcher may notice the loss first and rebuild itself (with the
  // same injected clock): then this call finds the rebuild lock taken, and waits for it
  const r = await rebuildIndex(s.app.pg, s.app.redis, s.app.keys, s.cfg.tiers, { now });
  if (r) await s.app.index.refreshGen();
  await waitFor('the rebuilt index, ready', async () => (await s.app.redis.get(s.app.keys.gen())) && !(await s.app.redis.get(s.app.keys.building())) && s.app.state.ready, 20_000, 25);
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
