// Mass lease expiry (issue 23, deliverable 7's expiry row), against real Redis and
// PostgreSQL on an injected clock (helpers/leases.ts): an expiry is visible in the index at
// the sweep that finds it (health-flip-1.lua) and durable after (liveness/store.ts expireMany,
// one statement per batch); a heartbeat or a write racing it, and registrations while its
// durable writes hold their connections. The durable step is held on purpose through the
// sweeper's pool (a gate on connect()), so that "visible before durable" is observed, not
// assumed. How a started sweeper times and lists its passes: liveness-expiry-passes.test.ts.
import t from 'tap';
import { ids, jsonBody, keyed } from '../helpers/checks.js';
import { createSandbox, registerProduction } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { serveOnLeaseClock } from '../helpers/leases.js';
import type { Svc } from '../helpers/svc.js';
import { LEASE_SHARDS } from '../../src/hot/domain/keys.js';
import { memberSuffixes } from '../../src/hot/domain/keys.js';
import { serializeService } from '../../src/hot/domain/service.js';
import { LeaseSweeper } from '../../src/hot/liveness/sweeper.js';
import { shardOf } from '../../src/hot/liveness/redis-lease.js';
import { leaseRecord } from '../../src/hot/redis/replies.js';
import { loadIndexStates } from '../../src/hot/registry/state.js';

const { s, now, advance } = await serveOnLeaseClock(t);
await s.app.sweeper.stop(); // the sweepers of these tests hold the shards

/** A sweeper whose durable transactions wait at connect() until open() (flips need no connection). */
function gatedSweeper(owner: string, o: { batch?: number; parallel?: number } = {}) {
  let open: () => void = () => undefined;
  let gate: Promise<void> = Promise.resolve();
  let waiting = 0;
  let held = 0;
  let most = 0;
  // the connection is taken first: a held write holds it, as a slow transaction would.
  // (pool.query() calls connect(callback): not a transaction, passed through ungated)
  const connect = async (cb?: unknown) => {
    if (typeof cb === 'function') return s.app.pg.connect(cb as (err: Error | undefined, client: unknown, done: () => void) => void);
    const c = await s.app.pg.connect();
    most = Math.max(most, ++held);
    const release = c.release;
    c.release = (err?: Error | boolean) => {
      held--;
      c.release = release;
      return release.call(c, err);
    };
    waiting++;
    await gate;
    waiting--;
    return c;
  };
  const pool = new Proxy(s.app.pg, { get: (p, k) => (k === 'connect' ? connect : Reflect.get(p, k, p)) });
  const lags: number[] = [];
  const durable: number[] = [];
  const sweeper = new LeaseSweeper(pool, s.app.redis, s.app.keys, s.app.projector, s.app.log, { intervalMs: 60_000, lockMs: 60_000, batch: o.batch ?? 50, parallel: o.parallel ?? 2, now, owner, onExpired: (ms) => lags.push(ms), onDurable: (ms) => durable.push(ms) });
  return {
    sweeper,
    lags,
    durable,
    hold: () => (gate = new Promise<void>((ok) => (open = ok))),
    open: () => open(),
    waiting: () => waiting,
    most: () => most,
  };
}

const pgRows = async (list: string[]) =>
  (await s.app.pg.query<{ id: string; hs: string; crit: string | null; doc: string; members: string }>('SELECT id, health_status AS hs, critical_since::text AS crit, idx_doc AS doc, idx_members AS members FROM services WHERE id = ANY($1)', [list])).rows;
const updates = async (list: string[]) =>
  (await s.app.pg.query<{ service_id: string; n: string }>("SELECT service_id, count(*) AS n FROM change_events WHERE service_id = ANY($1) AND type = 'service.updated' GROUP BY 1", [list])).rows;
const doc = async (id: string) => (await s.req(`/services/${id}`)).text();
const leaseOfId = async (id: string) => leaseRecord((await s.app.redis.hget(s.app.keys.leases(shardOf(id)), id))!, 'test');

