// No input, on any route the server registers, gets a 5xx (503 with Retry-After excepted),
// every 4xx carries the contract's error body, and the server is ready afterwards. Requests
// go out as raw bytes (test/helpers/raw-client.ts) so nothing repairs them on the way:
// hostile path segments (bad %, invalid and overlong UTF-8, traversal), query strings,
// header values (Authorization, Cookie, X-CSRF-Token, Last-Event-ID, If-None-Match,
// Content-Type, X-Forwarded-For), bodies (deep nesting, size, bytes that are not UTF-8) and
// methods. The route table below is checked against the one the server registered, so a
// new route without a generator fails this test.
import t from 'tap';
import fc from 'fast-check';
import { ADMIN_KEY, createSandbox, registerProduction, startTestServer } from '../helpers/server.js';
import { nearService } from '../helpers/hostile.js';
import { RawClient, type Raw } from '../helpers/raw-client.js';
import { registeredRoutes } from '../../src/hot/http/route.js';
import { buildUws } from '../../src/hot/server.js';
import { registerAdmin } from '../../src/admin/routes.js';

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
  ['GET', '/admin'],
  ['GET', '/admin/'],
  ['GET', '/admin/:file'],
  ['GET', '/no/such/route'],
];

/** Bytes a request line can carry: controls, space, DEL and '#' percent-escaped; the rest raw. */
function onTheWire(bytes: Uint8Array): Buffer {
  const out: number[] = [];
  for (const b of bytes) {
    if (b <= 0x20 || b === 0x7f || b === 0x23 || b === 0x3f) out.push(...Buffer.from('%' + b.toString(16).toUpperCase().padStart(2, '0')));
    else out.push(b);
  }
  return Buffer.from(out);
}

const ENCODING_TRICKS = ['%', '%Z', '%ZZ', '%G1', '%00', '%2F', '%2e%2e', '..', '%C0%AE', '%C0%AF', '%E0%80%AF', '%ED%A0%80', '%F4%90%80%80', '%FF', '%FE%FF', '%E2%82', '%F0%9F%98%80', '+', '%20', 'é', '\u{1F600}'];
const segment = (real: string[]) =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...real).map((s) => Buffer.from(s)) },
    { weight: 2, arbitrary: fc.array(fc.constantFrom(...ENCODING_TRICKS), { minLength: 1, maxLength: 4 }).map((p) => onTheWire(Buffer.from(p.join('')))) },
    { weight: 1, arbitrary: fc.uint8Array({ minLength: 1, maxLength: 40 }).map((b) => onTheWire(b)) },
    { weight: 1, arbitrary: fc.constantFrom('x'.repeat(300), 'x'.repeat(9000), '0'.repeat(36), '00000000-0000-4000-8000-000000000000', 'ZZZZZZZZ-ZZZZ-ZZZZ-ZZZZ-ZZZZZZZZZZZZ', '__proto__', 'constructor').map((s) => Buffer.from(s)) },
  );

const QNAMES = ['capability', 'property', 'deviceClass', 'protocol', 'iotReady', 'limit', 'after', 'lastEventId', 'tier', 'page', 'v', '__proto__'];
const qvalue = fc.oneof(fc.constantFrom(...ENCODING_TRICKS, '0', '-1', '1e3', '99999999999999999999', 'free', 'true'), fc.string({ maxLength: 8 }), fc.stringMatching(/^[a-zA-Z0-9._:-]{1,8}$/));
const query = fc.oneof(
  fc.constant(null),
  fc.uint8Array({ maxLength: 60 }).map((b) => onTheWire(b)),
  fc.array(fc.tuple(fc.constantFrom(...QNAMES), qvalue), { maxLength: 5 }).map((ps) => onTheWire(Buffer.from(ps.map(([n, v]) => n + '=' + v).join('&')))),
);

/** Header values as bytes: printable ASCII, obs-text (0x80-0xFF, invalid UTF-8), tricks. */
const headerValue = (real: string[]) =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...real) },
    { weight: 1, arbitrary: fc.constantFrom('', ' ', '%', '%ZZ', '%C0%AE', '-1', '1e400', '99999999999999999999', 'null', '"', '\\', 'W/"x"', '*', 'a=b; a=c', '=;=;', ';;;', '\t') },
    { weight: 1, arbitrary: fc.string({ maxLength: 40 }).map((s) => [...s].filter((ch) => ch.charCodeAt(0) >= 0x20 && ch.charCodeAt(0) !== 0x7f).join('')) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 40 }).map((b) => Buffer.from(b.filter((x) => x >= 0x20 && x !== 0x7f)).toString('latin1')) },
  );

