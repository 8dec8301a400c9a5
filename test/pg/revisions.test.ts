// Revisions that cannot go backwards (issue 15): the state a sync applies to Redis and the
// revision it applies it with come from one snapshot, so that no interleaving of writes,
// syncs and rebuilds leaves the index serving anything but the last acknowledged write.
// Each interleaving is forced (a trigger holds a write transaction on an advisory lock;
// the projector's beforeApply hook holds a sync between loading and applying; the
// rebuild's progress callback runs at a chosen point), never left to timing.
import t, { type Test } from 'tap';
import { rebuildIndex } from '../../src/hot/reindex/rebuild.js';
import { bulkUpsert } from '../../src/hot/writes/bulk.js';
import { PRODUCTION } from '../../src/hot/domain/keys.js';
import { gate, holdControl } from '../helpers/interleave.js';
import { applyHook, registerProduction, type TestServer, serve } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

/** The endpoint of a service as the live index has it (null: not in the index). */
async function indexed(s: TestServer, id: string): Promise<string | null> {
  await s.app.index.refreshGen();
  const r = await s.app.index.getService(PRODUCTION, id);
  return r ? (JSON.parse(r.doc) as { endpoint: string }).endpoint : null;
}

/**
 * Hold the first sync that applies `id` between loading its state and applying it:
 * `loaded` opens when it is held, opening `go` lets it apply. Later syncs pass.
 */
function holdFirstSyncOf(s: Setup, id: string) {
  let arm = true;
  const loaded = gate();
  const go = gate();
  s.hook.set(async (ids) => {
    if (!arm || !ids.includes(id)) return;
    arm = false;
    loaded.open();
    await go.wait;
  });
  return { loaded, go };
}

type Setup = TestServer & { hook: ReturnType<typeof applyHook> };

async function setUp(t: Test) {
  const hook = applyHook();
  const s: Setup = Object.assign(await serve(t, { env: { OUTBOX_SWEEP_MS: '600000' }, hooks: hook.hooks }), { hook });
  const h = await holdControl(s.cfg.databaseUrl);
  t.teardown(() => h.end());
  const x = await registerProduction(s, { endpoint: 'https://x-before.example.com', capabilities: ['race'] });
  const y = await registerProduction(s, { endpoint: 'https://y.example.com', capabilities: ['race'] });
  const add = await s.admin('POST', `/admin/api/services/${x.id}/replacements`, { serviceId: y.id });
  t.equal(add.status, 201, 'Y is a replacement candidate of X');
  return { s, h, x: x.id, y: y.id };
}

t.test('PATCH X racing DELETE of X\'s candidate: the index keeps the acknowledged PATCH', async (t) => {
  const { s, h, x, y } = await setUp(t);
  await h.hold();
  const patch = s.admin('PATCH', `/admin/api/services/${x}`, { endpoint: 'https://hold-me.example.com/x' });
  await waitFor('the PATCH waits inside its transaction', async () => (await h.waiting()).held === 1, 20_000, 10);
  let deleted = false;
  const del = s.admin('DELETE', `/admin/api/services/${y}`).finally(() => (deleted = true));
  // either the DELETE finishes first (it does not lock X's row) or it waits for X's row
  await waitFor('the DELETE finished or waits for the PATCH', async () => deleted || (await h.waiting()).other >= 1, 20_000, 10);
  await h.release();
  t.equal((await patch).status, 200, 'PATCH acknowledged');
  t.equal((await del).status, 204, 'DELETE acknowledged');
  t.equal(await indexed(s, x), 'https://hold-me.example.com/x', 'the index has the acknowledged PATCH');
  t.equal(await indexed(s, y), null, 'and not the deleted candidate');
});

t.test('a sync that loaded its state before a newer commit does not overwrite it', async (t) => {
  const { s, h, x, y } = await setUp(t);
  // hold the DELETE's sync (it re-indexes X, the listing service) between load and apply
  const loaded = gate();
  const go = gate();
  s.hook.set(async (ids) => {
    if (!ids.includes(y)) return;
    loaded.open();
    await go.wait;
  });
  await h.hold();
  const patch = s.admin('PATCH', `/admin/api/services/${x}`, { endpoint: 'https://hold-me.example.com/x2' });
  await waitFor('the PATCH waits inside its transaction', async () => (await h.waiting()).held === 1, 20_000, 10);
  const del = s.admin('DELETE', `/admin/api/services/${y}`);
  await waitFor('the DELETE committed and loaded its state, or waits for the PATCH', async () => loaded.opened || (await h.waiting()).other >= 1, 20_000, 10);
  await h.release();
  t.equal((await patch).status, 200, 'PATCH acknowledged (and applied)');
  await loaded.wait;
  go.open();
  t.equal((await del).status, 204, 'DELETE acknowledged');
  t.equal(await indexed(s, x), 'https://hold-me.example.com/x2', 'the index has the acknowledged PATCH');
});

