// The shipped reverse proxy, for real: nginx with deploy/nginx.conf (scripts/proxy.sh) in
// front of a test server. HTTP/1.0 clients are answered (the server alone closes their
// connections); the shared cache serves the second anonymous discovery read and never a
// keyed one; 429s pass through with their headers; keep-alive holds under 50 concurrent
// requests; /metrics and /admin/ are refused; the server believes X-Forwarded-For only from
// the proxy.
import t, { type Test } from 'tap';
import { connect } from 'node:net';
import { Agent } from 'node:http';
import { registerProduction, serve } from '../helpers/server.js';
import { http, socketDir, startProxy } from '../helpers/proxy.js';
import fc from 'fast-check';
import { rawClient } from '../helpers/raw-client.js';
import { exchange } from '../helpers/raw-socket.js';
import { waitFor } from '../helpers/wait.js';

// nginx on the server's proxy socket, as `make run` + `make proxy` (test/proxy/trust.test.ts)
const sockets = socketDir(t.teardown.bind(t));
const s = await serve(t, {
  env: { PROXY_SOCKET_DIR: sockets, TIERS: 'free=3,pro=600,enterprise=6000', SANDBOX_CREATE_PER_MINUTE: '1', SEARCH_MAX_AGE: '600', DISCOVERY_MAX_AGE: '600' },
});
const proxy = await startProxy(s.server.port, { PROXY_ADMIN_ALLOW: '127.0.0.1', PROXY_SOCKET_DIR: sockets });
t.teardown(() => proxy.close());
const P = proxy.port;

let nextAddress = 10;
/** A sandbox made straight on the server from an address of its own (creation is throttled per address). */
async function createSandbox(name: string): Promise<{ uuid: string; apiKey: string }> {
  const r = await http(s.server.port, '/sandboxes', { method: 'POST', from: `127.0.0.${nextAddress++}`, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name }) });
  if (r.status !== 201) throw new Error(`sandbox create failed: ${r.status} ${r.body}`);
  return JSON.parse(r.body) as { uuid: string; apiKey: string };
}

function isError(t: Test, r: { status: number; headers: Record<string, unknown>; body: string }, status: number, code?: string): void {
  t.equal(r.status, status);
  t.match(String(r.headers['content-type']), /^application\/json/, `${status} is JSON`);
  const b = JSON.parse(r.body) as { error?: { code?: string; message?: string } };
  t.type(b.error?.message, 'string', 'the contract error body');
  if (code) t.equal(b.error?.code, code);
}

t.test('an HTTP/1.0 request is answered 200 through the proxy', async (t) => {
  const out = await exchange(P, 'GET /livez HTTP/1.0\r\n\r\n');
  t.match(out, /^HTTP\/1\.1 200 /, 'answered');
  t.match(out, /\r\n\r\n\{"status":"ok"\}$/, 'with the body');
  const svc = await registerProduction(s, { endpoint: 'https://h10.example.com', capability: 'http10' });
  const search = await exchange(P, 'GET /services?capability=http10 HTTP/1.0\r\n\r\n');
  t.match(search, /^HTTP\/1\.1 200 /);
  t.ok(search.includes(svc.id), 'a search, answered in full');
  const withHost = await exchange(P, `GET /services/${svc.id} HTTP/1.0\r\nHost: registry.example\r\n\r\n`);
  t.match(withHost, /^HTTP\/1\.1 200 /, 'with a Host header too');
});

