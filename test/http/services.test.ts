// GET /services/{id}, deprecation headers, and the production registry writes under
// /admin/api/services (contract, "Public endpoints", "Deprecation ...", "Administration").
import t from 'tap';
import { ids, isError, jsonBody } from '../helpers/checks.js';
import { createSandbox, registerProduction, serve } from '../helpers/server.js';
import { ADMIN_KEY } from '../helpers/env.js';

const s = await serve(t);

const count = async (table: string, where = 'true', params: unknown[] = []) => Number((await s.app.pg.query<{ n: string }>(`SELECT count(*) AS n FROM ${table} WHERE ${where}`, params)).rows[0]!.n);

t.test('GET /services/{id}: 200 with every field, locked and sunset_date always present', async (t) => {
  const svc = await registerProduction(s, { endpoint: 'https://one.example.com/api', capabilities: ['Lookup'], properties: { Region: 'EU' } });
  const r = await s.req(`/services/${svc.id}`);
  t.equal(r.status, 200);
  t.match(r.headers.get('content-type'), /^application\/json/);
  const body = (await r.json()) as Record<string, unknown>;
  t.same(body, {
    id: svc.id,
    endpoint: 'https://one.example.com/api',
    capabilities: ['lookup'],
    properties: { region: 'EU' },
    deprecated: false,
    locked: false,
    sunset_date: null,
    iotReady: false,
    iot: null,
    health: { status: 'unknown', ttl: null },
  });
  t.ok('locked' in body && 'sunset_date' in body);
  t.match(svc.id, /^[A-Za-z0-9_-]+$/, 'id is URL-safe');
  t.equal(r.headers.get('deprecation'), null, 'no Deprecation for a live service');
  t.equal(r.headers.get('sunset'), null);
  t.notMatch(r.headers.get('link') ?? '', /successor-version/);
});

t.test('GET /services/{id}: 404 JSON for unknown ids, odd ids and sandbox services', async (t) => {
  await isError(t, await s.req('/services/doesnotexist'), 404, 'NOT_FOUND', 'unknown');
  await isError(t, await s.req('/services/%2E%2E'), 404, undefined, 'encoded dots');
  await isError(t, await s.req('/services/' + 'x'.repeat(300)), 404, undefined, 'long id');
  const sb = await createSandbox(s, 'Hidden');
  const r = await s.req(`/sandbox/${sb.uuid}/services`, jsonBody('POST', { endpoint: 'https://sb.example.com', capability: 'x' }, sb.apiKey));
  t.equal(r.status, 201);
  const sbSvc = (await r.json()) as { id: string };
  await isError(t, await s.req(`/services/${sbSvc.id}`), 404, 'NOT_FOUND', 'a sandbox service is not public');
  await isError(t, await s.req(`/services/${sbSvc.id}`, { headers: { authorization: `Bearer ${sb.apiKey}` } }), 404, 'NOT_FOUND', 'not even with its key');
  await isError(t, await s.req(`/services/${sbSvc.id}/replacements`), 404, 'NOT_FOUND', 'nor its replacements');
});

t.test('deprecated service: Deprecation (RFC 9745), Sunset (RFC 8594), successor-version Link', async (t) => {
  const svc = await registerProduction(s, { endpoint: 'https://old.example.com', capability: 'legacy' });
  const before = Math.floor(Date.now() / 1000);
  const p = await s.admin('PATCH', `/admin/api/services/${svc.id}`, { deprecated: true });
  const after = Math.ceil(Date.now() / 1000);
  t.equal(p.status, 200);
  const patched = (await p.json()) as Record<string, unknown>;
  t.equal(patched.deprecated, true);
  t.equal(patched.sunset_date, null);
  t.equal(patched.locked, false);

  const r = await s.req(`/services/${svc.id}`);
  t.equal(r.status, 200);
  const dep = r.headers.get('deprecation') ?? '';
  t.match(dep, /^@\d+$/, 'Deprecation: @<unix seconds>');
  const at = Number(dep.slice(1));
  t.ok(at >= before - 1 && at <= after + 1, 'the moment it was deprecated');
  t.equal(r.headers.get('sunset'), null, 'no Sunset without a sunset_date');
  t.match(r.headers.get('link') ?? '', `</services/${svc.id}/replacements>; rel="successor-version"`);
  const body = (await r.json()) as Record<string, unknown>;
  t.equal(body.deprecated, true);
  t.ok('locked' in body && 'sunset_date' in body);

  const p2 = await s.admin('PATCH', `/admin/api/services/${svc.id}`, { sunset_date: '2031-03-15', locked: true });
  t.equal(p2.status, 200);
  const r2 = await s.req(`/services/${svc.id}`);
  t.equal(r2.headers.get('sunset'), 'Sat, 15 Mar 2031 00:00:00 GMT', 'Sunset is an IMF-fixdate HTTP-date');
  t.equal(r2.headers.get('deprecation'), dep, 'the deprecation moment does not move');
  const b2 = (await r2.json()) as Record<string, unknown>;
  t.equal(b2.sunset_date, '2031-03-15');
  t.equal(b2.locked, true);

  const rr = await s.req(`/services/${svc.id}/replacements`);
  t.equal(rr.status, 200);
  t.equal(rr.headers.get('deprecation'), dep, 'the replacements response is about it too');
  t.equal(rr.headers.get('sunset'), 'Sat, 15 Mar 2031 00:00:00 GMT');

  const p3 = await s.admin('PATCH', `/admin/api/services/${svc.id}`, { deprecated: false, sunset_date: null });
  t.equal(p3.status, 200);
  const r3 = await s.req(`/services/${svc.id}`);
  t.equal(r3.headers.get('deprecation'), null, 'un-deprecated: no header');
  t.equal(r3.headers.get('sunset'), null);
  t.notMatch(r3.headers.get('link') ?? '', /successor-version/);
});