/** JSON nested `depth` levels: arrays, objects or both, optionally wrapped in a body object */
const deep = fc
  .record({ depth: fc.oneof(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 3000, max: 12000 })), kind: fc.constantFrom('array', 'object', 'mixed'), wrap: fc.boolean() })
  .map(({ depth, kind, wrap }) => {
    let open = '';
    let close = '';
    for (let i = 0; i < depth; i++) {
      const arr = kind === 'array' || (kind === 'mixed' && i % 2 === 0);
      open += arr ? '[' : '{"a":';
      close = (arr ? ']' : '}') + close;
    }
    const v = open + '1' + close;
    return Buffer.from(wrap ? `{"endpoint":"https://d.example.com","capability":"d","properties":${v},"name":${v},"apiKey":${v}}` : v);
  });
const nearBody = nearService(fc.jsonValue({ maxDepth: 4 }));
const body = fc.oneof(
  fc.constant(null),
  { weight: 3, arbitrary: deep },
  nearBody.map((v) => Buffer.from(JSON.stringify(v))),
  fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)), // not JSON, not UTF-8
  fc.constantFrom('"\\ud800"', '{"name":"\\udfff"}', '{"a":1,"a":2}', '{"__proto__":{"x":1}}', '[' + '"x",'.repeat(3000) + '"x"]', 'x'.repeat(70_000)).map((s) => Buffer.from(s)),
);

const METHODS = ['GET', 'HEAD', 'POST', 'PATCH', 'DELETE', 'PUT', 'OPTIONS'];

function check(r: Raw, what: string): void {
  if (r.status === 0) throw new Error(`${what}: connection closed without an answer`);
  if (r.status >= 500 && !(r.status === 503 && r.headers['retry-after'])) throw new Error(`${what}: ${r.status} ${r.body.slice(0, 300)}`);
  if (r.status >= 400 && r.body !== '') {
    let b: { error?: { code?: unknown; message?: unknown } };
    try {
      b = JSON.parse(r.body) as typeof b;
    } catch {
      throw new Error(`${what}: ${r.status} with a body that is not JSON: ${r.body.slice(0, 200)}`);
    }
    if (typeof b.error?.code !== 'string' || typeof b.error.message !== 'string') throw new Error(`${what}: ${r.status} without the error body: ${r.body.slice(0, 200)}`);
  }
}

t.test('the route table of this test is the server\'s', async (t) => {
  const s = await startTestServer();
  t.teardown(() => s.close());
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
  const s = await startTestServer({ env: { TIERS: 'free=1000000', SANDBOX_CREATE_PER_MINUTE: '1000000', LOGIN_FAILURES_PER_MINUTE: '1000000' } });
  t.teardown(() => s.close());
  const sb = await createSandbox(s, 'Hostile Routes');
  const svc = await registerProduction(s, { endpoint: 'https://p.example.com', capability: 'p', deprecated: true });
  const sr = await s.req(`/sandbox/${sb.uuid}/services`, { method: 'POST', headers: { authorization: `Bearer ${sb.apiKey}`, 'content-type': 'application/json' }, body: '{"endpoint":"https://s.example.com","capability":"s"}' });
  const sbSvc = (await sr.json()) as { id: string };
  const login = await s.req('/admin/session', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ apiKey: ADMIN_KEY }) });
  const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0]!;
  const { csrfToken } = (await login.json()) as { csrfToken: string };
  const badChecksum = sb.apiKey.slice(0, -1) + (sb.apiKey.endsWith('A') ? 'B' : 'A');

  const c = new RawClient(s.server.port);
  t.teardown(() => c.close());
  const statuses = new Map<string, number>();
  const request = fc.record({
    route: fc.constantFrom(...ROUTES),
    method: fc.oneof({ weight: 4, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.constantFrom(...METHODS) }),
    uuid: segment([sb.uuid, sb.uuid.toUpperCase()]),
    id: segment([svc.id, sbSvc.id]),
    file: segment(['index.html', 'x.js', '../package.json', '..%2Fpackage.json']),
    query,
    authorization: headerValue([`Bearer ${sb.apiKey}`, `Bearer ${ADMIN_KEY}`, `Bearer ${badChecksum}`, 'Bearer', 'Basic x', `bearer ${sb.apiKey}`]),
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
          .split(/(:uuid|:id|:file)/)
          .map((part) => (part === ':uuid' ? q.uuid : part === ':id' ? q.id : part === ':file' ? q.file : Buffer.from(part))),
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

t.test('deep JSON is a 400 BAD_JSON naming the limit, on every body route', async (t) => {
  const s = await startTestServer({ env: { TIERS: 'free=1000000', SANDBOX_CREATE_PER_MINUTE: '1000000', LOGIN_FAILURES_PER_MINUTE: '1000000', MAX_JSON_DEPTH: '8' } });
  t.teardown(() => s.close());
  const sb = await createSandbox(s, 'Deep');
  const svc = await registerProduction(s, { endpoint: 'https://p.example.com', capability: 'p' });
  const routes: [string, string, string][] = [
    ['POST', '/sandboxes', ''],
    ['POST', '/admin/session', ''],
    ['POST', '/admin/api/services', ADMIN_KEY],
    ['PATCH', `/admin/api/services/${svc.id}`, ADMIN_KEY],
    ['POST', `/admin/api/services/${svc.id}/replacements`, ADMIN_KEY],
    ['POST', `/admin/api/sandboxes/${sb.uuid}/tier`, ADMIN_KEY],
    ['POST', `/sandbox/${sb.uuid}/services`, sb.apiKey],
  ];
  for (const [method, path, key] of routes) {
    for (const [depth, expect] of [[8, 'ok'], [9, 'deep'], [5000, 'deep'], [60_000, 'deep']] as const) {
      const v = '['.repeat(depth) + ']'.repeat(depth);
      const r = await s.req(path, { method, body: v, headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) } });
      const b = (await r.json()) as { error?: { code: string; message: string } };
      if (expect === 'deep') {
        if (depth === 60_000) t.equal(r.status, 413, `${method} ${path} depth ${depth}: over the size limit first`);
        else {
          t.equal(r.status, 400, `${method} ${path} depth ${depth}`);
          t.equal(b.error?.code, 'BAD_JSON');
          t.match(b.error?.message, /limit of 8 levels/, 'the message names the limit');
        }
      } else t.not(b.error?.code, 'BAD_JSON', `${method} ${path} depth ${depth}: within the limit, not refused as JSON (${r.status})`);
    }
    // brackets inside strings are not nesting
    const inString = JSON.stringify({ name: '['.repeat(50) + '{'.repeat(50) });
    const r = await s.req(path, { method, body: inString, headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) } });
    t.not(((await r.json()) as { error?: { code: string } }).error?.code, 'BAD_JSON', `${method} ${path}: brackets in a string`);
  }
  // and generated: any depth, shape and wrapping, on any body route
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...routes), deep, async ([method, path, key], b) => {
      const r = await s.req(path, { method, body: b, headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) } });
      const text = await r.text();
      if (r.status >= 500) throw new Error(`${method} ${path}: ${r.status} ${text}`);
      const code = (JSON.parse(text || '{}') as { error?: { code?: string } }).error?.code;
      if (r.status >= 400 && !code) throw new Error(`${method} ${path}: ${r.status} without the error body`);
    }),
    { numRuns: 80 },
  );
  t.equal((await s.req('/readyz')).status, 200);
});