t.test('the second anonymous replacements read is a proxy cache HIT', async (t) => {
  const old = await registerProduction(s, { endpoint: 'https://old.example.com', capability: 'legacy', deprecated: true });
  const c = await registerProduction(s, { endpoint: 'https://new.example.com', capability: 'legacy' });
  t.equal((await s.admin('POST', `/admin/api/services/${old.id}/replacements`, { serviceId: c.id })).status, 201);
  const path = `/services/${old.id}/replacements`;
  const first = await http(P, path);
  t.equal(first.status, 200);
  t.equal(first.headers['x-proxy-cache'], 'MISS');
  const second = await http(P, path, { headers: { cookie: 'a=b', 'x-anything': '1' } });
  t.equal(second.status, 200);
  t.equal(second.headers['x-proxy-cache'], 'HIT', 'served by nginx');
  t.equal(second.body, first.body, 'the same bytes');
  t.match(String(second.headers['cache-control']), /public, max-age=\d+/);
  t.ok(JSON.parse(second.body).some((x: { id: string }) => x.id === c.id));
  const head = await http(P, path, { method: 'HEAD' });
  t.equal(head.headers['x-proxy-cache'], 'HIT', 'HEAD is answered from the same entry');
  t.equal(head.body, '');
  // the service itself too
  t.equal((await http(P, `/services/${old.id}`)).headers['x-proxy-cache'], 'MISS');
  t.equal((await http(P, `/services/${old.id}`)).headers['x-proxy-cache'], 'HIT');
  // a request with Authorization is never answered from the cache (the answer is the same:
  // these endpoints ignore credentials, but the proxy cannot know that)
  const keyed = await http(P, path, { headers: { authorization: 'Bearer whatever' } });
  t.equal(keyed.status, 200);
  t.equal(keyed.headers['x-proxy-cache'], 'BYPASS');
});

t.test('a keyed search never comes from the proxy cache and gets its sandbox answer', async (t) => {
  const prod = await registerProduction(s, { endpoint: 'https://prod.example.com', capability: 'shared-cap' });
  const sb = await createSandbox('Proxy Cache');
  const auth = { authorization: `Bearer ${sb.apiKey}` };
  const reg = await s.req(`/sandbox/${sb.uuid}/services`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ endpoint: 'https://sb.example.com', capability: 'shared-cap' }) });
  t.equal(reg.status, 201);
  const sbSvc = (await reg.json()) as { id: string };
  const path = '/services?capability=shared-cap';
  const a1 = await http(P, path);
  t.equal(a1.headers['x-proxy-cache'], 'MISS');
  const a2 = await http(P, path);
  t.equal(a2.headers['x-proxy-cache'], 'HIT', 'anonymous searches are cached');
  const ids = (b: string) => (JSON.parse(b) as { id: string }[]).map((x) => x.id);
  t.same(ids(a2.body), [prod.id]);
  for (let i = 0; i < 2; i++) {
    const k = await http(P, path, { headers: auth });
    t.equal(k.status, 200);
    t.equal(k.headers['x-proxy-cache'], 'BYPASS', `keyed read ${i}: not from the cache`);
    t.same(ids(k.body), [sbSvc.id], `keyed read ${i}: the sandbox's services only`);
    t.match(String(k.headers['cache-control']), /private/);
  }
  // and the keyed answers were not stored in place of the anonymous one
  const a3 = await http(P, path);
  t.equal(a3.headers['x-proxy-cache'], 'HIT');
  t.same(ids(a3.body), [prod.id]);
  // a wrong key is an anonymous caller for the server, but the proxy still does not cache it
  const bad = await http(P, path, { headers: { authorization: 'Bearer nope_sb_' + 'x'.repeat(38) } });
  t.equal(bad.headers['x-proxy-cache'], 'BYPASS');
  t.same(ids(bad.body), [prod.id]);
});

t.test('429s pass through with their headers and body', async (t) => {
  const sb = await createSandbox('Proxy Limits');
  const auth = { authorization: `Bearer ${sb.apiKey}` };
  const statuses: number[] = [];
  let last = null as Awaited<ReturnType<typeof http>> | null;
  for (let i = 0; i < 4; i++) {
    last = await http(P, `/sandbox/${sb.uuid}/services`, { headers: auth });
    statuses.push(last.status);
  }
  t.same(statuses, [200, 200, 200, 429], 'free = 3 a minute');
  isError(t, last!, 429, 'RATE_LIMITED');
  t.match(String(last!.headers['retry-after']), /^\d+$/);
  t.equal(last!.headers['ratelimit-policy'], '"sandbox";q=3;w=60');
  t.match(String(last!.headers.ratelimit), /^"sandbox";r=0;t=\d+$/);
});

