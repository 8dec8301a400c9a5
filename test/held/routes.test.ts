// Held requests on every route that holds them (contract, "Waiting for a change"): a matching
// If-None-Match with `Prefer: wait=N` is held until a write changes the answer (200, the new
// body and ETag, Preference-Applied) or the wait ends (304, Preference-Applied); without a
// matching If-None-Match the request is answered at once, without Preference-Applied; a wait
// above WAIT_MAX_SECONDS applies the maximum; a keyed held request counts once.
import t, { type Test } from 'tap';
import { ids, jsonBody } from '../helpers/checks.js';
import { createSandbox, registerProduction, serve } from '../helpers/server.js';
import { etagOf, heldCount, holdOn } from '../helpers/held.js';

const s = await serve(t, { env: { LEASE_SWEEP_MS: '60000', WAIT_MAX_SECONDS: '3' } });
const sb = await createSandbox(s);
const auth = { authorization: `Bearer ${sb.apiKey}` };
const sbBase = `/sandbox/${sb.uuid}/services`;

const register = async (body: Record<string, unknown>) => {
  const r = await s.req(sbBase, jsonBody('POST', body, sb.apiKey));
  if (r.status !== 201) throw new Error(`register: ${r.status} ${await r.text()}`);
  return (await r.json()) as { id: string };
};

/** Held on `path` (headers `h`), then woken by `write`: a 200 with a new ETag and Preference-Applied. */
async function wokenBy(t: Test, path: string, h: Record<string, string>, write: () => Promise<unknown>): Promise<Response> {
  const etag = await etagOf(s, path, h);
  const held = holdOn(s, path, etag, 3, h);
  await heldCount(s, 1);
  t.notOk(held.settled(), 'held: no answer before the write');
  await write();
  const r = await held.answer;
  t.equal(r.status, 200, `${path}: woken with a 200`);
  t.not(r.headers.get('etag'), etag, 'a new ETag');
  t.equal(r.headers.get('preference-applied'), 'wait=3', 'Preference-Applied: the wait applied');
  t.equal(s.app.held.size, 0, 'nothing held any more');
  return r;
}

/** Held on `path` and answered 304 when the wait ends, with nothing changed. */
async function expires(t: Test, path: string, h: Record<string, string> = {}): Promise<void> {
  const etag = await etagOf(s, path, h);
  const r = await holdOn(s, path, etag, 1, h).answer;
  t.equal(r.status, 304, `${path}: 304 when the wait ends`);
  t.equal(r.headers.get('etag'), etag, 'the same ETag');
  t.equal(r.headers.get('preference-applied'), 'wait=1');
  t.equal(await r.text(), '', 'no body');
}

t.test('GET /services: woken by a registration that joins the answer; 304 at the end of the wait', async (t) => {
  await registerProduction(s, { endpoint: 'https://a1.example.com', capabilities: ['route-a'] });
  const path = '/services?capability=route-a';
  let added = '';
  const r = await wokenBy(t, path, {}, async () => (added = (await registerProduction(s, { endpoint: 'https://a2.example.com', capabilities: ['route-a'] })).id));
  t.ok((await ids(r)).includes(added), 'the new body has the write');
  t.equal(r.headers.get('cache-control'), `public, max-age=${s.cfg.searchMaxAge}`, 'the route\'s own headers');
  t.equal(r.headers.get('vary'), 'Authorization');
  await expires(t, path);
});

t.test('GET /sandbox/{uuid}/services and GET /services with the key: woken by a sandbox write', async (t) => {
  await register({ endpoint: 'https://s1.example.com', capabilities: ['route-s'] });
  const r = await wokenBy(t, `${sbBase}?capability=route-s`, auth, () => register({ endpoint: 'https://s2.example.com', capabilities: ['route-s'] }));
  t.equal((await ids(r)).length, 2);
  t.equal(r.headers.get('cache-control'), 'private, no-store');
  t.match(r.headers.get('ratelimit') ?? '', /^"sandbox";r=\d+;t=\d+$/, 'the rate headers of its arrival');
  const k = await wokenBy(t, '/services?capability=route-s', auth, () => register({ endpoint: 'https://s3.example.com', capabilities: ['route-s'] }));
  t.equal((await ids(k)).length, 3, 'the keyed search of GET /services is the sandbox\'s');
  await expires(t, `${sbBase}?capability=route-s`, auth);
});

t.test('GET /devices: woken by a new IoT profile', async (t) => {
  const iot = { deviceClasses: ['held-sensor'], protocols: ['mqtt'] };
  await registerProduction(s, { endpoint: 'https://d1.example.com', capabilities: ['route-d'], iot });
  const r = await wokenBy(t, '/devices?deviceClass=held-sensor', {}, () => registerProduction(s, { endpoint: 'https://d2.example.com', capabilities: ['route-d'], iot }));
  t.equal(((await r.json()) as unknown[]).length, 2);
  await expires(t, '/devices?deviceClass=held-sensor');
});

