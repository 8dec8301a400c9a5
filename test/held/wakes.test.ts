// What wakes a held request, and what does not (contract, "Waiting for a change"): woken by a
// registration, a PATCH, a DELETE, an expiry and a self-reported critical that change its
// answer; not by a heartbeat that changes nothing, a write to another capability, a write
// beyond its page, nor a production write for a sandbox's search. "Not woken" is seen as an
// order of outcomes, never a time: the write that must not wake goes first, one that wakes
// another request held beside it second, and when that one is answered the first is still
// held (a thread handles its deltas in order) and its answer was not even computed again.
import t, { type Test } from 'tap';
import { ids, jsonBody } from '../helpers/checks.js';
import { createSandbox, registerProduction } from '../helpers/server.js';
import { serveOnLeaseClock } from '../helpers/leases.js';
import type { Svc } from '../helpers/svc.js';
import { etagOf, heldCount, holdOn, type Held } from '../helpers/held.js';

const { s, advance, sweep, beat } = await serveOnLeaseClock(t);

/** Hold `path` (its current ETag) for `wait` s, once the server holds `n` in all. */
async function hold(path: string, n: number, wait = 30, h: Record<string, string> = {}): Promise<Held> {
  const held = holdOn(s, path, await etagOf(s, path, h), wait, h);
  await heldCount(s, n);
  return held;
}

async function woken(t: Test, held: Held, what: string): Promise<Response> {
  const r = await held.answer;
  t.equal(r.status, 200, `${what}: woken with a 200`);
  t.equal(r.headers.get('preference-applied'), 'wait=30');
  return r;
}

/**
 * `quiet` must wake nothing held: `held` (on `path`) stays held and its answer is not computed
 * again, as a `probe` capability's request, woken by a write after `quiet`, shows.
 */
async function wakesNothing(t: Test, held: Held, quiet: () => Promise<unknown>, probeCap: string, computedToo = false): Promise<void> {
  await registerProduction(s, { endpoint: `https://${probeCap}-0.example.com`, capabilities: [probeCap] });
  const probe = await hold(`/services?capability=${probeCap}`, s.app.held.size + 1);
  const computed = s.app.held.computed;
  await quiet();
  await registerProduction(s, { endpoint: `https://${probeCap}-1.example.com`, capabilities: [probeCap] });
  await woken(t, probe, 'the probe');
  t.notOk(held.settled(), 'the first is still held after the write that came before the probe\'s');
  if (computedToo) t.equal(s.app.held.computed, computed + 2, 'its answer was computed again (the write is in its sets), and the probe\'s');
  else t.equal(s.app.held.computed, computed + 1, 'and only the probe\'s answer was computed again');
}

t.test('a write to another capability, a write beyond the page, a heartbeat that changes nothing: nothing wakes', async (t) => {
  const a = (await registerProduction(s, { endpoint: 'https://q1.example.com', capabilities: ['quiet'], ttl: 30 })) as unknown as Svc;
  const held = await hold('/services?capability=quiet', 1);
  await wakesNothing(t, held, () => registerProduction(s, { endpoint: 'https://other.example.com', capabilities: ['not-quiet'] }), 'probe-a');
  await wakesNothing(t, held, async () => t.equal((await beat(`/services/${a.id}/heartbeat`, a.heartbeatToken!)).status, 204, 'a heartbeat'), 'probe-b');
  await registerProduction(s, { endpoint: 'https://q2.example.com', capabilities: ['quiet'] });
  await woken(t, held, 'a registration in the set');
  // a third service joins every set of the query, so its first page of one is computed again,
  // but is the same (the same service, the same next link): still held
  const page = await hold('/services?capability=quiet&limit=1', 1);
  await wakesNothing(t, page, () => registerProduction(s, { endpoint: 'https://q3.example.com', capabilities: ['quiet'] }), 'probe-d', true);
  page.abort();
  await heldCount(s, 0);
});

t.test('a registration, a PATCH and a DELETE wake the searches they change', async (t) => {
  const a = await registerProduction(s, { endpoint: 'https://w1.example.com', capabilities: ['wake'] });
  const first = await hold('/services?capability=wake', 1);
  const b = await registerProduction(s, { endpoint: 'https://w2.example.com', capabilities: ['wake'] });
  t.same((await ids(await woken(t, first, 'a registration'))).sort(), [a.id, b.id].sort());
  const held = await hold('/services?capability=wake', 1);
  t.equal((await s.admin('PATCH', `/admin/api/services/${a.id}`, { endpoint: 'https://w1b.example.com' })).status, 200);
  let r = await woken(t, held, 'a PATCH');
  t.ok(((await r.json()) as { endpoint: string }[]).some((x) => x.endpoint.startsWith('https://w1b.example.com')), 'the patched endpoint');
  const held2 = await hold('/services?capability=wake', 1);
  t.equal((await s.admin('DELETE', `/admin/api/services/${b.id}`)).status, 204);
  r = await woken(t, held2, 'a DELETE');
  t.same(await ids(r), [a.id], 'without the deleted service');
  // a PATCH that takes the service out of the query's set wakes it too
  const held3 = await hold('/services?capability=wake', 1);
  t.equal((await s.admin('PATCH', `/admin/api/services/${a.id}`, { capabilities: ['woke'] })).status, 200);
  t.same(await ids(await woken(t, held3, 'a PATCH that leaves the set')), []);
});

t.test('an expiry and a self-reported critical wake a healthy=true search and the service\'s read', async (t) => {
  const live = (await registerProduction(s, { endpoint: 'https://h1.example.com', capabilities: ['hwake'], ttl: 30 })) as unknown as Svc;
  const dies = (await registerProduction(s, { endpoint: 'https://h2.example.com', capabilities: ['hwake'], ttl: 5 })) as unknown as Svc;
  const healthy = await hold('/services?capability=hwake&healthy=true', 1);
  const one = await hold(`/services/${dies.id}`, 2);
  t.equal((await beat(`/services/${live.id}/heartbeat`, live.heartbeatToken!)).status, 204);
  advance(10); // past the ttl of `dies`, within that of `live`
  await sweep();
  t.same(await ids(await woken(t, healthy, 'an expiry')), [live.id], 'the expired service left the healthy answer');
  const doc = (await (await woken(t, one, 'the expired service\'s read')).json()) as Svc;
  t.equal(doc.health.status, 'critical');
  const again = await hold('/services?capability=hwake&healthy=true', 1);
  t.equal((await beat(`/services/${live.id}/heartbeat`, live.heartbeatToken!, { status: 'critical' })).status, 204);
  t.same(await ids(await woken(t, again, 'a self-reported critical')), []);
});

t.test('a sandbox\'s held search is not woken by production writes, and is by its own', async (t) => {
  const sb = await createSandbox(s);
  const base = `/sandbox/${sb.uuid}/services`;
  const h = { authorization: `Bearer ${sb.apiKey}` };
  t.equal((await s.req(base, jsonBody('POST', { endpoint: 'https://sb1.example.com', capabilities: ['iso'] }, sb.apiKey))).status, 201);
  const held = await hold(`${base}?capability=iso`, 1, 30, h);
  await wakesNothing(t, held, () => registerProduction(s, { endpoint: 'https://prod-iso.example.com', capabilities: ['iso'] }), 'probe-c');
  t.equal((await s.req(base, jsonBody('POST', { endpoint: 'https://sb2.example.com', capabilities: ['iso'] }, sb.apiKey))).status, 201);
  t.equal((await ids(await woken(t, held, 'its own write'))).length, 2);
});