t.test('50 concurrent keep-alive requests all succeed', async (t) => {
  const agent = new Agent({ keepAlive: true, maxSockets: 10 });
  t.teardown(() => agent.destroy());
  const svc = await registerProduction(s, { endpoint: 'https://ka.example.com', capability: 'keepalive' });
  const paths = ['/livez', `/services/${svc.id}`, '/services?capability=keepalive', '/devices', '/openapi.json'];
  const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => http(P, paths[i % paths.length]!, { agent })));
  t.same(answers.map((a) => a.status), new Array(50).fill(200), 'every one 200');
  t.ok(answers.every((a) => a.headers.connection !== 'close'), 'connections kept alive');
  // and once more on the same (reused) sockets
  const again = await Promise.all(Array.from({ length: 50 }, (_, i) => http(P, paths[i % paths.length]!, { agent })));
  t.same(again.map((a) => a.status), new Array(50).fill(200));
});

t.test('/metrics and /admin/ are not exposed', async (t) => {
  for (const path of ['/metrics', '/metrics/', '/metrics?x=1']) isError(t, await http(P, path), 404, 'NOT_FOUND');
  // /admin/ from an address not on PROXY_ADMIN_ALLOW: refused by nginx, never reaching the server
  for (const path of ['/admin/', '/admin/api/stats', '/admin/session']) isError(t, await http(P, path, { from: '127.0.0.2' }), 403, 'FORBIDDEN');
  const login = await http(P, '/admin/session', { method: 'POST', from: '127.0.0.2', headers: { 'content-type': 'application/json' }, body: '{"apiKey":"x"}' });
  isError(t, login, 403, 'FORBIDDEN');
  // from an allowed address it is the server's admin
  const ok = await http(P, '/admin/api/stats', { from: '127.0.0.1', headers: { authorization: `Bearer ${s.cfg.adminApiKey}` } });
  t.equal(ok.status, 200);
  isError(t, await http(P, '/admin/api/stats', { from: '127.0.0.1' }), 401, 'UNAUTHORIZED');
});

t.test('the server takes the client address from the proxy, and only from it', async (t) => {
  const create = (port: number, from: string, headers: Record<string, string> = {}) =>
    http(port, '/sandboxes', { method: 'POST', from, headers: { 'content-type': 'application/json', ...headers }, body: '{"name":"addr"}' });
  // SANDBOX_CREATE_PER_MINUTE=1 per client address
  t.equal((await create(P, '127.0.0.3')).status, 201, '127.0.0.3 through the proxy');
  const again = await create(P, '127.0.0.3');
  isError(t, again, 429, 'RATE_LIMITED');
  t.match(String(again.headers['retry-after']), /^\d+$/, 'Retry-After passes through');
  t.equal((await create(P, '127.0.0.4')).status, 201, 'another client through the same proxy has its own allowance');
  // a client cannot pick its address through the proxy: nginx appends the real one
  isError(t, await create(P, '127.0.0.3', { 'x-forwarded-for': '10.9.9.9' }), 429, 'RATE_LIMITED');
  // straight to the server's port, even from loopback: X-Forwarded-For is ignored
  t.equal((await create(s.server.port, '127.0.0.5', { 'x-forwarded-for': '127.0.0.4' })).status, 201, 'spoofed header ignored');
  isError(t, await create(s.server.port, '127.0.0.5', { 'x-forwarded-for': '10.1.1.1' }), 429, 'RATE_LIMITED');
  t.equal((await create(s.server.port, '127.0.0.1', { 'x-forwarded-for': '127.0.0.6' })).status, 201, 'from 127.0.0.1, where nginx used to connect from');
  isError(t, await create(s.server.port, '127.0.0.1', { 'x-forwarded-for': '127.0.0.7' }), 429, 'RATE_LIMITED');
  t.equal((await create(P, '127.0.0.6')).status, 201, 'the address it named kept its allowance');
});

