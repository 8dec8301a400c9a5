// Held requests through the shipped proxy (nginx, deploy/nginx.conf): a request that prefers
// a wait passes through uncached, its If-None-Match reaching the server even where nginx
// holds the answer in its cache (so nginx never answers it itself), is held by the server and
// woken by a write, or answered 304 when its wait ends; the proxy stores nothing of it.
import t from 'tap';
import { registerProduction, serve } from '../helpers/server.js';
import { http, startProxy } from '../helpers/proxy.js';
import { heldCount } from '../helpers/held.js';

const s = await serve(t, { env: { TRUSTED_PROXIES: '127.0.0.1', SEARCH_MAX_AGE: '600', DISCOVERY_MAX_AGE: '600', WAIT_MAX_SECONDS: '30', LEASE_SWEEP_MS: '60000' } });
const proxy = await startProxy(s.server.port, { WAIT_MAX_SECONDS: '30' });
t.teardown(() => proxy.close());
const P = proxy.port;

t.test('a held search through the proxy: past its cache, held by the server, woken by a write', async (t) => {
  await registerProduction(s, { endpoint: 'https://px1.example.com', capabilities: ['proxied'] });
  const path = '/services?capability=proxied';
  const first = await http(P, path);
  t.equal(first.status, 200);
  const etag = String(first.headers['etag']);
  t.equal((await http(P, path)).headers['x-proxy-cache'], 'HIT', 'the proxy caches the search');
  const plain = await http(P, path, { headers: { 'if-none-match': etag } });
  t.equal(plain.status, 304, 'a plain conditional request: 304');
  t.equal(plain.headers['x-proxy-cache'], 'HIT', 'answered by the proxy from its cache');
  const held = http(P, path, { headers: { 'if-none-match': etag, prefer: 'wait=30' } });
  await heldCount(s, 1); // the server holds it: nginx neither answered it from its cache nor dropped its If-None-Match
  await registerProduction(s, { endpoint: 'https://px2.example.com', capabilities: ['proxied'] });
  const r = await held;
  t.equal(r.status, 200, 'woken');
  t.not(r.headers['etag'], etag, 'with the new ETag');
  t.equal(r.headers['preference-applied'], 'wait=30');
  t.equal(r.headers['x-proxy-cache'], 'BYPASS', 'past the cache');
  t.equal((JSON.parse(r.body) as unknown[]).length, 2, 'and the new body');
  // the held answer was not stored: the cache still has the old entry (SEARCH_MAX_AGE 600 s)
  const cached = await http(P, path);
  t.equal(cached.headers['x-proxy-cache'], 'HIT');
  t.equal(cached.headers['etag'], etag, 'the entry stored before, not the held request\'s answer');
});

t.test('through the proxy, a wait that ends is a 304 with Preference-Applied; a single read is held too', async (t) => {
  const a = await registerProduction(s, { endpoint: 'https://px3.example.com', capabilities: ['proxied-one'] });
  const path = `/services/${a.id}`;
  const etag = String((await http(P, path)).headers['etag']);
  const r = await http(P, path, { headers: { 'if-none-match': etag, prefer: 'wait=1' } });
  t.equal(r.status, 304);
  t.equal(r.headers['preference-applied'], 'wait=1');
  t.equal(r.headers['etag'], etag);
  const held = http(P, path, { headers: { 'if-none-match': etag, prefer: 'wait=30' } });
  await heldCount(s, 1);
  t.equal((await s.admin('PATCH', `/admin/api/services/${a.id}`, { properties: { k: 'v' } })).status, 200);
  const woken = await held;
  t.equal(woken.status, 200);
  t.same((JSON.parse(woken.body) as { properties: unknown }).properties, { k: 'v' });
});

t.test('a sandbox\'s held read through the proxy', async (t) => {
  const sb = await http(s.server.port, '/sandboxes', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'proxied' }) });
  const { uuid, apiKey } = JSON.parse(sb.body) as { uuid: string; apiKey: string };
  const auth = { authorization: `Bearer ${apiKey}` };
  const base = `/sandbox/${uuid}/services`;
  const reg = (n: number) => http(P, base, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ endpoint: `https://psb${n}.example.com`, capabilities: ['psb'] }) });
  t.equal((await reg(1)).status, 201);
  const etag = String((await http(P, `${base}?capability=psb`, { headers: auth })).headers['etag']);
  const held = http(P, `${base}?capability=psb`, { headers: { ...auth, 'if-none-match': etag, prefer: 'wait=30' } });
  await heldCount(s, 1);
  t.equal((await reg(2)).status, 201);
  const r = await held;
  t.equal(r.status, 200);
  t.equal((JSON.parse(r.body) as unknown[]).length, 2);
});
