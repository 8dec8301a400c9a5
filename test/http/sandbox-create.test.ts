// Sandbox creation (issue 3, contract "Sandbox", "Sandbox API key"): POST /sandboxes answers
// every field and a key of the documented form, stores only its hash, refuses invalid bodies,
// and is throttled per client address.
import t from 'tap';
import { isError, jsonBody } from '../helpers/checks.js';
import { createSandbox, type TestServer, serve } from '../helpers/server.js';
import { serveSandboxes } from '../helpers/sandboxes.js';
import { http, type Answer } from '../helpers/proxy.js';
import { freshMinute } from '../helpers/wait.js';

const { s } = await serveSandboxes(t);

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
function createFrom(srv: TestServer, localAddress: string, headers: Record<string, string> = {}, payload: unknown = { name: 'From ' + localAddress }): Promise<Answer> {
  const body = JSON.stringify(payload);
  return http(srv.server.port, '/sandboxes', { method: 'POST', from: localAddress, body, headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers } });
}

t.test('sandbox creation is throttled per client address (429 + Retry-After + error body)', async (t) => {
  // the throttle counts per minute; stay clear of a minute boundary so the burst is one window
  await freshMinute(5000);
  const lim = await serve(t, { env: { SANDBOX_CREATE_PER_MINUTE: '3' } });
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