t.test('the change feed streams through unbuffered', async (t) => {
  const out: string[] = [];
  const sock = connect(P, '127.0.0.1');
  t.teardown(() => sock.destroy());
  sock.on('data', (d) => out.push(d.toString()));
  sock.write('GET /services/changes HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n');
  const seen = (re: RegExp) => waitFor(String(re), () => re.test(out.join('')), 10_000, 50).then(() => true, () => false);
  t.ok(await seen(/^HTTP\/1\.1 200 [\s\S]*text\/event-stream[\s\S]*retry: 2000/), 'the stream opened');
  const svc = await registerProduction(s, { endpoint: 'https://feed.example.com', capability: 'feed' });
  t.ok(await seen(new RegExp(svc.id)), 'an event arrives while the stream stays open');
});

t.test('hostile requests through the proxy: never a 5xx, always the JSON error body', async (t) => {
  // what nginx itself refuses (it cannot parse them) and what it passes on
  const fixed = [
    'BLAH\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n',
    `GET /${'x'.repeat(9000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
    `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'y'.repeat(9000)}\r\n\r\n`,
    'GET /services/%ZZ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    'GET /%00 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    'GET /../../etc/passwd HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    'GET /services/changes?lastEventId=%ZZ HTTP/1.0\r\n\r\n',
    'GET /_errors/503.json HTTP/1.0\r\n\r\n',
    'PROPFIND /services HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', // uWS would close without an answer
    'PURGE /livez HTTP/1.0\r\n\r\n',
  ];
  for (const req of fixed) {
    const out = await exchange(P, req);
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(out)?.[1] ?? 0);
    const what = JSON.stringify(req.slice(0, 50));
    t.ok(status >= 400 && status < 500, `${what}: ${status}`);
    t.match(out, /\r\nContent-Type: application\/json/, `${what}: JSON`);
    const body = out.slice(out.indexOf('\r\n\r\n') + 4);
    t.match(JSON.parse(body), { error: { code: String, message: String } }, `${what}: the error body`);
  }
  // and generated: paths, queries and header values on the wire as they are
  const c = rawClient(t, P);
  const bytes = fc.uint8Array({ maxLength: 30 }).map((b) => Buffer.from(b.filter((x) => x > 0x20 && x !== 0x7f && x !== 0x23 && x !== 0x3f)).toString('latin1'));
  const piece = fc.oneof(fc.constantFrom('%', '%ZZ', '%00', '%C0%AE', '%ED%A0%80', '..', '%2e%2e', '/', 'services', 'admin', 'metrics', 'changes', 'replacements', 'sandbox'), bytes);
  const seen = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(fc.array(piece, { maxLength: 5 }), fc.option(fc.array(piece, { maxLength: 4 })), fc.constantFrom('GET', 'HEAD', 'POST', 'DELETE', 'PROPFIND'), fc.oneof(bytes, fc.constant('Bearer nope_sb_' + 'x'.repeat(38))), async (path, query, method, auth) => {
      const target = '/' + path.join('/') + (query === null ? '' : '?' + query.join('&'));
      const head = Buffer.from(`${method} ${target} HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Length: 0\r\n\r\n`, 'latin1');
      const r = await c.request(head, Buffer.alloc(0), method === 'HEAD');
      seen.set(r.status, (seen.get(r.status) ?? 0) + 1);
      // (a 503 could only mean the server closed the connection: it is up all along)
      if (r.status === 0 || r.status >= 500) throw new Error(`${method} ${target}: ${r.status} ${r.body.slice(0, 200)}`);
      if (r.status >= 400 && method !== 'HEAD' && !(JSON.parse(r.body) as { error?: { code?: string } }).error?.code) throw new Error(`${method} ${target}: ${r.status} without the error body`);
    }),
    { numRuns: 200 },
  );
  t.ok((seen.get(400) ?? 0) > 0 && (seen.get(404) ?? 0) > 0, `answers: ${JSON.stringify(Object.fromEntries(seen))}`);
  t.equal((await http(P, '/readyz')).status, 200);
});