t.test('created deprecated with a sunset date', async (t) => {
  const svc = await registerProduction(s, { endpoint: 'https://gone.example.com', capability: 'legacy', deprecated: true, sunset_date: '2030-01-01' });
  t.equal(svc.deprecated, true);
  t.equal(svc.sunset_date, '2030-01-01');
  const r = await s.req(`/services/${svc.id}`);
  t.match(r.headers.get('deprecation') ?? '', /^@\d+$/);
  t.equal(r.headers.get('sunset'), 'Tue, 01 Jan 2030 00:00:00 GMT');
  t.match(r.headers.get('link') ?? '', /rel="successor-version"/);
});

t.test('a locked service can still be changed through PATCH (lock is a published flag)', async (t) => {
  const svc = await registerProduction(s, { endpoint: 'https://l.example.com', capability: 'lockme' });
  const r = await s.admin('PATCH', `/admin/api/services/${svc.id}`, { deprecated: true, locked: true, sunset_date: '2030-06-01', properties: { k: 'v' } });
  t.equal(r.status, 200, 'deprecate, lock, sunset and properties in one PATCH');
  const r2 = await s.admin('PATCH', `/admin/api/services/${svc.id}`, { iot: { deviceClasses: ['meter'], protocols: ['lwm2m'] } });
  t.equal(r2.status, 200, 'later changes of a locked service');
  const b = (await r2.json()) as Record<string, unknown>;
  t.same([b.locked, b.deprecated, b.sunset_date, b.properties, b.iotReady], [true, true, '2030-06-01', { k: 'v' }, true]);
});

t.test('admin writes need the admin key: 401 and nothing written', async (t) => {
  const before = await count('services');
  const body = JSON.stringify({ endpoint: 'https://x.example.com', capability: 'noauth' });
  await isError(t, await s.req('/admin/api/services', { method: 'POST', headers: { 'content-type': 'application/json' }, body }), 401, 'UNAUTHORIZED', 'no key');
  await isError(t, await s.req('/admin/api/services', { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer wrong-key-0123456789' }, body }), 401, undefined, 'wrong key');
  await isError(t, await s.req('/admin/api/services', { method: 'POST', headers: { 'content-type': 'application/json', authorization: ADMIN_KEY }, body }), 401, undefined, 'key without Bearer');
  const sb = await createSandbox(s, 'Not Admin');
  await isError(t, await s.req('/admin/api/services', jsonBody('POST', JSON.parse(body), sb.apiKey)), 401, undefined, 'a sandbox key');
  t.equal(await count('services'), before, 'nothing in PostgreSQL');
  t.same(await ids(await s.req('/services?capability=noauth')), [], 'nothing in search');
  const svc = await registerProduction(s, { endpoint: 'https://keep.example.com', capability: 'keep' });
  await isError(t, await s.req(`/admin/api/services/${svc.id}`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: '{"deprecated":true}' }), 401, undefined, 'PATCH');
  await isError(t, await s.req(`/admin/api/services/${svc.id}`, { method: 'DELETE' }), 401, undefined, 'DELETE');
  await isError(t, await s.req(`/admin/api/services/${svc.id}/replacements`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ serviceId: svc.id }) }), 401, undefined, 'replacements');
  const still = (await (await s.req(`/services/${svc.id}`)).json()) as Record<string, unknown>;
  t.equal(still.deprecated, false, 'unchanged');
});

