// The sandbox registry's own operations (issue 3, contract "Sandbox endpoints"): register,
// patch and delete, replacements (none from another namespace), and the list's canonical
// 302, paging and 400s, each under the sandbox's key.
import t from 'tap';
import { ids, isError, jsonBody, keyed, nextLink } from '../helpers/checks.js';
import { createSandbox } from '../helpers/server.js';
import { sandboxFixtures, serveSandboxes } from '../helpers/sandboxes.js';
import type { Svc } from '../helpers/svc.js';

const sandboxes = await serveSandboxes(t);
const { s, register, list, count, total } = sandboxes;
const { prodPrint, a1 } = await sandboxFixtures(sandboxes);

// ---- the sandbox registry ----
t.test('register: capability shorthand and capabilities; 201 the service', async (t) => {
  const C = await createSandbox(s, 'Gamma');
  const r = await s.req(`/sandbox/${C.uuid}/services`, jsonBody('POST', { endpoint: 'https://g1.example.com', capability: 'Weather', properties: { Unit: 'C' }, iot: { deviceClasses: ['station'], protocols: ['http'] } }, C.apiKey));
  t.equal(r.status, 201);
  t.match(r.headers.get('content-type'), /^application\/json/);
  t.match(r.headers.get('cache-control') ?? '', /no-store|private/, 'not publicly cacheable');
  const g1 = (await r.json()) as Svc;
  t.same({ ...g1, id: 'x' }, { id: 'x', endpoint: 'https://g1.example.com/', capabilities: ['weather'], properties: { unit: 'C' }, deprecated: false, locked: false, sunset_date: null, iotReady: true, iot: { deviceClasses: ['station'], protocols: ['http'] }, health: { status: 'unknown', ttl: null } });
  const g2 = await register(C, { endpoint: 'https://g2.example.com', capabilities: ['weather', 'forecast'] });
  t.same(g2.capabilities, ['weather', 'forecast']);
  t.equal(g2.iotReady, false);
  t.same(await list(C, '?capability=weather'), [g1.id, g2.id]);
  t.same(await list(C, '?iotReady=true'), [g1.id]);
  t.same(await list(C, '?deviceClass=station&protocol=http'), [g1.id]);
  const one = await s.req(`/sandbox/${C.uuid}/services/${g1.id}`, keyed(C.apiKey));
  t.equal(one.status, 200);
  t.same(await one.json(), g1, 'read back');
  await isError(t, await s.req(`/sandbox/${C.uuid}/services`, jsonBody('POST', { endpoint: 'https://g3.example.com' }, C.apiKey)), 400, undefined, 'no capability');
  await isError(t, await s.req(`/sandbox/${C.uuid}/services`, jsonBody('POST', { endpoint: 'https://g3.example.com', capability: 'a', capabilities: ['b'] }, C.apiKey)), 400, undefined, 'both forms');
  await isError(t, await s.req(`/sandbox/${C.uuid}/services/${prodPrint.id}`, keyed(C.apiKey)), 404, 'NOT_FOUND', 'a production id is not in the sandbox');
  await isError(t, await s.req(`/sandbox/${C.uuid}/services/${a1.id}`, keyed(C.apiKey)), 404, 'NOT_FOUND', "another sandbox's service id");
  t.equal(await count(C.uuid), 2);
});

