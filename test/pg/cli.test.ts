// bin/registry against real PostgreSQL and Redis: export -> import into a fresh database
// gives the same services (ids, replacements included); re-importing changes nothing;
// upserts never cross namespaces; bad lines are reported and skipped; sandbox create,
// tier set, reindex, backfill-index-text and stats.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { cli } from '../helpers/cli.js';
import { createSandbox, registerProduction, serve } from '../helpers/server.js';
import { freshDatabase } from '../helpers/database.js';


const lines = (s: string) => s.split('\n').filter(Boolean);

t.test('export, import into a fresh database, re-import', async (t) => {
  const a = await serve(t);
  const envA = { DATABASE_URL: a.cfg.databaseUrl, REDIS_KEY_PREFIX: a.cfg.redisKeyPrefix };
  const s1 = await registerProduction(a, { endpoint: 'https://one.example.com', capabilities: ['pay', 'bill'], properties: { region: 'eu', tier: 'gold' } });
  const s2 = await registerProduction(a, { endpoint: 'https://two.example.com', capabilities: ['pay'], iot: { deviceClasses: ['meter'], protocols: ['mqtt', 'coap'] } });
  const s3 = await registerProduction(a, { endpoint: 'https://three.example.com', capabilities: ['pay'] });
  t.equal((await a.admin('POST', `/admin/api/services/${s1.id}/replacements`, { serviceId: s3.id })).status, 201);
  t.equal((await a.admin('POST', `/admin/api/services/${s1.id}/replacements`, { serviceId: s2.id })).status, 201);
  t.equal((await a.admin('PATCH', `/admin/api/services/${s1.id}`, { deprecated: true, locked: true, sunset_date: '2031-02-03' })).status, 200);
  // a sandbox service is not production: never exported
  const sb = await createSandbox(a, 'CLI');
  const own = await a.req(`/sandbox/${sb.uuid}/services`, { method: 'POST', headers: { authorization: `Bearer ${sb.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ endpoint: 'https://sb.example.com', capability: 'pay' }) });
  t.equal(own.status, 201);
  const sbId = ((await own.json()) as { id: string }).id;

  const ex = await cli(['export'], envA);
  t.equal(ex.code, 0, ex.err);
  const exported = lines(ex.out).map((l) => JSON.parse(l) as Record<string, unknown>);
  t.same(exported.map((x) => x.id), [s1.id, s2.id, s3.id], 'production only, in registration order');
  t.same(exported[0]!.replacements, [s3.id, s2.id], 'replacement candidates, ranked');
  t.match(exported[0], { deprecated: true, locked: true, sunset_date: '2031-02-03' });
  t.same({ ...exported[1], replacements: undefined }, { ...s2, replacements: undefined }, 'the service object as the API shows it');

  const b = await freshDatabase();
  t.teardown(() => b.drop());
  const envB = { DATABASE_URL: b.url, REDIS_KEY_PREFIX: 'tcli' + randomBytes(4).toString('hex') + ':' };
  const im = await cli(['import', '-', '--reindex'], envB, ex.out);
  t.equal(im.code, 0, im.err);
  t.match(im.err, /3 created, 0 updated, 0 unchanged, 0 rejected/);
  t.match(im.err, /index rebuilt: 3 services/);
  const ex2 = await cli(['export'], envB);
  t.equal(ex2.out, ex.out, 'the fresh database exports the same lines');

  // the index was rebuilt: a server on database B finds them, with deprecation headers
  const sB = await serve(t, { databaseUrl: b.url, redisKeyPrefix: envB.REDIS_KEY_PREFIX });
  const found = (await (await sB.req('/services?capability=pay')).json()) as { id: string }[];
  t.same(found.map((x) => x.id).sort(), [s1.id, s2.id, s3.id].sort());
  const one = await sB.req(`/services/${s1.id}`);
  t.ok(one.headers.get('deprecation'));
  t.same(((await (await sB.req(`/services/${s1.id}/replacements`)).json()) as { id: string }[]).map((x) => x.id), [s3.id, s2.id]);

  // re-import: nothing changes, not even the change feed
  const events = async () => Number((await sB.app.pg.query<{ n: string }>('SELECT count(*) AS n FROM change_events')).rows[0]!.n);
  const before = await events();
  const again = await cli(['import', '-'], envB, ex.out);
  t.equal(again.code, 0, again.err);
  t.match(again.err, /0 created, 0 updated, 3 unchanged, 0 rejected; 0 replacement lists set/);
  t.equal(await events(), before, 'no change events for unchanged services');
  const count = await sB.app.pg.query<{ n: string }>('SELECT count(*) AS n FROM services');
  t.equal(Number(count.rows[0]!.n), 3, 'no duplicates');

  // a changed line updates in place, keeping its id
  const changed = ex.out.replace('https://three.example.com', 'https://three-v2.example.com');
  const up = await cli(['import', '-', '--no-reindex'], envB, changed);
  t.match(up.err, /0 created, 1 updated, 2 unchanged/);
  t.match((await sB.app.pg.query('SELECT endpoint FROM services WHERE id = $1', [s3.id])).rows[0], { endpoint: 'https://three-v2.example.com' });

  // never across namespaces: the sandbox service's id in a production import is refused
  const cross = JSON.stringify({ id: sbId, endpoint: 'https://hijack.example.com', capabilities: ['pay'] });
  const bad = await cli(['import', '-', '--no-reindex'], envA, `${cross}\nnot json\n{"id":"ok1","endpoint":"ftp://x.example.com","capabilities":["a"]}\n`);
  t.equal(bad.code, 1);
  t.match(bad.err, new RegExp(`line 1: ${sbId}: the id belongs to another namespace`));
  t.match(bad.err, /line 2: not valid JSON/);
  t.match(bad.err, /line 3: .*endpoint/);
  const still = await a.app.pg.query<{ ns: string; endpoint: string }>('SELECT ns, endpoint FROM services WHERE id = $1', [sbId]);
  t.same(still.rows[0], { ns: sb.uuid, endpoint: 'https://sb.example.com/' }, 'the sandbox service is untouched');
});

t.test('import with ttl / deregisterAfter: validated, leases seeded, tokens shown once', async (t) => {
  const { createHash } = await import('node:crypto');
  const b = await freshDatabase();
  t.teardown(() => b.drop());
  const env = { DATABASE_URL: b.url, REDIS_KEY_PREFIX: 'tcli' + randomBytes(4).toString('hex') + ':' };
  const leased = { id: 'imp-lease-1', endpoint: 'https://imp-lease.example.com', capabilities: ['imp'], ttl: 30, deregisterAfter: 120 };
  const plain = { id: 'imp-plain-1', endpoint: 'https://imp-plain.example.com', capabilities: ['imp'] };
  const good = [leased, plain].map((x) => JSON.stringify(x)).join('\n') + '\n';
  const bad = [{ ...leased, id: 'imp-bad-1', ttl: 4 }, { ...plain, id: 'imp-bad-2', deregisterAfter: 120 }, { ...leased, id: 'imp-bad-3', ttl: '30' }, { ...leased, id: 'imp-bad-4', deregisterAfter: 59 }];
  const im = await cli(['import', '-'], env, good + bad.map((x) => JSON.stringify(x)).join('\n') + '\n');
  t.equal(im.code, 1, 'rejected lines');
  t.match(im.err, /2 created, 0 updated, 0 unchanged, 4 rejected/);
  for (const n of [3, 4, 5, 6]) t.match(im.err, new RegExp(`line ${n}: `), `line ${n} refused`);
  const tokens = lines(im.out).map((l) => JSON.parse(l) as { id: string; heartbeatToken: string });
  t.equal(tokens.length, 1, 'one token: the one lease started');
  t.equal(tokens[0]!.id, leased.id);
  t.match(tokens[0]!.heartbeatToken, /^prod_hb_[0-9A-Za-z]{38}$/);
  const token = tokens[0]!.heartbeatToken;
  const sB = await serve(t, { databaseUrl: b.url, redisKeyPrefix: env.REDIS_KEY_PREFIX });
  const row = async (id: string) =>
    (await sB.app.pg.query<{ ttl: number | null; dereg: number | null; hs: string; h: string | null }>("SELECT ttl, deregister_after AS dereg, health_status AS hs, encode(hb_token_hash, 'hex') AS h FROM services WHERE id = $1", [id])).rows[0];
  t.same(await row(leased.id), { ttl: 30, dereg: 120, hs: 'passing', h: createHash('sha256').update(token).digest('hex') }, 'the lease, only the hash of its token');
  t.same(await row(plain.id), { ttl: null, dereg: null, hs: 'unknown', h: null });
  t.notOk(await row('imp-bad-1'), 'nothing of a refused line');
  t.same(((await (await sB.req(`/services/${leased.id}`)).json()) as { health: unknown }).health, { status: 'passing', ttl: 30 });
  const beat = () => sB.req(`/services/${leased.id}/heartbeat`, { method: 'PUT', headers: { authorization: `Bearer ${token}` } });
  t.equal((await beat()).status, 204, 'the rebuild seeded the lease: its token works');
  // re-import: nothing changes, no new token
  const again = await cli(['import', '-'], env, good);
  t.equal(again.code, 0, again.err);
  t.match(again.err, /0 created, 0 updated, 2 unchanged/);
  t.equal(again.out, '', 'no token for a lease that has one');
  // a new ttl: updated in place, the token kept
  const longer = await cli(['import', '-', '--no-reindex'], env, JSON.stringify({ ...leased, ttl: 60 }) + '\n');
  t.equal(longer.code, 0, longer.err);
  t.match(longer.err, /0 created, 1 updated, 0 unchanged/);
  t.equal(longer.out, '');
  t.same(await row(leased.id), { ttl: 60, dereg: 120, hs: 'passing', h: createHash('sha256').update(token).digest('hex') });
  t.equal((await beat()).status, 204);
});

t.test('sandbox create, tier set, reindex, stats', async (t) => {
  const s = await serve(t);
  const env = { DATABASE_URL: s.cfg.databaseUrl, REDIS_KEY_PREFIX: s.cfg.redisKeyPrefix };
  const c = await cli(['sandbox', 'create', 'Sydney', 'Lab', '--lat', '-33.87', '--lon', '151.21', '--json'], env);
  t.equal(c.code, 0, c.err);
  const sb = JSON.parse(c.out) as { uuid: string; apiKey: string; name: string; tier: string; location: unknown };
  t.match(sb, { name: 'Sydney Lab', tier: 'free', location: { lat: -33.87, lon: 151.21 } });
  t.match(sb.apiKey, /^sydneylab_sb_[0-9A-Za-z]{38}$/);
  // the key works at once against the server
  const list = await s.req(`/sandbox/${sb.uuid}/services`, { headers: { authorization: `Bearer ${sb.apiKey}` } });
  t.equal(list.status, 200);
  t.equal(list.headers.get('ratelimit-policy'), '"sandbox";q=60;w=60');

  const plain = await cli(['sandbox', 'create', 'Plain'], env);
  t.match(plain.out, /^uuid: +[0-9a-f-]{36}\napiKey: +plain_sb_\w+\n/);

  const ts = await cli(['tier', 'set', sb.uuid, 'pro'], env);
  t.equal(ts.code, 0, ts.err);
  t.match(JSON.parse(ts.out), { uuid: sb.uuid, tier: 'pro', rateLimit: 600 });
  const next = await s.req(`/sandbox/${sb.uuid}/services`, { headers: { authorization: `Bearer ${sb.apiKey}` } });
  t.equal(next.headers.get('ratelimit-policy'), '"sandbox";q=600;w=60', 'the new limit applies to the next request');
  t.equal((await cli(['tier', 'set', sb.uuid, 'platinum'], env)).code, 2);
  t.equal((await cli(['tier', 'set', 'not-a-uuid', 'pro'], env)).code, 2);

  await registerProduction(s, { endpoint: 'https://r.example.com', capabilities: ['re'] });
  const ri = await cli(['reindex'], env);
  t.equal(ri.code, 0, ri.err);
  t.match(ri.err, /index rebuilt: 1 services, 2 sandboxes/);
  // a service written before migration 0004 has no stored index text: every start of the
  // CLI migrates, and the migrator's ensureIndexText() stores it, so the backfill finds none
  await s.app.pg.query('UPDATE services SET idx_doc = NULL, idx_members = NULL, idx_hdr = NULL');
  const bf = await cli(['backfill-index-text', '--batch', '10'], env);
  t.equal(bf.code, 0, bf.err);
  t.match(bf.err, /stored the index text of 0 services/);
  const left = await s.app.pg.query<{ n: string }>('SELECT count(*) AS n FROM services WHERE idx_doc IS NULL');
  t.equal(Number(left.rows[0]!.n), 0, 'no service is left without index text');
  const st = await cli(['stats'], env);
  t.equal(st.code, 0, st.err);
  t.match(JSON.parse(st.out), { services: { production: 1 }, sandboxesByTier: { free: 1, pro: 1 } });

  t.equal((await cli(['frobnicate'], env)).code, 2);
  t.equal((await cli(['sandbox', 'create', 'X', '--lat', '91', '--lon', '0'], env)).code, 2);
});