t.test('invalid bodies: 400 with the error body and nothing partial written', async (t) => {
  const bad: [string, unknown][] = [
    ['no capabilities', { endpoint: 'https://bad.example.com' }],
    ['both forms', { endpoint: 'https://bad.example.com', capability: 'a', capabilities: ['b'] }],
    ['bad token', { endpoint: 'https://bad.example.com', capabilities: ['ok', 'not ok'] }],
    ['bad endpoint', { endpoint: 'ftp://bad.example.com', capability: 'a' }],
    ['relative endpoint', { endpoint: '/x', capability: 'a' }],
    ['endpoint with a NUL', { endpoint: 'https://bad.example.com/\u0000', capability: 'a' }],
    ['endpoint with a newline', { endpoint: 'https://bad.example.com/a\nb', capability: 'a' }],
    ['bad iot after good fields', { endpoint: 'https://bad.example.com', capability: 'a', properties: { k: 'v' }, iot: { deviceClasses: ['ok'], protocols: [] } }],
    ['bad property value', { endpoint: 'https://bad.example.com', capability: 'a', properties: { k: 'x'.repeat(257) } }],
    ['property value with NUL', { endpoint: 'https://bad.example.com', capability: 'a', properties: { k: 'a\u0000' } }],
    ['duplicate property key', { endpoint: 'https://bad.example.com', capability: 'a', properties: { K: 'a', k: 'b' } }],
    ['bad sunset', { endpoint: 'https://bad.example.com', capability: 'a', sunset_date: '2030-02-31' }],
    ['unknown field', { endpoint: 'https://bad.example.com', capability: 'a', owner: 'me' }],
    ['array body', [{ endpoint: 'https://bad.example.com', capability: 'a' }]],
    ['null body', null],
  ];
  const before = [await count('services'), await count('service_capabilities'), await count('service_properties'), await count('iot_profiles'), await count('change_events')];
  for (const [what, body] of bad) {
    const r = await s.admin('POST', '/admin/api/services', body);
    await isError(t, r, 400, 'VALIDATION_FAILED', what);
  }
  const raw = await s.req('/admin/api/services', { method: 'POST', headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' }, body: '{"endpoint":' });
  await isError(t, raw, 400, undefined, 'broken JSON');
  const after = [await count('services'), await count('service_capabilities'), await count('service_properties'), await count('iot_profiles'), await count('change_events')];
  t.same(after, before, 'no row in any table');
  t.same(await ids(await s.req('/services?capability=a')), [], 'nothing searchable');

  const svc = await registerProduction(s, { endpoint: 'https://patchme.example.com', capability: 'patchme', properties: { k: 'v' } });
  const badPatches: [string, unknown][] = [
    ['empty patch', {}],
    ['bad capability', { capabilities: ['Bad Token'] }],
    ['good field with a bad one', { deprecated: true, iot: { deviceClasses: [], protocols: ['p'] } }],
    ['properties with a bad value', { properties: { k: 'a\u0007' } }],
    ['unknown field', { deprecated: true, color: 'x' }],
  ];
  for (const [what, body] of badPatches) {
    const r = await s.admin('PATCH', `/admin/api/services/${svc.id}`, body);
    await isError(t, r, 400, undefined, what);
  }
  const now = (await (await s.req(`/services/${svc.id}`)).json()) as Record<string, unknown>;
  t.same(now, { ...svc }, 'the service is unchanged');
  await isError(t, await s.admin('PATCH', '/admin/api/services/nosuchservice', { deprecated: true }), 404, 'NOT_FOUND', 'PATCH unknown id');
  await isError(t, await s.admin('DELETE', '/admin/api/services/nosuchservice'), 404, 'NOT_FOUND', 'DELETE unknown id');
  await isError(t, await s.admin('POST', '/admin/api/services/nosuchservice/replacements', { serviceId: svc.id }), 404, 'NOT_FOUND', 'replacements of unknown id');
  await isError(t, await s.admin('POST', `/admin/api/services/${svc.id}/replacements`, { serviceId: 'nosuchservice' }), 400, undefined, 'unknown candidate');
  await isError(t, await s.admin('POST', `/admin/api/services/${svc.id}/replacements`, { serviceId: svc.id }), 400, undefined, 'itself');
  t.equal(await count('replacements'), 0, 'no candidate row');
});

t.test('iotReady is true exactly when an IoT profile is present; profiles live in iot_profiles', async (t) => {
  const svc = await registerProduction(s, { endpoint: 'https://iot.example.com', capability: 'iotcap', iot: { deviceClasses: ['Thermostat'], protocols: ['Zigbee', 'mqtt'] } });
  t.equal(svc.iotReady, true);
  t.same(svc.iot, { deviceClasses: ['thermostat'], protocols: ['zigbee', 'mqtt'] });
  const row = (await s.app.pg.query<{ device_classes: string[]; protocols: string[] }>('SELECT device_classes, protocols FROM iot_profiles WHERE service_id = $1', [svc.id])).rows[0];
  t.same(row, { device_classes: ['thermostat'], protocols: ['zigbee', 'mqtt'] }, 'stored in the iot_profiles table');
  t.same(await ids(await s.req('/services?capability=iotcap&iotReady=true')), [svc.id]);

  const off = await s.admin('PATCH', `/admin/api/services/${svc.id}`, { iot: null });
  const b = (await off.json()) as Record<string, unknown>;
  t.equal(b.iotReady, false);
  t.equal(b.iot, null);
  t.equal(await count('iot_profiles', 'service_id = $1', [svc.id]), 0, 'profile row removed');
  t.same(await ids(await s.req('/services?capability=iotcap&iotReady=true')), [], 'no longer iotReady in search');
  t.same(await ids(await s.req('/services?deviceClass=thermostat')), []);

  const on = await s.admin('PATCH', `/admin/api/services/${svc.id}`, { iot: { deviceClasses: ['plug'], protocols: ['matter'] } });
  const b2 = (await on.json()) as Record<string, unknown>;
  t.equal(b2.iotReady, true);
  t.same(await ids(await s.req('/services?deviceClass=plug&protocol=matter')), [svc.id]);
  const g = (await (await s.req(`/services/${svc.id}`)).json()) as Record<string, unknown>;
  t.equal(g.iotReady, true);
  t.same(g.iot, { deviceClasses: ['plug'], protocols: ['matter'] });
  const plain = await registerProduction(s, { endpoint: 'https://plain.example.com', capability: 'iotcap', iot: null });
  t.equal(plain.iotReady, false);
});

t.test('PATCH replaces properties and capabilities; search follows', async (t) => {
  const svc = await registerProduction(s, { endpoint: 'https://p.example.com', capabilities: ['alpha'], properties: { tier: 'gold', zone: 'a' } });
  const r = await s.admin('PATCH', `/admin/api/services/${svc.id}`, { properties: { tier: 'Silver' }, capabilities: ['beta'], endpoint: 'https://p2.example.com' });
  t.equal(r.status, 200);
  const b = (await r.json()) as Record<string, unknown>;
  t.same(b.properties, { tier: 'Silver' });
  t.same(b.capabilities, ['beta']);
  t.equal(b.endpoint, 'https://p2.example.com/', 'stored in its WHATWG serialisation');
  t.same(await ids(await s.req('/services?property=tier:gold')), []);
  t.same(await ids(await s.req('/services?property=zone:a')), []);
  t.same(await ids(await s.req('/services?capability=alpha')), []);
  t.same(await ids(await s.req('/services?capability=beta&property=tier:Silver')), [svc.id]);
});

t.test('DELETE: 204, then 404 and gone from search and from candidate lists', async (t) => {
  const svc = await registerProduction(s, { endpoint: 'https://del.example.com', capability: 'deleteme' });
  const old = await registerProduction(s, { endpoint: 'https://old2.example.com', capability: 'deleteme-old', deprecated: true });
  t.equal((await s.admin('POST', `/admin/api/services/${old.id}/replacements`, { serviceId: svc.id })).status, 201);
  t.same(await ids(await s.req(`/services/${old.id}/replacements`)), [svc.id]);
  const d = await s.admin('DELETE', `/admin/api/services/${svc.id}`);
  t.equal(d.status, 204);
  t.equal(await d.text(), '');
  await isError(t, await s.req(`/services/${svc.id}`), 404, 'NOT_FOUND');
  t.same(await ids(await s.req('/services?capability=deleteme')), []);
  t.same(await ids(await s.req(`/services/${old.id}/replacements`)), [], 'the deleted candidate is gone from the list');
  t.equal(await count('services', 'id = $1', [svc.id]), 0, 'gone from PostgreSQL');
  await isError(t, await s.admin('DELETE', `/admin/api/services/${svc.id}`), 404, 'NOT_FOUND', 'twice');
});

t.test('writes are acknowledged after COMMIT: the row is in PostgreSQL when 201 arrives', async (t) => {
  const svc = await registerProduction(s, { endpoint: 'https://durable.example.com', capability: 'durable', properties: { a: 'b' } });
  const r = await s.app.pg.query<{ endpoint: string }>('SELECT endpoint FROM services WHERE id = $1', [svc.id]);
  t.equal(r.rows[0]?.endpoint, 'https://durable.example.com/');
  t.equal(await count('service_properties', 'service_id = $1', [svc.id]), 1);
});
