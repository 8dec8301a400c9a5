// The admin API's answers (contract, "Administration"): the paged sandbox list with its
// server-computed paging fields at both ends, detail, stats, and tier changes that apply
// to the sandbox's very next request.
import t from 'tap';
import { createSandbox, registerProduction, serve } from '../helpers/server.js';

interface Page {
  items: { uuid: string; name: string; tier: string; rateLimit: number; serviceCount: number; location: unknown; createdAt: string }[];
  total: number;
  pageSize: number;
  page: number;
  displayPage: number;
  hasPrev: boolean;
  hasNext: boolean;
  prevPage: number | null;
  nextPage: number | null;
}

t.test('admin API', async (t) => {
  // tiny limits so "the next request" can be shown to be over or under the limit
  const s = await serve(t, { env: { ADMIN_PAGE_SIZE: '2', SANDBOX_CREATE_PER_MINUTE: '1000', TIERS: 'free=3,pro=50,enterprise=6000' } });
  const made: Awaited<ReturnType<typeof createSandbox>>[] = [];
  for (let i = 0; i < 5; i++) made.push(await createSandbox(s, `Sandbox ${i}`, i === 0 ? { lat: 48.85, lon: 2.35 } : undefined));
  const page = async (qs: string) => {
    const r = await s.admin('GET', `/admin/api/sandboxes${qs}`);
    t.equal(r.status, 200, qs);
    t.equal(r.headers.get('cache-control'), 'no-store');
    return (await r.json()) as Page;
  };

  t.test('paging fields at the first, a middle and the last page', async (t) => {
    const p0 = await page('');
    t.match(p0, { total: 5, pageSize: 2, page: 0, displayPage: 1, hasPrev: false, hasNext: true, prevPage: null, nextPage: 1 });
    t.equal(p0.items.length, 2);
    t.same(await page('?page=0'), p0, 'no page = page 0');
    t.same(await page('?tier=&page='), p0, 'empty values = all tiers, first page');
    const p1 = await page('?page=1');
    t.match(p1, { total: 5, page: 1, displayPage: 2, hasPrev: true, hasNext: true, prevPage: 0, nextPage: 2 });
    const p2 = await page('?page=2');
    t.match(p2, { total: 5, page: 2, displayPage: 3, hasPrev: true, hasNext: false, prevPage: 1, nextPage: null });
    t.equal(p2.items.length, 1);
    t.same([...p0.items, ...p1.items, ...p2.items].map((x) => x.uuid), made.map((x) => x.uuid), 'every sandbox once, in creation order');
    const past = await page('?page=7');
    t.match(past, { items: [], total: 5, page: 7, hasNext: false, nextPage: null, hasPrev: true, prevPage: 2 }, 'past the end: previous leads to the last page');
    t.match(p0.items[0], { uuid: made[0]!.uuid, name: 'Sandbox 0', tier: 'free', rateLimit: 3, serviceCount: 0, location: { lat: 48.85, lon: 2.35 } });
    t.equal(p0.items[1]!.location, null);
  });

  t.test('the tier filter, and an empty result', async (t) => {
    t.equal((await s.admin('POST', `/admin/api/sandboxes/${made[3]!.uuid}/tier`, { tier: 'pro' })).status, 200);
    const pro = await page('?tier=pro');
    t.match(pro, { total: 1, page: 0, displayPage: 1, hasPrev: false, hasNext: false, prevPage: null, nextPage: null });
    t.same(pro.items.map((x) => [x.uuid, x.tier, x.rateLimit]), [[made[3]!.uuid, 'pro', 50]]);
    const free = await page('?tier=free&page=1');
    t.match(free, { total: 4, page: 1, hasPrev: true, hasNext: false, prevPage: 0, nextPage: null });
    t.ok(free.items.every((x) => x.tier === 'free'));
    t.match(await page('?tier=enterprise'), { items: [], total: 0, displayPage: 1, hasPrev: false, hasNext: false, prevPage: null, nextPage: null });
  });

  t.test('an invalid tier or page is 400 with the error body', async (t) => {
    for (const qs of ['?tier=gold', '?tier=FREE', '?page=-1', '?page=abc', '?page=1.5', '?page=1e3', '?page=0&page=1', '?tier=free&tier=pro', '?page=99999999']) {
      const r = await s.admin('GET', `/admin/api/sandboxes${qs}`);
      t.equal(r.status, 400, qs);
      const b = (await r.json()) as { error: { code: string; message: string } };
      t.equal(typeof b.error.message, 'string');
      t.equal(b.error.code, 'BAD_QUERY');
    }
  });

  t.test('detail: summary, service count, counters, tier history; 404 unknown', async (t) => {
    const sb = made[0]!;
    const reg = await s.req(`/sandbox/${sb.uuid}/services`, {
      method: 'POST',
      headers: { authorization: `Bearer ${sb.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ endpoint: 'https://a.example', capabilities: ['x'] }),
    });
    t.equal(reg.status, 201);
    const r = await s.admin('GET', `/admin/api/sandboxes/${sb.uuid}`);
    t.equal(r.status, 200);
    t.match(await r.json(), { uuid: sb.uuid, name: 'Sandbox 0', tier: 'free', rateLimit: 3, serviceCount: 1, location: { lat: 48.85, lon: 2.35 }, counters: { total: 1, rejected: 0, windowTotal: 1 }, tierChanges: [] });
    for (const id of ['00000000-0000-4000-8000-000000000000', 'nope', sb.uuid.toUpperCase().replace(/.$/, 'Z')]) {
      const n = await s.admin('GET', `/admin/api/sandboxes/${id}`);
      t.equal(n.status, 404, id);
      t.equal(((await n.json()) as { error: { code: string } }).error.code, 'NOT_FOUND');
    }
  });

  t.test('tier change: 200 the summary, applies to the very next request, recorded', async (t) => {
    const sb = made[1]!;
    const call = () => s.req(`/sandbox/${sb.uuid}/services`, { headers: { authorization: `Bearer ${sb.apiKey}` } });
    for (let i = 0; i < 3; i++) t.equal((await call()).status, 200, `request ${i + 1} of 3 a minute`);
    const over = await call();
    t.equal(over.status, 429, 'the free limit (3) is used up');
    t.match(over.headers.get('ratelimit-policy'), /q=3;/);

    const r = await s.admin('POST', `/admin/api/sandboxes/${sb.uuid}/tier`, { tier: 'pro' });
    t.equal(r.status, 200);
    t.same(await r.json(), { uuid: sb.uuid, name: 'Sandbox 1', tier: 'pro', rateLimit: 50, location: null, createdAt: (await page('')).items[1]!.createdAt });
    const next = await call();
    t.equal(next.status, 200, 'the very next request is admitted under the new limit');
    t.match(next.headers.get('ratelimit-policy'), /q=50;/);

    const back = await s.admin('POST', `/admin/api/sandboxes/${sb.uuid}/tier`, { tier: 'free' });
    t.equal(back.status, 200);
    t.equal((await call()).status, 429, 'and a demotion applies at once too');
    const d = (await (await s.admin('GET', `/admin/api/sandboxes/${sb.uuid}`)).json()) as { tierChanges: { from: string; to: string; by: string }[] };
    t.same(d.tierChanges.map((c) => [c.from, c.to, c.by]), [['pro', 'free', 'admin-api-key'], ['free', 'pro', 'admin-api-key']], 'newest first, with who');
    const same = await s.admin('POST', `/admin/api/sandboxes/${sb.uuid}/tier`, { tier: 'free' });
    t.equal(same.status, 200, 'setting the tier it has succeeds');
    t.match(await same.json(), { tier: 'free', rateLimit: 3 });
    const d2 = (await (await s.admin('GET', `/admin/api/sandboxes/${sb.uuid}`)).json()) as { tierChanges: unknown[] };
    t.equal(d2.tierChanges.length, 2, 'and records no change that did not happen');
  });

  t.test('tier change: unknown tier 400, bad body 400, unknown sandbox 404; nothing changes', async (t) => {
    const sb = made[2]!;
    for (const body of [{ tier: 'gold' }, { tier: '' }, {}, { tier: 'pro', extra: 1 }, { tier: 'toString' }, { tier: '__proto__' }]) {
      const r = await s.admin('POST', `/admin/api/sandboxes/${sb.uuid}/tier`, body);
      t.equal(r.status, 400, JSON.stringify(body));
      t.equal(((await r.json()) as { error: { code: string } }).error.code, 'VALIDATION_FAILED');
    }
    t.equal((await s.admin('POST', '/admin/api/sandboxes/00000000-0000-4000-8000-000000000000/tier', { tier: 'pro' })).status, 404);
    t.equal((await s.admin('POST', '/admin/api/sandboxes/not-a-uuid/tier', { tier: 'pro' })).status, 404);
    const d = (await (await s.admin('GET', `/admin/api/sandboxes/${sb.uuid}`)).json()) as { tier: string; tierChanges: unknown[] };
    t.equal(d.tier, 'free');
    t.same(d.tierChanges, []);
  });

  t.test('stats: registry counts, sandboxes by tier, request totals, tiers', async (t) => {
    await registerProduction(s, { endpoint: 'https://p1.example', capabilities: ['a'], iot: { deviceClasses: ['sensor'], protocols: ['mqtt'] } });
    await registerProduction(s, { endpoint: 'https://p2.example', capabilities: ['a'], deprecated: true, locked: true });
    await registerProduction(s, { endpoint: 'https://p3.example', capabilities: ['b'], deprecated: true });
    const r = await s.admin('GET', '/admin/api/stats');
    t.equal(r.status, 200);
    t.equal(r.headers.get('cache-control'), 'no-store');
    const st = (await r.json()) as Record<string, unknown>;
    t.match(st, {
      services: { production: 3, sandboxes: 1 },
      deprecated: { production: 2, sandboxes: 0 },
      locked: { production: 1, sandboxes: 0 },
      iotReady: { production: 1, sandboxes: 0 },
      sandboxes: 5,
      sandboxesByTier: { free: 4, pro: 1, enterprise: 0 },
      tiers: { free: 3, pro: 50, enterprise: 6000 },
    });
    // made[0]: 1 register; made[1]: 3 + 1 rejected + 1 + 1 rejected
    t.same(st.requests, { total: 7, rejected: 2 }, 'summed over every sandbox');
  });

  t.test('locations for the overview map', async (t) => {
    const r = await s.admin('GET', '/admin/api/locations');
    t.same(await r.json(), [{ uuid: made[0]!.uuid, name: 'Sandbox 0', tier: 'free', lat: 48.85, lon: 2.35 }]);
  });
});
