// Sandboxes (issue 3, contract "Sandbox", "Sandbox API key", "Sandbox endpoints"): creation,
// keys, creation throttling, the five isolation rules, authentication of sandbox routes, and
// the sandbox registry's own operations.
import { request } from 'node:http';
import t from 'tap';
import { ids, isError, jsonBody, keyed, nextLink, serve } from '../helpers/checks.js';
import { createSandbox, registerProduction, startTestServer, type TestServer } from '../helpers/server.js';

const s = await serve(t, { env: { SANDBOX_CREATE_PER_MINUTE: '1000' } });

type Box = Awaited<ReturnType<typeof createSandbox>>;
const register = async (b: Box, body: unknown) => {
  const r = await s.req(`/sandbox/${b.uuid}/services`, jsonBody('POST', body, b.apiKey));
  if (r.status !== 201) throw new Error(`register: ${r.status} ${await r.text()}`);
  return (await r.json()) as Record<string, unknown> & { id: string };
};
const list = async (b: Box, q = '') => {
  const r = await s.req(`/sandbox/${b.uuid}/services${q}`, keyed(b.apiKey));
  if (r.status !== 200) throw new Error(`list: ${r.status} ${await r.text()}`);
  return ids(r);
};
const count = async (ns: string) => Number((await s.app.pg.query<{ n: string }>('SELECT count(*) AS n FROM services WHERE ns = $1', [ns])).rows[0]!.n);
const total = async (b: Box) => ((await (await s.req(`/sandbox/${b.uuid}/poll`)).json()) as { total: number }).total;

// fixtures of the isolation and authentication tests, made before any test runs (top-level
// code after the first t.test would run concurrently with it)
const prodPrint = await registerProduction(s, { endpoint: 'https://prod-print.example.com', capabilities: ['print'], properties: { color: 'blue' } });
const prodIso = await registerProduction(s, { endpoint: 'https://prod-iso.example.com', capabilities: ['isolation'] });
const A = await createSandbox(s, 'Alpha');
const B = await createSandbox(s, 'Beta');
const a1 = await register(A, { endpoint: 'https://a1.example.com', capabilities: ['print', 'sbonly'], properties: { color: 'red' } });
const a2 = await register(A, { endpoint: 'https://a2.example.com', capability: 'Print', properties: { color: 'blue' } });
const b1 = await register(B, { endpoint: 'https://b1.example.com', capabilities: ['print', 'sbonly'], properties: { color: 'red' } });

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

t.test('POST /sandboxes: 201 with every field; key format; only a hash stored', async (t) => {
  const r = await s.req('/sandboxes', jsonBody('POST', { name: 'Acme Labs! (Test)', location: { lat: 47.37, lon: 8.54 } }));
  t.equal(r.status, 201);
  t.match(r.headers.get('content-type'), /^application\/json/);
  const b = (await r.json()) as Record<string, unknown>;
  t.same(Object.keys(b).sort(), ['apiKey', 'createdAt', 'location', 'name', 'rateLimit', 'tier', 'uuid']);
  t.match(b.uuid, UUID_V4, 'uuid v4');
  t.equal(b.name, 'Acme Labs! (Test)');
  t.equal(b.tier, 'free', 'free by default');
  t.equal(b.rateLimit, 60, 'free = 60 requests a minute');
  t.same(b.location, { lat: 47.37, lon: 8.54 });
  t.ok(!Number.isNaN(Date.parse(b.createdAt as string)), 'createdAt is a date');
  t.match(b.createdAt, /^\d{4}-\d{2}-\d{2}T/);
  const key = b.apiKey as string;
  const m = /^([a-z0-9]{1,16})_sb_([0-9A-Za-z]+)$/.exec(key);
  t.ok(m, `key ${key.slice(0, 12)}… has the form <prefix>_sb_<base62>`);
  t.equal(m?.[1], 'acmelabstest', 'prefix derived from the name');
  t.ok((m?.[2]?.length ?? 0) >= 27, '>= 27 base62 characters: >= 160 bits');

  const rows = await s.app.pg.query<{ j: string }>('SELECT row_to_json(x)::text AS j FROM sandboxes x');
  const dump = rows.rows.map((x) => x.j).join('\n');
  t.ok(dump.includes(b.uuid as string), 'the sandbox row exists');
  t.notOk(dump.includes(key), 'the key is not in the sandboxes table');
  t.notOk(dump.includes(m?.[2] ?? key), 'nor its random part');
  const hex = Buffer.from(key).toString('hex');
  t.notOk(dump.includes(hex), 'nor its bytes in hex');

  const plain = await createSandbox(s, 'Plain');
  t.equal((plain as unknown as { location: unknown }).location, null, 'location null when not given');
  t.not(plain.apiKey, key, 'every sandbox has its own key');
  const odd = await createSandbox(s, '!!!');
  t.match(odd.apiKey, /^[a-z0-9]{1,16}_sb_[0-9A-Za-z]{27,}$/, 'a name without letters still gives a valid prefix');
  const long = await createSandbox(s, 'A Very Long Sandbox Name Indeed 123');
  t.match(long.apiKey, /^averylongsandbox_sb_/, 'prefix at most 16 characters');
  const r2 = await s.req(`/sandbox/${plain.uuid}/dashboard`);
  t.equal(r2.status, 200);
  t.notMatch(await r2.text(), plain.apiKey, 'the key is shown once: not on the dashboard');
});