t.test('the change feed: lastEventId and Last-Event-ID that do not decode are 400', async (t) => {
  const s = await startTestServer();
  t.teardown(() => s.close());
  for (const q of ['%ZZ', '%', '%C0%AE', '%ED%A0%80', '%FF', 'abc', '-1', '1.5', '99999999999999999999']) {
    const r = await s.req(`/services/changes?lastEventId=${q}`);
    t.equal(r.status, 400, `lastEventId=${q}`);
    t.match(await r.json(), { error: { code: 'BAD_REQUEST' } });
  }
  // (a header value that is not UTF-8 never reaches the route: uWS hands it over empty)
  for (const h of ['abc', '%ZZ', '-1', '1e3', '1 2', '0x10']) {
    const r = await s.req('/services/changes', { headers: { 'last-event-id': h } });
    t.equal(r.status, 400, `Last-Event-ID: ${h}`);
    t.match(await r.json(), { error: { code: 'BAD_REQUEST' } });
  }
});

t.test('the metrics listener: any request is answered without a 5xx', async (t) => {
  const s = await startTestServer();
  t.teardown(() => s.close());
  const c = new RawClient(s.metricsPort!);
  t.teardown(() => c.close());
  const seen = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...METHODS),
      fc.oneof(fc.constant(Buffer.from('/metrics')), segment(['metrics', '', 'services']).map((b) => Buffer.concat([Buffer.from('/'), b]))),
      query,
      headerValue(['text/plain', 'application/openmetrics-text']),
      async (method, path, q, accept) => {
        const head = Buffer.concat([Buffer.from(`${method} `), path, q === null ? Buffer.alloc(0) : Buffer.concat([Buffer.from('?'), q]), Buffer.from(` HTTP/1.1\r\nHost: x\r\n`), Buffer.from(`Accept: ${accept}\r\n\r\n`, 'latin1')]);
        const r = await c.request(head, Buffer.alloc(0), method === 'HEAD');
        seen.set(r.status, (seen.get(r.status) ?? 0) + 1);
        check(r, `metrics ${method} ${path.toString('latin1')}`);
      },
    ),
    { numRuns: 150 },
  );
  t.ok((seen.get(200) ?? 0) > 0 && (seen.get(404) ?? 0) > 0, `answers: ${JSON.stringify(Object.fromEntries(seen))}`);
  t.equal((await s.metrics()).status, 200);
});