t.test('a mass expiry across every shard, production and a sandbox: visible at the sweep, durable after, each exactly once', async (t) => {
  const sb = await createSandbox(s, 'Mass expiry');
  t.equal((await s.admin('POST', `/admin/api/sandboxes/${sb.uuid}/tier`, { tier: 'enterprise' })).status, 200);
  const prod: Svc[] = [];
  for (let b = 0; b < 2; b++) {
    const r = await s.admin('POST', '/admin/api/services/batch', { services: Array.from({ length: 300 }, (_, i) => ({ endpoint: `https://mx-${b}-${i}.example.com`, capability: 'mass-x', ttl: 5, ...(i % 3 ? {} : { iot: { deviceClasses: ['meter'], protocols: ['mqtt'] } }) })) });
    t.equal(r.status, 201);
    prod.push(...((await r.json()) as { services: Svc[] }).services);
  }
  const r = await s.req(`/sandbox/${sb.uuid}/services/batch`, jsonBody('POST', { services: Array.from({ length: 200 }, (_, i) => ({ endpoint: `https://mxs-${i}.example.com`, capability: 'mass-x', ttl: 5 })) }, sb.apiKey));
  t.equal(r.status, 201);
  const sand = ((await r.json()) as { services: Svc[] }).services;
  const bare = await registerProduction(s, { endpoint: 'https://mx-none.example.com', capability: 'mass-x' });
  const later = await registerProduction(s, { endpoint: 'https://mx-later.example.com', capability: 'mass-x', ttl: 3600 });
  const all = [...prod, ...sand];
  const allIds = all.map((x) => x.id);
  t.equal(new Set(all.map((x) => shardOf(x.id))).size, LEASE_SHARDS, 'every shard holds some');
  const search = () => s.req('/services?capability=mass-x');
  const etag0 = (await search()).headers.get('etag')!;

  const g = gatedSweeper('mass-x');
  advance(4);
  t.equal(await g.sweeper.sweepOnce(), 0, 'nothing due before the ttl');
  advance(2);
  g.hold();
  const sweeping = g.sweeper.sweepOnce();
  await waitFor('every expiry is visible', () => g.lags.length >= all.length, 20_000, 20);
  // visible, not yet durable: documents, healthy=true, the lease; PostgreSQL still passing
  t.equal(g.durable.length, 0, 'nothing durable while the gate holds');
  t.ok(g.waiting() > 0, 'the durable write holds');
  t.same(await ids(await s.req('/services?capability=mass-x&healthy=true')), [bare.id, later.id], 'healthy=true leaves every expired one out at once');
  t.same(await ids(await s.req(`/sandbox/${sb.uuid}/services?healthy=true`, keyed(sb.apiKey))), [], 'in the sandbox too');
  const dev = ((await (await s.req('/devices?capability=mass-x&healthy=true')).json()) as { serviceId: string }[]).map((d) => d.serviceId);
  t.same(dev, [], '/devices too');
  t.same(JSON.parse(await doc(prod[0]!.id)).health, { status: 'critical', ttl: 5 }, 'the document says so');
  const etag1 = (await search()).headers.get('etag')!;
  t.not(etag1, etag0, 'the transition changes the ETag');
  t.equal((await pgRows([prod[0]!.id]))[0]!.hs, 'passing', 'PostgreSQL does not have it yet');
  t.same(await updates(allIds), [], 'nor the change feed');

  g.open();
  t.equal(await sweeping, all.length, 'every one committed by the same sweep');
  const rows = await pgRows(allIds);
  t.equal(rows.filter((x) => x.hs === 'critical' && x.crit === String(now())).length, all.length, 'all critical in PostgreSQL, since the sweep');
  const ev = await updates(allIds);
  t.equal(ev.length, all.length, 'a service.updated for each');
  t.ok(ev.every((x) => x.n === '1'), 'exactly one each');
  t.equal(g.durable.length, all.length);
  t.equal(g.lags.length, all.length, 'each seen once');
  t.equal((await search()).headers.get('etag'), etag1, 'the durable write changes no document: the same ETag');
  // the stored index text, the served document and the lease are what the general path makes
  const states = await loadIndexStates(s.app.pg, allIds);
  const byId = new Map(rows.map((x) => [x.id, x]));
  let same = 0;
  const sandIds = new Set(sand.map((x) => x.id));
  for (const x of all) {
    const st = states.get(x.id)!.record!;
    const want = serializeService(st);
    const served = sandIds.has(x.id) ? await (await s.req(`/sandbox/${sb.uuid}/services/${x.id}`, keyed(sb.apiKey))).text() : await doc(x.id);
    if (byId.get(x.id)!.doc === want && byId.get(x.id)!.members === memberSuffixes(st).join('\n') && served === want) same++;
  }
  t.equal(same, all.length, 'PostgreSQL index text, Redis document and the state agree for every one');
  const l = await leaseOfId(sand[7]!.id);
  t.same([l.status, l.criticalSince, l.rev], ['critical', now(), states.get(sand[7]!.id)!.version], 'the lease has the committed revision');
  t.same(await ids(await s.req('/services?capability=mass-x&healthy=true')), [bare.id, later.id]);
  t.equal(JSON.parse(await doc(later.id)).health.status, 'passing', 'a lease not due stays passing');

  advance(30);
  t.equal(await g.sweeper.sweepOnce(), 0, 'nothing due again after the recheck time');
  t.same((await updates(allIds)).filter((x) => x.n !== '1'), [], 'still one event each');
  await g.sweeper.stop();
});

