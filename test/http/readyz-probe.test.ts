// GET /readyz under a flood and under a slow Redis. Its index check (is the live
// generation's marker still in Redis?) is shared per thread: a flood of /readyz costs Redis
// at most one EXISTS per 100 ms, not one per request. A check that Redis answers too late
// defers to the watchers' view instead of reading "not ready": one slow answer on a loaded
// machine does not take a node out of its load balancer (a lost index still reads 503 at
// once: test/redis/index-loss.test.ts; Redis really away: test/redis/outage.test.ts).
import t from 'tap';
import { Redis } from 'ioredis';
import { serve } from '../helpers/server.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { startRedis } from '../helpers/redis-server.js';
import { startProxy } from '../helpers/tcp-proxy.js';

/** calls of `cmd` Redis has served so far (INFO commandstats) */
async function calls(r: Redis, cmd: string): Promise<number> {
  const info = await r.info('commandstats');
  return Number(new RegExp(`cmdstat_${cmd}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
}

t.test('a flood of /readyz is not a flood of Redis commands; a late Redis answer defers to the watchers', async (t) => {
  // a Redis of its own, behind a proxy: its command counts are this test's, and the proxy
  // can hold its bytes for a moment
  const redis = await startRedis();
  const proxy = await startProxy(redis.port);
  const direct = new Redis({ port: redis.port, host: '127.0.0.1', lazyConnect: true });
  t.teardown(async () => {
    direct.disconnect();
    await proxy.close();
    await redis.kill();
  });
  const s = await serve(t, { through: { redis: proxy } });
  await waitFor('ready', async () => (await s.req('/readyz')).status === 200);

  const FLOOD = 400;
  const before = await calls(direct, 'exists');
  const t0 = performance.now();
  const answers = await Promise.all(Array.from({ length: FLOOD }, () => s.req('/readyz').then((r) => r.status)));
  const ms = performance.now() - t0;
  const used = (await calls(direct, 'exists')) - before;
  t.same(new Set(answers), new Set([200]), `all ${FLOOD} answers 200`);
  // the shared check: one per 100 ms of the flood, plus the watchers' own rounds (every
  // 500 ms, one EXISTS each); unshared it is one per request
  const bound = Math.ceil(ms / 100) + 2 + 2 * Math.ceil(ms / 500);
  t.ok(used <= bound && used < FLOOD / 4, `Redis EXISTS during ${FLOOD} /readyz in ${ms.toFixed(0)} ms: ${used} (bound ${bound})`);

  // Redis holds every byte for 1.4 s: the check gives up after 1 s, the watchers (2 s bound)
  // still count Redis as up, so the node stays ready; then Redis passes again
  await sleep(150); // past the reuse window of the flood's last check
  await proxy.set('blackhole');
  const held = s.req('/readyz');
  await sleep(1400);
  await proxy.set('pass');
  const r = await held;
  t.equal(r.status, 200, 'a check Redis answered too late does not read "not ready"');
  // reads are served: from the index, or — when a loaded machine let a watcher's own probe
  // (2 s bound) run past the 1.4 s hold too — from PostgreSQL; never from nowhere
  const body = (await r.json()) as { reads: string };
  t.ok(body.reads === 'index' || body.reads === 'postgres', JSON.stringify(body));
});