t.test('GET /services/{id}: woken by a PATCH of the service; a DELETE answers 404', async (t) => {
  const a = await registerProduction(s, { endpoint: 'https://i1.example.com', capabilities: ['route-i'] });
  const path = `/services/${a.id}`;
  const r = await wokenBy(t, path, {}, () => s.admin('PATCH', `/admin/api/services/${a.id}`, { properties: { zone: 'b' } }));
  t.same(((await r.json()) as { properties: unknown }).properties, { zone: 'b' }, 'the patched document');
  t.equal(r.headers.get('cache-control'), `public, max-age=${s.cfg.discoveryMaxAge}`);
  await expires(t, path);
  const etag = await etagOf(s, path);
  const held = holdOn(s, path, etag, 3);
  await heldCount(s, 1);
  t.equal((await s.admin('DELETE', `/admin/api/services/${a.id}`)).status, 204);
  const gone = await held.answer;
  t.equal(gone.status, 404, 'deleted: the answer is 404 now');
  t.equal(((await gone.json()) as { error: { code: string } }).error.code, 'NOT_FOUND');
  t.equal(gone.headers.get('cache-control'), 'no-store', 'an error is not cached');
  t.equal(gone.headers.get('preference-applied'), 'wait=3');
});

t.test('GET /sandbox/{uuid}/services/{id}: woken by a PATCH', async (t) => {
  const a = await register({ endpoint: 'https://j1.example.com', capabilities: ['route-j'] });
  const path = `${sbBase}/${a.id}`;
  const r = await wokenBy(t, path, auth, () => s.req(path, jsonBody('PATCH', { deprecated: true }, sb.apiKey)));
  t.equal(((await r.json()) as { deprecated: boolean }).deprecated, true);
  t.ok(r.headers.get('deprecation'), 'the new document\'s deprecation headers');
  await expires(t, path, auth);
});

t.test('answered at once, without Preference-Applied: no If-None-Match, or one that does not match', async (t) => {
  await registerProduction(s, { endpoint: 'https://n1.example.com', capabilities: ['route-n'] });
  const path = '/services?capability=route-n';
  const etag = await etagOf(s, path);
  for (const h of [{ prefer: 'wait=3' }, { prefer: 'wait=3', 'if-none-match': '"other"' }] as Record<string, string>[]) {
    const r = await s.req(path, { headers: h });
    t.equal(r.status, 200, `${JSON.stringify(h)}: 200 at once`);
    t.equal(r.headers.get('etag'), etag);
    t.equal(r.headers.get('preference-applied'), null, 'no Preference-Applied');
    await r.arrayBuffer();
  }
  for (const prefer of ['wait=0', 'wait=abc', 'wait', 'respond-async', 'wait=-1', 'wait=1.5']) {
    const r = await s.req(path, { headers: { prefer, 'if-none-match': etag } });
    t.equal(r.status, 304, `Prefer: ${prefer}: a plain 304 at once`);
    t.equal(r.headers.get('preference-applied'), null);
  }
  t.equal(s.app.held.size, 0, 'none held');
});

t.test('a wait above WAIT_MAX_SECONDS applies the maximum; other preferences and a quoted value are read per RFC 7240', async (t) => {
  await registerProduction(s, { endpoint: 'https://m1.example.com', capabilities: ['route-m'] });
  const path = '/services?capability=route-m';
  const etag = await etagOf(s, path);
  const r = await holdOn(s, path, etag, 'respond-async, WAIT = "99999999999999999999"; x=1').answer;
  t.equal(r.status, 304);
  t.equal(r.headers.get('preference-applied'), 'wait=3', 'capped at WAIT_MAX_SECONDS (3 here)');
});

t.test('a keyed held request counts once against the sandbox\'s rate limit, when it arrives', async (t) => {
  await register({ endpoint: 'https://c1.example.com', capabilities: ['route-c'] });
  const path = `${sbBase}?capability=route-c`;
  const etag = await etagOf(s, path, auth);
  const total = async () => ((await (await s.req(`/sandbox/${sb.uuid}/poll`)).json()) as { total: number }).total;
  const before = await total();
  const held = holdOn(s, path, etag, 3, auth);
  await heldCount(s, 1);
  const write = await s.req(sbBase, jsonBody('POST', { endpoint: 'https://c2.example.com', capabilities: ['route-c'] }, sb.apiKey));
  t.equal(write.status, 201);
  t.equal((await held.answer).status, 200);
  t.equal(await total(), before + 2, 'the held request and the write: two, whatever the wait');
});

t.test('HEAD is held too', async (t) => {
  await registerProduction(s, { endpoint: 'https://h1.example.com', capabilities: ['route-h'] });
  const path = '/services?capability=route-h';
  const etag = await etagOf(s, path);
  const r = await s.req(path, { method: 'HEAD', headers: { 'if-none-match': etag, prefer: 'wait=1' } });
  t.equal(r.status, 304);
  t.equal(r.headers.get('preference-applied'), 'wait=1');
});

