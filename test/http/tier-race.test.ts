// Tier changes go through the outbox like every other write (issue 15): two changes racing
// leave the later commit's limit in force, and a change whose Redis update did not happen
// is applied by the sweeper. The interleavings are forced with the projector's beforeApply
// hook (a sync held between loading its state and applying it) and a Redis key that makes
// the apply fail (real Redis, no mocks).
import t from 'tap';
import { gate } from '../helpers/interleave.js';
import { applyHook, createSandbox, serve } from '../helpers/server.js';

const TIERS = 'free=60,pro=600,enterprise=6000';

t.test('two tier changes racing: the later commit wins in Redis', async (t) => {
  const hook = applyHook();
  const s = await serve(t, { env: { TIERS, OUTBOX_SWEEP_MS: '600000' }, hooks: hook.hooks });
  const sb = await createSandbox(s);
  let arm = true;
  const loaded = gate();
  const go = gate();
  hook.set(async (ids) => {
    if (!arm || !ids.includes(sb.uuid)) return;
    arm = false;
    loaded.open();
    await go.wait;
  });
  const first = s.admin('POST', `/admin/api/sandboxes/${sb.uuid}/tier`, { tier: 'pro' });
  await loaded.wait; // committed, about to reach Redis
  const second = await s.admin('POST', `/admin/api/sandboxes/${sb.uuid}/tier`, { tier: 'enterprise' });
  t.equal(second.status, 200, 'the second change is acknowledged');
  go.open();
  t.equal((await first).status, 200, 'the first change is acknowledged');
  const meta = await s.app.redis.hgetall(s.app.keys.sandbox(sb.uuid));
  t.match(meta, { tier: 'enterprise', limit: '6000' }, 'Redis has the tier PostgreSQL committed last');
  const r = await s.req(`/sandbox/${sb.uuid}/services`, { headers: { authorization: `Bearer ${sb.apiKey}` } });
  t.equal(r.status, 200);
  t.equal(r.headers.get('ratelimit-policy'), '"sandbox";q=6000;w=60', 'and the limit in force is enterprise\'s');
});

t.test('a tier change whose Redis update failed is applied by the sweeper', async (t) => {
  const s = await serve(t, { env: { TIERS, OUTBOX_SWEEP_MS: '600000' } });
  const sb = await createSandbox(s);
  const key = s.app.keys.sandbox(sb.uuid);
  const saved = key + ':saved'; // same hash tag: same slot
  // the apply meets a key of the wrong type (Redis refuses it), then the old hash comes back:
  // as if the process had died between the commit and the Redis write
  await s.app.redis.rename(key, saved);
  await s.app.redis.set(key, 'not a hash');
  const r = await s.admin('POST', `/admin/api/sandboxes/${sb.uuid}/tier`, { tier: 'pro' });
  t.equal(r.status, 200, 'the change is acknowledged once PostgreSQL committed it');
  await s.app.redis.rename(saved, key);
  t.match(await s.app.redis.hgetall(key), { tier: 'free', limit: '60' }, 'Redis still has the old limit');
  await s.app.projector.sweep(0);
  t.match(await s.app.redis.hgetall(key), { tier: 'pro', limit: '600' }, 'the sweeper applied the committed tier');
  const left = await s.app.pg.query<{ n: string }>('SELECT count(*) AS n FROM outbox');
  t.equal(left.rows[0]!.n, '0', 'and the outbox is empty');
});
