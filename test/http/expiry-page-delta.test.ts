// A page of expiries is one delta for the near caches (health-flip-1.lua: one namespace
// version and one "deltas" message per page, not one per service). A reader node that
// receives it follows the page without reloading; a reader that loses it (a thread hook
// swallows it on purpose) keeps its stale copy until the next delta shows the gap, then drops
// the namespace and reloads: the usual lost-delta path, which shows the loss was real.
import t from 'tap';
import { type TestServer, serve } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import type { Svc } from '../helpers/svc.js';

t.test('an expiry page: followed as one version by a reader that gets it; a reader that loses it recovers through the gap', async (t) => {
  let clock = Date.now();
  const env = { RESULT_CACHE_ENTRIES: '0', NEAR_CHECK_MS: '0' };
  const a = await serve(t, { env, hooks: { leaseNow: () => clock, sweep: false } });
  await a.app.sweeper.stop();
  const lose = { on: false, lost: 0, pages: 0 };
  // a reader node on the writer's database and Redis, each delta message through `delta`
  const reader = (delta: (msg: string, apply: (m: string) => void) => void) => serve(t, { env, on: a, hooks: { sweep: false, delta } });
  const lossy = await reader((msg, apply) => {
    if (lose.on && msg.startsWith('deltas\t')) lose.lost++;
    else apply(msg);
  });
  const clean = await reader((msg, apply) => {
    if (msg.startsWith('deltas\t')) lose.pages++;
    apply(msg);
  });

  const r = await a.admin('POST', '/admin/api/services/batch', { services: Array.from({ length: 40 }, (_, i) => ({ endpoint: `https://pg-${i}.example.com`, capability: 'pagex', ttl: 5 })) });
  t.equal(r.status, 201);
  const leased = ((await r.json()) as { services: Svc[] }).services.map((s) => s.id);
  const other = (await (await a.admin('POST', '/admin/api/services', { endpoint: 'https://pg-other.example.com', capability: 'pagex' })).json()) as Svc;
  const q = '/services?capability=pagex&healthy=true&limit=1000';
  const listed = async (s: TestServer) => ((await (await s.req(q)).json()) as Svc[]).map((x) => x.id).sort();
  const all = [...leased, other.id].sort();
  for (const s of [lossy, clean]) await waitFor('every service on the reader', async () => (await listed(s)).join() === all.join());
  const misses = clean.app.index.near!.stats.setMisses;
  const resets = [lossy, clean].map((s) => s.app.index.near!.stats.resets);

  lose.on = true;
  clock += 6000;
  t.equal(await a.app.sweeper.sweepOnce(), leased.length, 'every lease expired');
  await waitFor('the lossy reader to lose the page', () => lose.lost >= 1);
  await waitFor('the clean reader to get it', () => lose.pages >= 1);
  lose.on = false;
  t.ok(lose.pages < leased.length, `a page message, not one per service (${lose.pages} for ${leased.length} expiries)`);
  t.same(await listed(a), [other.id], 'the writer answers the expiry');
  await waitFor('the clean reader to follow the page', async () => (await listed(clean)).join() === other.id);
  t.equal(clean.app.index.near!.stats.setMisses, misses, 'followed from the page: no set reloaded');
  t.equal(clean.app.index.near!.stats.resets, resets[1], 'and no gap');
  t.same(await listed(lossy), all, 'the reader that lost the page still lists the expired services (the loss was real)');

  // the next write's delta skips the lost version: the lossy reader drops the namespace and reloads
  const p = await a.admin('PATCH', `/admin/api/services/${other.id}`, { properties: { zone: 'z1' } });
  t.equal(p.status, 200);
  await p.body?.cancel();
  await waitFor('the lossy reader to see the gap and reload', async () => (await listed(lossy)).join() === other.id);
  t.ok(lossy.app.index.near!.stats.resets > resets[0]!, 'through the gap: a reset');
});