t.test('patch: deprecate, lock, sunset, properties, iot; then delete', async (t) => {
  const D = await createSandbox(s, 'Delta');
  const svc = await register(D, { endpoint: 'https://d1.example.com', capability: 'patchable', properties: { v: '1' } });
  const url = `/sandbox/${D.uuid}/services/${svc.id}`;
  const patch = async (body: unknown) => {
    const r = await s.req(url, jsonBody('PATCH', body, D.apiKey));
    t.equal(r.status, 200, `PATCH ${JSON.stringify(body)}`);
    return { r, b: (await r.json()) as Record<string, unknown> };
  };
  const dep = await patch({ deprecated: true });
  t.equal(dep.b.deprecated, true);
  t.match(dep.r.headers.get('deprecation') ?? '', /^@\d+$/, 'Deprecation header');
  t.match(dep.r.headers.get('link') ?? '', `</sandbox/${D.uuid}/services/${svc.id}/replacements>; rel="successor-version"`);
  t.equal((await patch({ locked: true })).b.locked, true);
  const sun = await patch({ sunset_date: '2034-12-31' });
  t.equal(sun.b.sunset_date, '2034-12-31');
  t.equal(sun.r.headers.get('sunset'), 'Sun, 31 Dec 2034 00:00:00 GMT');
  t.same((await patch({ properties: { v: '2', w: 'X' } })).b.properties, { v: '2', w: 'X' });
  const iot = await patch({ iot: { deviceClasses: ['lamp'], protocols: ['zigbee'] } });
  t.equal(iot.b.iotReady, true);
  t.same(iot.b.iot, { deviceClasses: ['lamp'], protocols: ['zigbee'] });
  const g = await s.req(url, keyed(D.apiKey));
  const gb = (await g.json()) as Record<string, unknown>;
  t.same([gb.deprecated, gb.locked, gb.sunset_date, gb.properties, gb.iotReady], [true, true, '2034-12-31', { v: '2', w: 'X' }, true], 'GET shows every change');
  t.match(g.headers.get('deprecation') ?? '', /^@\d+$/);
  t.match(g.headers.get('cache-control') ?? '', /private|no-store/);
  t.same(await list(D, '?property=v:2'), [svc.id]);
  t.same(await list(D, '?property=v:1'), []);
  t.same(await list(D, '?deviceClass=lamp'), [svc.id]);
  await isError(t, await s.req(url, jsonBody('PATCH', { deprecated: 'yes' }, D.apiKey)), 400, undefined, 'invalid patch');
  await isError(t, await s.req(`/sandbox/${D.uuid}/services/nosuch`, jsonBody('PATCH', { deprecated: true }, D.apiKey)), 404, 'NOT_FOUND', 'unknown id');
  await isError(t, await s.req(`/sandbox/${D.uuid}/services/${prodPrint.id}`, jsonBody('PATCH', { deprecated: true }, D.apiKey)), 404, 'NOT_FOUND', 'a production id');
  const prod = (await (await s.req(`/services/${prodPrint.id}`)).json()) as Record<string, unknown>;
  t.equal(prod.deprecated, false, 'production untouched');

  const del = await s.req(url, { method: 'DELETE', headers: { authorization: `Bearer ${D.apiKey}` } });
  t.equal(del.status, 204);
  await isError(t, await s.req(url, keyed(D.apiKey)), 404, 'NOT_FOUND', 'gone');
  t.same(await list(D), []);
  await isError(t, await s.req(url, { method: 'DELETE', headers: { authorization: `Bearer ${D.apiKey}` } }), 404, 'NOT_FOUND', 'delete twice');
  await isError(t, await s.req(`/sandbox/${D.uuid}/services/${prodPrint.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${D.apiKey}` } }), 404, 'NOT_FOUND', 'cannot delete production');
  t.equal((await s.req(`/services/${prodPrint.id}`)).status, 200, 'production still there');
});

