// The passes of a lease sweeper (issue 23), against real Redis and PostgreSQL on an injected
// clock (helpers/leases.ts): a started sweeper runs its pass at the next deadline, not after
// its period, and at once when a deadline passed after its last listing; a pass lists each
// shard in growing calls (the oldest deadlines in a small first round, a backlog in full
// batches); and a shard that caught up lists again while another shard of the pass is still
// backlogged. Expiries visible before durable:
// liveness-expiry.test.ts.
import t, { type Test } from 'tap';
import { ids } from '../helpers/checks.js';
import { registerProduction } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { serveOnLeaseClock } from '../helpers/leases.js';
import type { Svc } from '../helpers/svc.js';
import { LEASE_SHARDS } from '../../src/hot/domain/keys.js';
import { LeaseSweeper } from '../../src/hot/liveness/sweeper.js';
import { shardOf } from '../../src/hot/liveness/redis-lease.js';

const { s, now, advance } = await serveOnLeaseClock(t);
await s.app.sweeper.stop(); // the sweepers of these tests hold the shards

const doc = async (id: string) => (await s.req(`/services/${id}`)).text();

t.test('a started sweeper runs its pass at the next deadline, not after its period', async (t) => {
  const a = await registerProduction(s, { endpoint: 'https://next-due.example.com', capability: 'next-due', ttl: 5 });
  // this sweeper's clock runs in real time from 300 ms before the lease's deadline; its
  // period is a minute: only a pass timed by the deadline flips the lease within the wait
  const from = now() + 4700;
  const t0 = performance.now();
  const lags: number[] = [];
  const sweeper = new LeaseSweeper(s.app.pg, s.app.redis, s.app.keys, s.app.projector, s.app.log, { intervalMs: 60_000, lockMs: 60_000, now: () => from + (performance.now() - t0), owner: 'next-due', onExpired: (ms) => lags.push(ms) });
  t.teardown(() => sweeper.stop());
  sweeper.start();
  await waitFor('the expiry, well before the period', async () => JSON.parse(await doc(a.id)).health.status === 'critical', 15_000, 20);
  t.ok(lags.length >= 1, 'seen by the started sweeper');
  t.ok(sweeper.held.size === LEASE_SHARDS, 'the passes held every shard');
  await sweeper.stop();
});

t.test('a deadline passed between the listing of a pass and its look-up of the next one: the next pass runs at once, not after its period', async (t) => {
  const a = await registerProduction(s, { endpoint: 'https://between.example.com', capability: 'between', ttl: 5 });
  const deadline = now() + 5000;
  // the sweeper's clock stands 100 ms before the deadline until the lease's shard is listed,
  // then 50 ms past it: that listing finds nothing due, the look-up after it comes too late
  let clock = deadline - 100;
  const lags: number[] = [];
  const sweeper = new LeaseSweeper(s.app.pg, s.app.redis, s.app.keys, s.app.projector, s.app.log, {
    intervalMs: 60_000,
    lockMs: 60_000,
    now: () => clock,
    owner: 'between',
    onExpired: (ms) => lags.push(ms),
    onList: (shard) => {
      if (shard === shardOf(a.id)) clock = deadline + 50;
    },
  });
  t.teardown(() => sweeper.stop());
  sweeper.start();
  await waitFor('the expiry, well before the period', async () => JSON.parse(await doc(a.id)).health.status === 'critical', 15_000, 20);
  t.same(lags, [50], 'flipped by the pass after, at the clock it stopped at');
  await sweeper.stop();
});

/** 400 services with a 5 s lease, registered in one batch (201 asserted); their ids */
async function leaseBatch(t: Test, prefix: string, capability: string): Promise<string[]> {
  const r = await s.admin('POST', '/admin/api/services/batch', { services: Array.from({ length: 400 }, (_, i) => ({ endpoint: `https://${prefix}-${i}.example.com`, capability, ttl: 5 })) });
  t.equal(r.status, 201);
  return ((await r.json()) as { services: Svc[] }).services.map((x) => x.id);
}

/**
 * A sweeper on the test clock that records each expiry's lag and, per shard in call order,
 * the limit of each lease-sweep call of its first pass (a later pass starts again at the
 * first page: that is not a shard listing again within a pass). `slowMs`: each call first holds the thread that long (a slow
 * Redis), so a backlog of a few calls outlasts the 10 ms a caught-up shard waits before it
 * lists again (without it, on a quick machine every shard could finish within those 10 ms).
 */
function listingSweeper(owner: string, batch: number, firstPage: number, slowMs = 0) {
  const calls = new Map<number, number[]>();
  const lags: number[] = [];
  let passes = 0;
  const sweeper = new LeaseSweeper(s.app.pg, s.app.redis, s.app.keys, s.app.projector, s.app.log, {
    intervalMs: 60_000,
    lockMs: 60_000,
    batch,
    firstPage,
    now,
    owner,
    onExpired: (ms) => lags.push(ms),
    onPass: () => passes++,
    onList: (shard, limit) => {
      if (passes === 0) calls.set(shard, [...(calls.get(shard) ?? []), limit]);
      for (const end = performance.now() + slowMs; performance.now() < end; );
    },
  });
  return { sweeper, calls, lags };
}

t.test('a pass lists each shard in growing calls: the oldest deadlines in a small first round, a backlog in full batches', async (t) => {
  const leased = await leaseBatch(t, 'gp', 'grow-pages');
  const perShard = new Map<number, number>();
  for (const id of leased) perShard.set(shardOf(id), (perShard.get(shardOf(id)) ?? 0) + 1);
  const { sweeper, calls, lags } = listingSweeper('grow-pages', 20, 3);
  advance(6);
  t.equal(await sweeper.sweepOnce(), leased.length, 'every lease expired, each once');
  t.equal(lags.length, leased.length, 'each seen once');
  // per shard: 3, 6, 12, then the batch (20) until a call comes back short
  let checked = 0;
  for (const [shard, n] of perShard) {
    const want: number[] = [];
    for (let size = 3, listed = 0; ; size = Math.min(20, size * 2)) {
      want.push(size);
      listed += size;
      if (listed > n) break;
    }
    if ((calls.get(shard) ?? []).join() === want.join()) checked++;
    else t.same(calls.get(shard), want, `shard ${shard} (${n} due)`);
  }
  t.equal(checked, perShard.size, 'every shard listed in growing calls');
  t.same(await ids(await s.req('/services?capability=grow-pages&healthy=true')), [], 'healthy=true leaves them out');
  await sweeper.stop();
});

t.test('a started sweeper: a shard that caught up lists again while another shard of the pass is still backlogged', async (t) => {
  const leased = await leaseBatch(t, 'cu', 'caught-up');
  const { sweeper, calls, lags } = listingSweeper('caught-up', 4, 1, 2);
  t.teardown(() => sweeper.stop());
  advance(6);
  sweeper.start();
  await waitFor('every expiry visible', () => lags.length >= leased.length, 20_000, 20);
  await sweeper.stop();
  t.equal(lags.length, leased.length, 'each seen once');
  // calls only grow (1, 2, 4, 4, ...) within a shard's backlog; a smaller one after a larger is a poll of a shard that caught up
  const polled = [...calls.values()].filter((l) => l.some((x, i) => i > 0 && x < l[i - 1]!)).length;
  t.ok(polled > 0, `some shard listed again while others were backlogged (${polled} of ${calls.size})`);
});