t.test('a rebuild started between a stale sync and a newer write keeps the newer write', async (t) => {
  const { s, x } = await setUp(t);
  // sync 1 loads X at e1 and is held; write 2 (e2) commits and applies; a rebuild starts
  // and indexes X from PostgreSQL (e2); sync 1 then applies e1 to both generations
  const { loaded, go } = holdFirstSyncOf(s, x);
  const first = s.admin('PATCH', `/admin/api/services/${x}`, { endpoint: 'https://e1.example.com/' });
  await loaded.wait;
  const second = await s.admin('PATCH', `/admin/api/services/${x}`, { endpoint: 'https://e2.example.com/' });
  t.equal(second.status, 200, 'the newer PATCH is acknowledged');
  t.equal(await indexed(s, x), 'https://e2.example.com/', 'and applied');
  let released = false;
  const r = await rebuildIndex(s.app.pg, s.app.redis, s.app.keys, s.cfg.tiers, {
    onProgress: async () => {
      if (released) return;
      released = true;
      go.open(); // the stale sync applies now, to the live and the building generation
      t.equal((await first).status, 200, 'the older PATCH is acknowledged');
    },
  });
  t.ok(r, 'the rebuild ran');
  t.ok(released, 'the stale sync was applied during the rebuild');
  t.equal(await s.app.index.refreshGen(), r!.gen, 'the rebuilt generation is live');
  t.equal(await indexed(s, x), 'https://e2.example.com/', 'the rebuilt index has the last acknowledged write');
});

t.test('a stale sync applied during a rebuild cannot bring a deleted service back', async (t) => {
  const { s, x } = await setUp(t);
  // sync 1 loads X (PATCH e1) and is held; X is deleted and that applied; a rebuild starts
  // (X is not among its services); sync 1 then applies e1 to the building generation
  const { loaded, go } = holdFirstSyncOf(s, x);
  const first = s.admin('PATCH', `/admin/api/services/${x}`, { endpoint: 'https://e1.example.com/' });
  await loaded.wait;
  t.equal((await s.admin('DELETE', `/admin/api/services/${x}`)).status, 204, 'the DELETE is acknowledged');
  t.equal(await indexed(s, x), null, 'and applied');
  let released = false;
  const r = await rebuildIndex(s.app.pg, s.app.redis, s.app.keys, s.cfg.tiers, {
    onProgress: async () => {
      if (released) return;
      released = true;
      go.open();
      // (it committed before the DELETE: answered with the state it committed, not read back)
      t.equal((await first).status, 200, 'the older PATCH finished');
    },
  });
  t.ok(r && released, 'the rebuild ran, and the stale sync was applied during it');
  t.equal(await s.app.index.refreshGen(), r!.gen, 'the rebuilt generation is live');
  t.equal(await indexed(s, x), null, 'the rebuilt index does not have the deleted service');
});

t.test('an import upsert racing DELETE of a candidate: the index ends with the imported state', async (t) => {
  const { s, h, x, y } = await setUp(t);
  await h.hold();
  const input = { endpoint: 'https://hold-me.example.com/imported', capabilities: ['race'], properties: {}, iot: null, deprecated: false, locked: false, sunsetDate: null };
  const imported = bulkUpsert(s.app.pg, PRODUCTION, [{ id: x, input }]);
  await waitFor('the import waits inside its transaction', async () => (await h.waiting()).held === 1, 20_000, 10);
  let deleted = false;
  const del = s.admin('DELETE', `/admin/api/services/${y}`).finally(() => (deleted = true));
  await waitFor('the DELETE finished or waits for the import', async () => deleted || (await h.waiting()).other >= 1, 20_000, 10);
  await h.release();
  t.match(await imported, { updated: 1 }, 'the import committed');
  t.equal((await del).status, 204, 'DELETE acknowledged');
  await s.app.projector.sweep(0); // the import's outbox rows (the CLI leaves them to a rebuild or the sweeper)
  t.equal(await indexed(s, x), 'https://hold-me.example.com/imported', 'the index has the imported state');
});
