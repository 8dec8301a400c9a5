// The bulk rebuild (index-page.lua, a page of services per call) against writes that land
// while it runs: a write applied to the building generation carries a revision, and the
// rebuild's pages (read from PostgreSQL before or during that write) never overwrite it.
// The writes are made from the rebuild's progress hook, between its pages, so the
// interleaving is forced, not timed. A sandbox created meanwhile (a namespace the rebuild
// did not list at its start) is built with the rest.
import t from 'tap';
import { rebuildIndex } from '../../src/hot/reindex/rebuild.js';
import { createSandbox, serve } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { seedServices } from '../helpers/test-data.js';
import { allPages, ids } from '../helpers/checks.js';

const id = (g: number) => 'seed' + String(g).padStart(8, '0');

t.test('writes made during a bulk rebuild win over its pages', async (t) => {
  const s = await serve(t, { env: { RESULT_CACHE_ENTRIES: '0' } });
  await waitFor('the index', async () => (await s.req('/readyz')).status === 200);
  await seedServices(s.cfg.databaseUrl, 3500); // seqs 1..3500: four pages of 1,000

  let wrote = false;
  let carriedPatched = false;
  const r = await rebuildIndex(s.app.pg, s.app.redis, s.app.keys, s.cfg.tiers, {
    pageSize: 1000, // pages of 1,000: the writes below land between its second and third
    onProgress: async (n) => {
      if (n === 3000) {
        // page 1 is in the building generation: a sync's newer state replaces what it wrote
        t.equal((await s.admin('PATCH', `/admin/api/services/${id(500)}`, { capabilities: ['patched'] })).status, 200);
        carriedPatched = true;
      }
      if (n !== 1000) return;
      // page 2 (seqs 1001-2000) is already being read; pages 3 and 4 are not
      t.equal((await s.admin('PATCH', `/admin/api/services/${id(1500)}`, { capabilities: ['patched'] })).status, 200);
      t.equal((await s.admin('PATCH', `/admin/api/services/${id(2500)}`, { capabilities: ['patched'] })).status, 200);
      t.equal((await s.admin('DELETE', `/admin/api/services/${id(1800)}`)).status, 204);
      t.equal((await s.admin('DELETE', `/admin/api/services/${id(3200)}`)).status, 204);
      wrote = true;
    },
  });
  t.ok(r, 'the rebuild ran');
  t.ok(wrote, 'the writes happened between pages');
  t.ok(carriedPatched);

  const patched = await s.req('/services?capability=patched');
  t.same(await ids(patched), [id(500), id(1500), id(2500)], 'the patched services are in their new set');
  for (const g of [500, 1500, 2500]) {
    const doc = (await (await s.req(`/services/${id(g)}`)).json()) as { capabilities: string[] };
    t.same(doc.capabilities, ['patched'], `${id(g)} is served in its written state`);
  }
  const seeded = (await allPages(s, '/services?capability=seeded&limit=1000')).pages.flat();
  t.equal(seeded.length, 3495, 'every other seeded service is in its set, once');
  t.notOk(seeded.includes(id(500)) || seeded.includes(id(1500)) || seeded.includes(id(2500)), 'the patched services left their old sets');
  t.notOk(seeded.includes(id(1800)) || seeded.includes(id(3200)), 'services deleted during the rebuild are not indexed');
  for (const g of [1800, 3200]) t.equal((await s.req(`/services/${id(g)}`)).status, 404, `${id(g)} deleted during the rebuild is gone`);
  t.equal((await s.req(`/services/${id(1501)}`)).status, 200, 'its neighbours are indexed');
});

t.test('a sandbox created while a rebuild runs is in the index it builds', async (t) => {
  const s = await serve(t, { env: { RESULT_CACHE_ENTRIES: '0' } });
  await waitFor('the index', async () => (await s.req('/readyz')).status === 200);
  await seedServices(s.cfg.databaseUrl, 2500); // pages of 1,000: the sandbox's services land in the third
  type Sandbox = Awaited<ReturnType<typeof createSandbox>>;
  const sbs: Sandbox[] = [];
  const made = new Map<string, string[]>();
  const r = await rebuildIndex(s.app.pg, s.app.redis, s.app.keys, s.cfg.tiers, {
    pageSize: 1000,
    onProgress: async (n) => {
      if (n !== 1000) return;
      // after the rebuild listed the sandboxes: these are new to it. The second one's marker
      // in the building generation is taken away, as when its creation found Redis away
      const building = (await s.app.redis.get(s.app.keys.building()))!;
      for (const unmarked of [false, true]) {
        const sb = await createSandbox(s, 'during the rebuild');
        sbs.push(sb);
        if (unmarked) t.equal(await s.app.redis.del(s.app.keys.ver(sb.uuid, building)), 1, 'its marker in the building generation removed');
        const ids: string[] = [];
        for (let i = 0; i < 3; i++) {
          const w = await s.req(`/sandbox/${sb.uuid}/services`, {
            method: 'POST',
            headers: { authorization: `Bearer ${sb.apiKey}`, 'content-type': 'application/json' },
            body: JSON.stringify({ endpoint: `https://during${i}.example.com`, capabilities: ['during'] }),
          });
          t.equal(w.status, 201);
          ids.push(((await w.json()) as { id: string }).id);
        }
        made.set(sb.uuid, ids);
      }
    },
  });
  t.ok(r, 'the rebuild finished: a namespace it did not list did not abort it');
  t.equal(await s.app.index.refreshGen(), r!.gen, 'its generation is live');
  t.equal(r!.services, 2506, 'it indexed the sandboxes\' services with the rest');
  for (const sb of sbs) {
    const found = await s.req(`/sandbox/${sb.uuid}/services?capability=during`, { headers: { authorization: `Bearer ${sb.apiKey}` } });
    t.same((await ids(found)).sort(), made.get(sb.uuid)!.sort(), 'each sandbox\'s services are served from it');
  }
  t.same(await ids(await s.req('/services?capability=during')), [], 'and not in production');
});