t.test('a heartbeat between the visible flip and the durable write: passing wins, nothing expires', async (t) => {
  const a = await registerProduction(s, { endpoint: 'https://race-hb.example.com', capability: 'race-hb', ttl: 5 });
  const b = await registerProduction(s, { endpoint: 'https://race-hb2.example.com', capability: 'race-hb', ttl: 5 });
  const g = gatedSweeper('race-hb');
  advance(6);
  g.hold();
  const sweeping = g.sweeper.sweepOnce();
  await waitFor('both visible', () => g.lags.length >= 2, 20_000, 20);
  t.equal(JSON.parse(await doc(a.id)).health.status, 'critical', 'visible');
  const beat = await s.req(`/services/${a.id}/heartbeat`, { method: 'PUT', headers: { authorization: `Bearer ${a.heartbeatToken!}` } });
  t.equal(beat.status, 204);
  t.equal(JSON.parse(await doc(a.id)).health.status, 'passing', 'passing right after the 204');
  t.same(await ids(await s.req('/services?capability=race-hb&healthy=true')), [a.id]);
  g.open();
  await sweeping;
  t.equal((await pgRows([a.id]))[0]!.hs, 'passing', 'the expiry made from the older version commits nothing');
  t.equal((await pgRows([b.id]))[0]!.hs, 'critical', 'the other one expires');
  t.same((await updates([a.id, b.id])).map((x) => x.service_id), [b.id], 'one service.updated, for the one that expired');
  t.equal(JSON.parse(await doc(a.id)).health.status, 'passing', 'the index agrees with PostgreSQL');
  t.equal((await leaseOfId(a.id)).status, 'passing', 'and the lease');
  advance(4);
  t.equal(await g.sweeper.sweepOnce(), 0, 'the heartbeat renewed the lease: not due within its ttl');
  advance(2);
  t.equal(await g.sweeper.sweepOnce(), 1, 'a ttl after the heartbeat it expires');
  t.equal((await pgRows([a.id]))[0]!.hs, 'critical');
  await g.sweeper.stop();
});