t.test('POST /sandboxes: invalid bodies are 400 with the error body', async (t) => {
  const bad: [string, unknown][] = [
    ['no name', {}],
    ['empty name', { name: '' }],
    ['name of 65', { name: 'x'.repeat(65) }],
    ['name not a string', { name: 5 }],
    ['lat out of range', { name: 'n', location: { lat: 90.5, lon: 0 } }],
    ['lon out of range', { name: 'n', location: { lat: 0, lon: 180.1 } }],
    ['location without lon', { name: 'n', location: { lat: 1 } }],
    ['unknown field', { name: 'n', tier: 'enterprise' }],
  ];
  const before = Number((await s.app.pg.query<{ n: string }>('SELECT count(*) AS n FROM sandboxes')).rows[0]!.n);
  for (const [what, body] of bad) await isError(t, await s.req('/sandboxes', jsonBody('POST', body)), 400, undefined, what);
  await isError(t, await s.req('/sandboxes', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":' }), 400, undefined, 'broken JSON');
  const after = Number((await s.app.pg.query<{ n: string }>('SELECT count(*) AS n FROM sandboxes')).rows[0]!.n);
  t.equal(after, before, 'no sandbox created');
  await isError(t, await s.req('/sandboxes', jsonBody('POST', { name: 'bad\u0000name' })), 400, undefined, 'a NUL in the name');
  await isError(t, await s.req('/sandboxes', jsonBody('POST', { name: 'line\nbreak' })), 400, undefined, 'a newline in the name');
  await isError(t, await s.req('/sandboxes', jsonBody('POST', { name: '   ' })), 400, undefined, 'a blank name');
});

/** POST /sandboxes from a chosen local address (Linux routes all of 127/8 to loopback). */
function createFrom(srv: TestServer, localAddress: string, headers: Record<string, string> = {}, payload: unknown = { name: 'From ' + localAddress }): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  const u = new URL(srv.url);
  const data = JSON.stringify(payload);
  return new Promise((resolve, reject) => {
    const r = request({ host: u.hostname, port: u.port, path: '/sandboxes', method: 'POST', localAddress, agent: false, headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(data)), ...headers } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    r.on('error', reject);
    r.end(data);
  });
}

t.test('sandbox creation is throttled per client address (429 + Retry-After + error body)', async (t) => {
  // the throttle counts per minute; stay clear of a minute boundary so the burst is one window
  const sec = new Date().getUTCSeconds();
  if (sec >= 55) await new Promise((r) => setTimeout(r, (61 - sec) * 1000));
  const lim = await startTestServer({ env: { SANDBOX_CREATE_PER_MINUTE: '3' } });
  t.teardown(() => lim.close());
  const invalid: number[] = [];
  for (let i = 0; i < 4; i++) invalid.push((await createFrom(lim, '127.0.0.1', {}, { name: '' })).status);
  t.same(invalid, [400, 400, 400, 400], 'rejected bodies');
  const statuses: number[] = [];
  for (let i = 0; i < 3; i++) statuses.push((await createFrom(lim, '127.0.0.1')).status);
  t.same(statuses, [201, 201, 201], 'up to the configured number a minute (rejected bodies did not count)');
  const over = await createFrom(lim, '127.0.0.1');
  t.equal(over.status, 429, 'then 429');
  t.match(String(over.headers['retry-after']), /^[1-9]\d*$/, 'Retry-After in whole seconds');
  t.ok(Number(over.headers['retry-after']) <= 60, 'within the minute');
  t.match(String(over.headers['content-type']), /^application\/json/);
  const body = JSON.parse(over.body) as { error: { code: string; message: string } };
  t.same(Object.keys(body.error).sort(), ['code', 'message']);
  const spoof = await createFrom(lim, '127.0.0.1', { 'x-forwarded-for': '192.0.2.55', forwarded: 'for=192.0.2.55' });
  t.equal(spoof.status, 429, 'X-Forwarded-For does not make a new client');
  const other = await createFrom(lim, '127.0.0.2');
  t.equal(other.status, 201, 'another address is not throttled');
});

// ---- the five isolation rules (issue 3, item 4), one test each ----
t.test('isolation 1: a sandbox service is absent from anonymous search', async (t) => {
  t.same(await ids(await s.req('/services?capability=sbonly')), [], 'a capability only sandboxes have');
  t.same(await ids(await s.req('/services?capability=print')), [prodPrint.id], 'a shared capability: production only');
  const all = await ids(await s.req('/services?limit=1000'));
  for (const x of [a1, a2, b1]) t.notOk(all.includes(x.id), 'not in the unfiltered list');
  t.same(await ids(await s.req('/services?property=color:red')), []);
});

t.test('isolation 2: production is absent from the sandbox list and sandbox searches', async (t) => {
  t.same(await list(A), [a1.id, a2.id], 'list: the sandbox services only');
  t.same(await list(A, '?capability=print'), [a1.id, a2.id], 'a capability production has too');
  t.same(await ids(await s.req('/services?capability=isolation')), [prodIso.id], 'production has it');
  t.same(await list(A, '?capability=isolation'), [], 'a capability only production has');
  t.same(await list(A, '?property=color:blue'), [a2.id], 'a property production has too');
  t.notOk((await list(B)).includes(a1.id), 'nor another sandbox');
});

t.test('isolation 3: sandbox search by capability returns the sandbox services', async (t) => {
  t.same(await list(A, '?capability=sbonly'), [a1.id]);
  t.same(await list(B, '?capability=sbonly'), [b1.id]);
  t.same(await list(A, '?capability=print&capability=sbonly'), [a1.id]);
});

t.test('isolation 4: capability + property excludes a different value of the same key', async (t) => {
  t.same(await list(A, '?capability=print&property=color:red'), [a1.id]);
  t.same(await list(A, '?capability=print&property=color:blue'), [a2.id]);
  t.same(await list(A, '?capability=print&property=color:Red'), [], 'values are case-sensitive');
});

t.test('isolation 5: /services with a valid key is sandbox-only', async (t) => {
  const r = await s.req('/services?capability=print', keyed(A.apiKey));
  t.equal(r.status, 200);
  t.match(r.headers.get('cache-control') ?? '', /private/, 'Cache-Control: private');
  t.notMatch(r.headers.get('cache-control') ?? '', /public/);
  t.match(r.headers.get('vary') ?? '', /Authorization/i, 'Vary: Authorization');
  t.same(await ids(r), [a1.id, a2.id]);
  t.same(await ids(await s.req('/services', keyed(A.apiKey))), [a1.id, a2.id], 'unfiltered');
  t.same(await ids(await s.req('/services?capability=isolation', keyed(A.apiKey))), [], 'no production');
  t.same(await ids(await s.req('/services?capability=print', keyed(B.apiKey))), [b1.id], 'the other key, the other sandbox');
  t.match((await s.req('/services', keyed(A.apiKey))).headers.get('ratelimit-policy') ?? '', /\S/, 'counted: rate-limit headers');
});

t.test('a malformed or unknown key on /services is anonymous production, never an error', async (t) => {
  const keys = [
    'x_sb_0123456789abcdefghijABCDEFGHIJ',
    'x_sb_short',
    A.apiKey.slice(0, -1) + (A.apiKey.endsWith('a') ? 'b' : 'a'),
    A.apiKey.replace('_sb_', '_xx_'),
    'alpha_sb_' + 'Z'.repeat(32),
    'garbage',
    '',
  ];
  for (const k of keys) {
    const r = await s.req('/services?capability=print', { headers: { authorization: `Bearer ${k}` } });
    t.equal(r.status, 200, `key ${JSON.stringify(k.slice(0, 10))}…`);
    t.same(await ids(r), [prodPrint.id], 'production results');
  }
  const r = await s.req('/services?capability=print', { headers: { authorization: A.apiKey } });
  t.same(await ids(r), [prodPrint.id], 'a key without "Bearer" is not a key');
  const q = await s.req(`/services?capability=print&apiKey=${A.apiKey}`);
  t.same(await ids(q.status === 302 ? await s.req(q.headers.get('location')!) : q), [prodPrint.id], 'a key in the query is not a key');
});

// ---- authentication of sandbox routes ----
t.test('sandbox routes: missing, malformed or wrong key -> 401 JSON and nothing written', async (t) => {
  const base = `/sandbox/${A.uuid}/services`;
  const before = await count(A.uuid);
  const auths: [string, Record<string, string>][] = [
    ['no key', {}],
    ['Bearer without a key', { authorization: 'Bearer' }],
    ['malformed', { authorization: 'Bearer not-a-key' }],
    ['x_sb_ shape', { authorization: 'Bearer x_sb_0123456789abcdefghijABCDEFGHIJ' }],
    ['right prefix, wrong random', { authorization: `Bearer ${A.apiKey.slice(0, -3)}XYZ` }],
    ['key without Bearer', { authorization: A.apiKey }],
    ['Basic', { authorization: 'Basic ' + Buffer.from('u:' + A.apiKey).toString('base64') }],
    ['X-API-Key header', { 'x-api-key': A.apiKey }],
    ['cookie', { cookie: `apiKey=${A.apiKey}` }],
    ["another sandbox's key", { authorization: `Bearer ${B.apiKey}` }],
  ];
  const body = JSON.stringify({ endpoint: 'https://intruder.example.com', capability: 'intrude' });
  for (const [what, h] of auths) {
    const hdrs = { 'content-type': 'application/json', ...h };
    await isError(t, await s.req(base, { method: 'POST', headers: hdrs, body }), 401, 'UNAUTHORIZED', `${what}: POST`);
    await isError(t, await s.req(base, { headers: h }), 401, 'UNAUTHORIZED', `${what}: GET list`);
    await isError(t, await s.req(`${base}/${a1.id}`, { headers: h }), 401, 'UNAUTHORIZED', `${what}: GET one`);
    await isError(t, await s.req(`${base}/${a1.id}`, { method: 'PATCH', headers: hdrs, body: '{"deprecated":true}' }), 401, 'UNAUTHORIZED', `${what}: PATCH`);
    await isError(t, await s.req(`${base}/${a1.id}`, { method: 'DELETE', headers: h }), 401, 'UNAUTHORIZED', `${what}: DELETE`);
    await isError(t, await s.req(`${base}/${a1.id}/replacements`, { headers: h }), 401, 'UNAUTHORIZED', `${what}: GET replacements`);
    await isError(t, await s.req(`${base}/${a1.id}/replacements`, { method: 'POST', headers: hdrs, body: JSON.stringify({ serviceId: a2.id }) }), 401, 'UNAUTHORIZED', `${what}: POST replacements`);
  }
  const q = await s.req(`${base}?apiKey=${A.apiKey}`);
  await isError(t, q, 401, 'UNAUTHORIZED', 'key in the query string');
  t.equal(await count(A.uuid), before, 'no service written');
  const a1now = (await (await s.req(`${base}/${a1.id}`, keyed(A.apiKey))).json()) as Record<string, unknown>;
  t.equal(a1now.deprecated, false, 'nothing patched');
  t.same(await ids(await s.req(`${base}/${a1.id}/replacements`, keyed(A.apiKey))), [], 'no candidate added');
  await isError(t, await s.req('/sandbox/00000000-0000-4000-8000-000000000000/services', keyed(A.apiKey)), 401, 'UNAUTHORIZED', 'unknown uuid');
  await isError(t, await s.req('/sandbox/not-a-uuid/services', keyed(A.apiKey)), 401, 'UNAUTHORIZED', 'malformed uuid');
  // an invalid body from the wrong key: still 401, not 400 (the key is checked first)
  await isError(t, await s.req(base, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${B.apiKey}` }, body: '{' }), 401, 'UNAUTHORIZED', 'bad body, wrong key');
});

t.test('a 401 is not counted against the sandbox it was aimed at', async (t) => {
  const before = await total(A);
  await (await s.req(`/sandbox/${A.uuid}/services`, keyed(B.apiKey))).body?.cancel();
  await (await s.req(`/sandbox/${A.uuid}/services`)).body?.cancel();
  t.equal(await total(A), before);
});

// ---- the sandbox registry ----
t.test('register: capability shorthand and capabilities; 201 the service', async (t) => {
  const C = await createSandbox(s, 'Gamma');
  const r = await s.req(`/sandbox/${C.uuid}/services`, jsonBody('POST', { endpoint: 'https://g1.example.com', capability: 'Weather', properties: { Unit: 'C' }, iot: { deviceClasses: ['station'], protocols: ['http'] } }, C.apiKey));
  t.equal(r.status, 201);
  t.match(r.headers.get('content-type'), /^application\/json/);
  t.match(r.headers.get('cache-control') ?? '', /no-store|private/, 'not publicly cacheable');
  const g1 = (await r.json()) as Record<string, unknown> & { id: string };
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
