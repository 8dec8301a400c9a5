// A delta that does not come (contract, "Waiting for a change": a change reaches every held
// request): on the writing thread the projector's WriteApplied wakes the held request
// regardless (the fallback after it); on another node the next delta's skipped version has
// every answer of its namespace computed again, and a lost final delta is found by the near
// cache's version check. Deltas are lost on purpose through the thread's test hook
// (compose.ts ThreadHooks.delta).
import t from 'tap';
import { registerProduction, serve } from '../helpers/server.js';
import { etagOf, heldCount, holdOn } from '../helpers/held.js';
import { ids } from '../helpers/checks.js';

t.test('the writing thread wakes its held request without the delta', async (t) => {
  const s = await serve(t, { env: { LEASE_SWEEP_MS: '60000' }, hooks: { delta: () => undefined } });
  await registerProduction(s, { endpoint: 'https://l1.example.com', capabilities: ['lost'] });
  const path = '/services?capability=lost';
  const held = holdOn(s, path, await etagOf(s, path), 30);
  await heldCount(s, 1);
  const two = await registerProduction(s, { endpoint: 'https://l2.example.com', capabilities: ['lost'] });
  const r = await held.answer;
  t.equal(r.status, 200, 'woken: no delta reached this thread, its own write did');
  t.ok((await ids(r)).includes(two.id));
});

t.test('another node that lost a delta finds the gap at the next one and computes its answers again', async (t) => {
  const a = await serve(t, { env: { LEASE_SWEEP_MS: '60000' } });
  let drop = false;
  const b = await serve(t, { on: a, env: { LEASE_SWEEP_MS: '60000' }, hooks: { delta: (msg, apply) => (drop ? undefined : apply(msg)) } });
  await registerProduction(a, { endpoint: 'https://g1.example.com', capabilities: ['gap'] });
  const path = '/services?capability=gap';
  const held = holdOn(b, path, await etagOf(b, path), 30);
  await heldCount(b, 1);
  drop = true;
  const two = await registerProduction(a, { endpoint: 'https://g2.example.com', capabilities: ['gap'] });
  drop = false;
  t.notOk(held.settled(), 'its delta lost: still held');
  // a write elsewhere in the namespace: its delta arrives a version late
  await registerProduction(a, { endpoint: 'https://g3.example.com', capabilities: ['elsewhere'] });
  const r = await held.answer;
  t.equal(r.status, 200, 'woken at the next delta');
  t.ok((await ids(r)).includes(two.id), 'with the write whose delta was lost');
});

t.test('a lost final delta (no write after it): found by the version check, the answer computed again', async (t) => {
  const a = await serve(t, { env: { LEASE_SWEEP_MS: '60000' } });
  let drop = false;
  const b = await serve(t, { on: a, env: { LEASE_SWEEP_MS: '60000', NEAR_CHECK_MS: '100' }, hooks: { delta: (msg, apply) => (drop ? undefined : apply(msg)) } });
  await registerProduction(a, { endpoint: 'https://f1.example.com', capabilities: ['final'] });
  const path = '/services?capability=final';
  const held = holdOn(b, path, await etagOf(b, path), 30);
  await heldCount(b, 1);
  drop = true;
  const two = await registerProduction(a, { endpoint: 'https://f2.example.com', capabilities: ['final'] });
  const r = await held.answer;
  t.equal(r.status, 200, 'woken without another write');
  t.ok((await ids(r)).includes(two.id));
});