t.test('a flip whose durable write never came (the node died): finished at the recheck by the next holder', async (t) => {
  const a = await registerProduction(s, { endpoint: 'https://orphan.example.com', capability: 'orphan', ttl: 5 });
  const g = gatedSweeper('orphan-1');
  advance(6);
  g.hold();
  void g.sweeper.sweepOnce();
  await waitFor('visible', () => g.lags.length >= 1, 20_000, 20);
  // the node dies: its locks lapse, its queued write is lost (the gate never opens)
  for (let i = 0; i < LEASE_SHARDS; i++) await s.app.redis.del(s.app.keys.sweepLock(i));
  const next = gatedSweeper('orphan-2');
  t.equal(await next.sweeper.sweepOnce(), 0, 'not due again before the recheck');
  t.equal(JSON.parse(await doc(a.id)).health.status, 'critical', 'still visible');
  advance(31);
  t.equal(await next.sweeper.sweepOnce(), 1, 'the recheck makes it durable');
  t.equal((await pgRows([a.id]))[0]!.hs, 'critical');
  t.same((await updates([a.id])).map((x) => x.n), ['1']);
  t.equal(JSON.parse(await doc(a.id)).health.status, 'critical');
  await next.sweeper.stop();
  // the dead node's write, let go at last, finds nothing left to do
  g.open();
  await g.sweeper.stop();
  t.same((await updates([a.id])).map((x) => x.n), ['1'], 'still one event');
});

t.test('writes during a mass expiry are acknowledged; a PATCH racing the flip stands and Redis agrees with PostgreSQL', async (t) => {
  const r = await s.admin('POST', '/admin/api/services/batch', { services: Array.from({ length: 400 }, (_, i) => ({ endpoint: `https://wx-${i}.example.com`, capability: 'writes-x', ttl: 5 })) });
  const svcs = ((await r.json()) as { services: Svc[] }).services;
  const g = gatedSweeper('writes-x', { batch: 20, parallel: 2 });
  advance(6);
  g.hold();
  const sweeping = g.sweeper.sweepOnce();
  await waitFor('visible', () => g.lags.length >= svcs.length, 20_000, 20);
  // the durable workers hold back: ordinary writes go on through the rest of the pool
  const regs = await Promise.all(Array.from({ length: 20 }, (_, i) => s.admin('POST', '/admin/api/services', { endpoint: `https://wx-new-${i}.example.com`, capability: 'writes-x-new', ttl: 30 })));
  t.same(regs.map((x) => x.status), Array(20).fill(201), 'registrations acknowledged while the expiry holds its connections');
  t.equal(g.waiting(), 2, 'two durable writes held');
  t.ok(g.most() <= 2, `never more connections than LEASE_SWEEP_PARALLEL (${g.most()})`);
  const patched = svcs[3]!;
  const p = await s.admin('PATCH', `/admin/api/services/${patched.id}`, { properties: { during: 'expiry' } });
  t.equal(p.status, 200, 'a PATCH of an expiring service acknowledged');
  g.open();
  t.equal(await sweeping, svcs.length - 1, 'every other one expires');
  const rows = await pgRows(svcs.map((x) => x.id));
  const pdoc = JSON.parse(await doc(patched.id)) as { health: { status: string }; properties: Record<string, string> };
  t.same(pdoc.properties, { during: 'expiry' }, 'the PATCH stands');
  t.equal(pdoc.health.status, rows.find((x) => x.id === patched.id)!.hs, 'its health in the index is PostgreSQL\'s');
  t.equal((await leaseOfId(patched.id)).status, pdoc.health.status, 'and so is its lease');
  t.equal(rows.filter((x) => x.hs === 'critical').length, svcs.length - 1);
  const fresh = await Promise.all(regs.map(async (x) => ((await x.json()) as Svc).id));
  t.same(new Set(await ids(await s.req('/services?capability=writes-x-new&healthy=true'))), new Set(fresh), 'the new ones are there, healthy');
  await g.sweeper.stop();
});
