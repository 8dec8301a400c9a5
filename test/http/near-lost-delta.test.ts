// A lost *final* delta. The near cache follows per-write deltas, and a gap in their
// versions is seen by the next delta; when the last delta of a namespace is lost and no write
// follows, only the periodic version check (NEAR_CHECK_MS) can see the copy is behind Redis.
// Two reader nodes lose the same delta on purpose (a thread hook swallows it): one with
// the check converges, the one without it (NEAR_CHECK_MS=0) keeps the stale page, which
// shows the loss was real.
import t from 'tap';
import { registerProduction, type TestServer, serve } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

/** A thread hook that swallows the node's deltas while `on` and counts what it swallowed. */
function deltaLoser() {
  const h = {
    on: false,
    lost: 0,
    hooks: {
      delta: (msg: string, apply: (msg: string) => void) => {
        if (h.on) h.lost++;
        else apply(msg);
      },
    },
  };
  return h;
}

t.test('a lost final delta: the version check drops the stale namespace, the next search reloads', async (t) => {
  const env = { RESULT_CACHE_ENTRIES: '0' };
  const a = await serve(t, { env: { ...env, NEAR_CHECK_MS: '0' } });
  const lose = [deltaLoser(), deltaLoser()];
  const node = (check: string, loser: ReturnType<typeof deltaLoser>) => serve(t, { env: { ...env, NEAR_CHECK_MS: check }, on: a, hooks: loser.hooks });
  const checked = await node('50', lose[0]!);
  const unchecked = await node('0', lose[1]!);

  const ids: string[] = [];
  for (let i = 0; i < 4; i++) ids.push((await registerProduction(a, { endpoint: `https://lost${i}.example.com`, capability: 'lostx' })).id);
  const q = '/services?capability=lostx';
  const has = async (s: TestServer, id: string) => (await (await s.req(q)).text()).includes(id);
  for (const s of [checked, unchecked]) {
    await waitFor('every service on the reader', async () => (await Promise.all(ids.map((id) => has(s, id)))).every(Boolean));
    t.ok(s.app.index.near!.setCount > 0, 'the reader holds the set');
  }

  for (const h of lose) h.on = true;
  const p = await a.admin('PATCH', `/admin/api/services/${ids[0]}`, { capabilities: ['lostz'] });
  t.equal(p.status, 200);
  await p.body?.cancel();
  await waitFor('both readers to lose the delta', () => lose.every((h) => h.lost === 1));
  for (const h of lose) h.on = false;
  t.notOk(await has(a, ids[0]!), 'the writer answers the patch');

  await waitFor('the checked reader to converge', async () => !(await has(checked, ids[0]!)), 10_000, 20);
  t.ok(checked.app.index.near!.stats.stale >= 1, 'the version check dropped the namespace (counted)');
  t.equal(checked.app.index.near!.stats.resets, 0, 'no later delta revealed the loss');
  for (const id of ids.slice(1)) t.ok(await has(checked, id), `${id} still listed`);
  t.match(await (await checked.metrics()).text(), /registry_near_cache_deltas_total\{[^}]*event="stale"[^}]*\} [1-9]/, 'and exported');

  t.ok(await has(unchecked, ids[0]!), 'without the check, the node that lost the delta still lists the patched-away service');
  t.equal(unchecked.app.index.near!.stats.stale, 0);

  // a write after the check: deltas follow on from the version the check took (no reset)
  const p2 = await a.admin('PATCH', `/admin/api/services/${ids[1]}`, { capabilities: ['lostz'] });
  await p2.body?.cancel();
  await waitFor('the checked reader to follow the next delta', async () => !(await has(checked, ids[1]!)));
  t.equal(checked.app.index.near!.stats.resets, 0, 'the next delta followed on without a gap');
});
