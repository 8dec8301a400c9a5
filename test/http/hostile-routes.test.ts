// No input, on any route the server registers, gets a 5xx (503 with Retry-After excepted),
// every 4xx carries the contract's error body, and the server is ready afterwards. Requests
// go out as raw bytes (test/helpers/raw-client.ts) so nothing repairs them on the way:
// hostile path segments (bad %, invalid and overlong UTF-8, traversal), query strings,
// header values (Authorization, Cookie, X-CSRF-Token, Last-Event-ID, If-None-Match,
// Content-Type, X-Forwarded-For), bodies (deep nesting, size, bytes that are not UTF-8) and
// methods (the generators: test/helpers/hostile-requests.ts). The route table below is
// checked against the one the server registered, so a new route without a generator fails
// this test.
import t from 'tap';
import fc from 'fast-check';
import { createSandbox, registerProduction, serve } from '../helpers/server.js';
import { METHODS, body, check, headerValue, query, segment } from '../helpers/hostile-requests.js';
import { rawClient } from '../helpers/raw-client.js';
import { registeredRoutes } from '../../src/hot/http/route.js';
import { buildUws } from '../../src/hot/server.js';
import { registerAdmin } from '../../src/admin/routes.js';
import type { Leased } from '../helpers/svc.js';
import { ADMIN_KEY } from '../helpers/env.js';

/** method + pattern of every route the server registers (src/hot, src/admin) */
const ROUTES: [string, string][] = [
  ['GET', '/openapi.json'],
  ['GET', '/livez'],
  ['GET', '/readyz'],
  ['GET', '/services'],
  ['GET', '/services/changes'],
  ['GET', '/services/:id'],
  ['GET', '/services/:id/replacements'],
  ['GET', '/devices'],
  ['POST', '/sandboxes'],
  ['GET', '/sandbox/:uuid/dashboard'],
  ['GET', '/sandbox/:uuid/poll'],
  ['POST', '/sandbox/:uuid/services'],
  ['POST', '/sandbox/:uuid/services/batch'],
  ['GET', '/sandbox/:uuid/services'],
  ['GET', '/sandbox/:uuid/services/:id'],
  ['PATCH', '/sandbox/:uuid/services/:id'],
  ['DELETE', '/sandbox/:uuid/services/:id'],
  ['GET', '/sandbox/:uuid/services/:id/replacements'],
  ['POST', '/sandbox/:uuid/services/:id/replacements'],
  ['POST', '/sandbox/:uuid/services/:id/heartbeat-token'],
  ['PUT', '/sandbox/:uuid/services/:id/heartbeat'],
  ['PUT', '/services/:id/heartbeat'],
  ['GET', '/discovery/prometheus'],
  ['GET', '/v1/agent/self'],
  ['GET', '/v1/catalog/datacenters'],
  ['GET', '/v1/catalog/services'],
  ['GET', '/v1/catalog/service/:name'],
  ['GET', '/v1/health/service/:name'],
  ['POST', '/admin/session'],
  ['GET', '/admin/session'],
  ['DELETE', '/admin/session'],
  ['GET', '/admin/api/stats'],
  ['GET', '/admin/api/sandboxes'],
  ['GET', '/admin/api/locations'],
  ['GET', '/admin/api/sandboxes/:uuid'],
  ['POST', '/admin/api/sandboxes/:uuid/tier'],
  ['POST', '/admin/api/services'],
  ['POST', '/admin/api/services/batch'],
  ['PATCH', '/admin/api/services/:id'],
  ['DELETE', '/admin/api/services/:id'],
  ['GET', '/admin/api/services/:id/replacements'],
  ['POST', '/admin/api/services/:id/replacements'],
  ['POST', '/admin/api/services/:id/heartbeat-token'],
  ['GET', '/admin'],
  ['GET', '/admin/'],
  ['GET', '/admin/:file'],
  ['GET', '/no/such/route'],
];

t.test('the route table of this test is the server\'s', async (t) => {
  const s = await serve(t);
  // every route the server registers is in ROUTES (the static files' /admin/* as /admin/:file)
  const ours = new Set(ROUTES.map(([m, p]) => `${m} ${p}`));
  const theirs = registeredRoutes(buildUws(s.app, [registerAdmin])).map(({ method, pattern }) => `${method} ${pattern.replace('/admin/*', '/admin/:file')}`);
  t.ok(theirs.length >= ROUTES.length - 1, `${theirs.length} routes registered`);
  for (const r of theirs) t.ok(ours.has(r), `${r} has generators here`);
  // and every route of ours exists (the 404 aside)
  const registered = new Set(theirs);
  for (const [m, p] of ROUTES) if (p !== '/no/such/route') t.ok(registered.has(`${m} ${p}`), `${m} ${p} is registered`);
});