t.test('replacements: read and add; a candidate from another namespace is refused', async (t) => {
  const E = await createSandbox(s, 'Epsilon');
  const old = await register(E, { endpoint: 'https://e-old.example.com', capability: 'legacy', deprecated: true });
  const n1 = await register(E, { endpoint: 'https://e-new1.example.com', capability: 'modern' });
  const n2 = await register(E, { endpoint: 'https://e-new2.example.com', capability: 'modern' });
  const url = `/sandbox/${E.uuid}/services/${old.id}/replacements`;
  const empty = await s.req(url, keyed(E.apiKey));
  t.equal(empty.status, 200);
  t.equal(await empty.text(), '[]', '[] when none');
  for (const c of [n2, n1]) {
    const r = await s.req(url, jsonBody('POST', { serviceId: c.id }, E.apiKey));
    t.equal(r.status, 201, 'candidate added');
    await r.body?.cancel();
  }
  const r = await s.req(url, keyed(E.apiKey));
  t.equal(r.status, 200);
  const body = (await r.json()) as Record<string, unknown>[];
  t.same(body.map((x) => x.id), [n2.id, n1.id], 'ranked as registered');
  t.same(body[1], n1, 'full service objects');

  const other = await s.req(url, jsonBody('POST', { serviceId: a1.id }, E.apiKey));
  // (isolation: another namespace's service is "no such service here", a validation error)
  await isError(t, other, 400, 'VALIDATION_FAILED', 'a candidate from another sandbox');
  const prod = await s.req(url, jsonBody('POST', { serviceId: prodPrint.id }, E.apiKey));
  await isError(t, prod, 400, 'VALIDATION_FAILED', 'a production candidate');
  await isError(t, await s.req(url, jsonBody('POST', {}, E.apiKey)), 400, undefined, 'no serviceId');
  t.same(await ids(await s.req(url, keyed(E.apiKey))), [n2.id, n1.id], 'nothing added');
  const n = Number((await s.app.pg.query<{ n: string }>('SELECT count(*) AS n FROM replacements WHERE service_id = $1', [old.id])).rows[0]!.n);
  t.equal(n, 2, 'two rows in PostgreSQL');
  await isError(t, await s.req(`/sandbox/${E.uuid}/services/nosuch/replacements`, keyed(E.apiKey)), 404, 'NOT_FOUND', 'unknown service');
  const pub = await s.req(`/services/${old.id}/replacements`);
  await isError(t, pub, 404, 'NOT_FOUND', 'sandbox replacements are not public');
});

t.test('GET /sandbox/{uuid}/services: canonical 302 (counts as one request), paging, 400', async (t) => {
  const F = await createSandbox(s, 'Phi');
  const made: string[] = [];
  for (let i = 0; i < 5; i++) made.push((await register(F, { endpoint: `https://f${i}.example.com`, capability: 'paged' })).id);
  const base = `/sandbox/${F.uuid}/services`;
  const before = await total(F);
  const r = await s.req(`${base}?capability=PAGED&limit=2`, keyed(F.apiKey));
  t.equal(r.status, 302);
  t.equal(r.headers.get('location'), `${base}?capability=paged&limit=2`);
  t.equal(await r.text(), '');
  t.match(r.headers.get('vary') ?? '', /Authorization/i);
  t.equal(await total(F), before + 1, 'the 302 counted as one request');
  const p1 = await s.req(`${base}?capability=paged&limit=2`, keyed(F.apiKey));
  t.equal(p1.status, 200);
  t.match(p1.headers.get('cache-control') ?? '', /private/);
  t.match(p1.headers.get('vary') ?? '', /Authorization/i);
  const link = nextLink(p1);
  t.match(link, new RegExp(`^${base}\\?after=[^&]+&capability=paged&limit=2$`), 'next link on the sandbox path');
  const seen = await ids(p1);
  let next = link;
  while (next) {
    const p = await s.req(next, keyed(F.apiKey));
    t.equal(p.status, 200);
    next = nextLink(p);
    seen.push(...(await ids(p)));
  }
  t.same(seen, made, 'every service once, in order');
  const bad = await s.req(`${base}?limit=0`, keyed(F.apiKey));
  await isError(t, bad, 400, undefined, 'invalid canonical query');
  const undecodable = await s.req(`${base}?capability=%zz`, keyed(F.apiKey));
  await isError(t, undecodable, 400, undefined, 'undecodable query');
  const noKey302 = await s.req(`${base}?capability=PAGED`);
  await isError(t, noKey302, 401, 'UNAUTHORIZED', 'the key is checked before the query');
});