t.test('no request to any route gets a 5xx, every 4xx has the error body, and the server stays ready', async (t) => {
  const s = await serve(t, { env: { TIERS: 'free=1000000', SANDBOX_CREATE_PER_MINUTE: '1000000', LOGIN_FAILURES_PER_MINUTE: '1000000' } });
  const sb = await createSandbox(s, 'Hostile Routes');
  const svc = await registerProduction(s, { endpoint: 'https://p.example.com', capability: 'p', deprecated: true, ttl: 30 });
  const sr = await s.req(`/sandbox/${sb.uuid}/services`, { method: 'POST', headers: { authorization: `Bearer ${sb.apiKey}`, 'content-type': 'application/json' }, body: '{"endpoint":"https://s.example.com","capability":"s","ttl":30}' });
  const sbSvc = (await sr.json()) as Leased;
  const prodToken = (svc as Leased).heartbeatToken;
  const login = await s.req('/admin/session', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ apiKey: ADMIN_KEY }) });
  const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0]!;
  const { csrfToken } = (await login.json()) as { csrfToken: string };
  const badChecksum = sb.apiKey.slice(0, -1) + (sb.apiKey.endsWith('A') ? 'B' : 'A');

  const c = rawClient(t, s.server.port);
  const statuses = new Map<string, number>();
  const request = fc.record({
    route: fc.constantFrom(...ROUTES),
    method: fc.oneof({ weight: 4, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.constantFrom(...METHODS) }),
    uuid: segment([sb.uuid, sb.uuid.toUpperCase()]),
    id: segment([svc.id, sbSvc.id]),
    file: segment(['index.html', 'x.js', '../package.json', '..%2Fpackage.json']),
    query,
    authorization: headerValue([`Bearer ${sb.apiKey}`, `Bearer ${ADMIN_KEY}`, `Bearer ${badChecksum}`, 'Bearer', 'Basic x', `bearer ${sb.apiKey}`, `Bearer ${prodToken}`, `Bearer ${sbSvc.heartbeatToken}`]),
    cookie: headerValue([cookie, `${cookie}; ${cookie}`, 'registry_admin=%ZZ', 'registry_admin=' + 'A'.repeat(43)]),
    csrf: headerValue([csrfToken]),
    lastEventId: headerValue(['0', '1', '-1', '18446744073709551616']),
    ifNoneMatch: headerValue(['*', '"x"']),
    contentType: fc.constantFrom('application/json', 'application/json; charset=utf-8', 'text/plain', '', 'application/x-www-form-urlencoded'),
    forwardedFor: headerValue(['127.0.0.1', '::1, 10.0.0.1', 'unknown']),
    body,
  });
  await fc.assert(
    fc.asyncProperty(request, async (q) => {
      const [m0, pattern] = q.route;
      const method = q.method || m0;
      const path = Buffer.concat(
        pattern
          .split(/(:uuid|:id|:file|:name)/)
          .map((part) => (part === ':uuid' ? q.uuid : part === ':id' || part === ':name' ? q.id : part === ':file' ? q.file : Buffer.from(part))),
      );
      const withBody = q.body !== null && method !== 'GET' && method !== 'HEAD';
      const lines = [
        `Host: x`,
        `Authorization: ${q.authorization}`,
        `Cookie: ${q.cookie}`,
        `X-CSRF-Token: ${q.csrf}`,
        `Last-Event-ID: ${q.lastEventId}`,
        `If-None-Match: ${q.ifNoneMatch}`,
        `X-Forwarded-For: ${q.forwardedFor}`,
        ...(q.contentType ? [`Content-Type: ${q.contentType}`] : []),
        ...(withBody ? [`Content-Length: ${q.body!.length}`] : []),
      ];
      const head = Buffer.concat([Buffer.from(`${method} `), path, q.query === null ? Buffer.alloc(0) : Buffer.concat([Buffer.from('?'), q.query]), Buffer.from(` HTTP/1.1\r\n`), Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1')]);
      const r = await c.request(head, withBody ? q.body! : Buffer.alloc(0), method === 'HEAD');
      const k = `${r.status}`;
      statuses.set(k, (statuses.get(k) ?? 0) + 1);
      check(r, `${method} ${path.toString('latin1').slice(0, 120)}`);
    }),
    { numRuns: 700 },
  );
  t.ok((statuses.get('200') ?? 0) > 0 && (statuses.get('400') ?? 0) > 0 && (statuses.get('401') ?? 0) > 0 && (statuses.get('404') ?? 0) > 0, `a mix of answers: ${JSON.stringify(Object.fromEntries(statuses))}`);
  t.equal((await s.req('/readyz')).status, 200, 'ready afterwards');
});
