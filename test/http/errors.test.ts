// Errors a client can provoke anywhere: unknown routes, wrong methods, oversized and
// malformed bodies. Every error is JSON with exactly {"error":{"code","message"}} — never
// HTML, never a stack trace (contract, first paragraph).
import { request } from 'node:http';
import t from 'tap';
import { isError } from '../helpers/checks.js';
import { serve } from '../helpers/server.js';
import { ADMIN_KEY } from '../helpers/env.js';

const s = await serve(t);

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A request written by hand (chunked bodies, HEAD); never throws for a closed connection after the answer. */
function raw(method: string, path: string, headers: Record<string, string>, chunks: (string | Buffer)[] = []): Promise<Raw> {
  const u = new URL(s.url);
  return new Promise((resolve, reject) => {
    let done = false;
    const r = request({ host: u.hostname, port: u.port, path, method, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        done = true;
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
      });
    });
    r.on('error', (e) => {
      if (!done) reject(e);
    });
    for (const c of chunks) r.write(c);
    r.end();
  });
}

const asResponse = (x: Raw) => new Response(x.body, { status: x.status, headers: Object.entries(x.headers).map(([k, v]) => [k, String(v)]) as [string, string][] });

t.test('unknown routes: 404 JSON', async (t) => {
  for (const [m, p] of [['GET', '/nope'], ['GET', '/'], ['POST', '/nope'], ['GET', '/services/a/b/c'], ['GET', '/sandbox'], ['DELETE', '/sandboxes/x']] as const) {
    const r = await s.req(p, { method: m, headers: { accept: 'text/html' } });
    await isError(t, r, 404, 'NOT_FOUND', `${m} ${p}`);
  }
});

t.test('wrong method on a known path: 405 JSON with Allow', async (t) => {
  const cases: [string, string, RegExp][] = [
    ['PUT', '/services', /GET/],
    ['DELETE', '/services', /GET/],
    ['POST', '/services/abc', /GET/],
    ['PATCH', '/sandboxes', /POST/],
    ['GET', '/sandboxes', /POST/],
    ['PUT', '/openapi.json', /GET/],
    ['POST', '/devices', /GET/],
    ['PUT', '/sandbox/00000000-0000-4000-8000-000000000000/services/x', /PATCH/],
  ];
  for (const [m, p, allow] of cases) {
    const r = await s.req(p, { method: m, headers: { 'content-type': 'application/json' }, body: m === 'GET' || m === 'DELETE' ? undefined : '{}' });
    t.match(r.headers.get('allow') ?? '', allow, `${m} ${p}: Allow`);
    await isError(t, r, 405, 'METHOD_NOT_ALLOWED', `${m} ${p}`);
  }
});

t.test('HEAD answers the GET headers without a body', async (t) => {
  const h = await raw('HEAD', '/services', {});
  t.equal(h.status, 200);
  t.equal(h.body, '');
  t.match(String(h.headers['content-type']), /^application\/json/);
  t.match(String(h.headers.vary), /Authorization/);
  const get = await s.req('/services');
  t.equal(String(h.headers['content-length']), String((await get.text()).length), 'Content-Length of the GET body');
  const missing = await raw('HEAD', '/nope', {});
  t.equal(missing.status, 404);
  t.equal(missing.body, '');
  // the connection is still usable: a body after a HEAD answer would break the next response
  const agent = new (await import('node:http')).Agent({ keepAlive: true, maxSockets: 1 });
  const u = new URL(s.url);
  const one = (method: string) =>
    new Promise<number>((resolve, reject) => {
      const r = request({ host: u.hostname, port: u.port, path: '/livez', method, agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      r.on('error', reject);
      r.end();
    });
  t.same([await one('HEAD'), await one('GET'), await one('HEAD'), await one('GET')], [200, 200, 200, 200], 'HEAD and GET on one keep-alive connection');
  agent.destroy();
  const stream = await raw('HEAD', '/services/changes', {});
  t.equal(stream.status, 200);
  t.equal(stream.body, '', 'HEAD of the change stream: no body, and it ends');
});

t.test('body too large: 413 JSON, with Content-Length or chunked', async (t) => {
  const big = Buffer.alloc(s.cfg.maxBodyBytes + 1024, 0x20);
  const withLength = await raw('POST', '/sandboxes', { 'content-type': 'application/json', 'content-length': String(big.length) }, [big]);
  await isError(t, asResponse(withLength), 413, 'PAYLOAD_TOO_LARGE', 'Content-Length over the cap');
  const chunked = await raw('POST', '/sandboxes', { 'content-type': 'application/json' }, [big.subarray(0, 40_000), big.subarray(40_000), '{}']);
  await isError(t, asResponse(chunked), 413, 'PAYLOAD_TOO_LARGE', 'chunked over the cap');
  const admin = await raw('POST', '/admin/api/services', { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json', 'content-length': String(big.length) }, [big]);
  await isError(t, asResponse(admin), 413, 'PAYLOAD_TOO_LARGE', 'admin write');
  const n = Number((await s.app.pg.query<{ n: string }>('SELECT count(*) AS n FROM sandboxes')).rows[0]!.n);
  t.equal(n, 0, 'nothing created');
});

t.test('invalid JSON: 400; no body: 400; wrong content type: 415', async (t) => {
  const post = (body: string | undefined, ct?: string) => s.req('/sandboxes', { method: 'POST', headers: ct ? { 'content-type': ct } : {}, body });
  await isError(t, await post('{"name":', 'application/json'), 400, 'BAD_JSON', 'truncated JSON');
  await isError(t, await post("{'name':'x'}", 'application/json'), 400, 'BAD_JSON', 'single quotes');
  await isError(t, await post('', 'application/json'), 400, undefined, 'empty body');
  await isError(t, await post(undefined, 'application/json'), 400, undefined, 'no body');
  await isError(t, await post('"just a string"', 'application/json'), 400, undefined, 'a JSON string');
  await isError(t, await post('{"name":"x"}', 'text/plain'), 415, 'UNSUPPORTED_MEDIA_TYPE', 'text/plain');
  await isError(t, await post('name=x', 'application/x-www-form-urlencoded'), 415, 'UNSUPPORTED_MEDIA_TYPE', 'form');
  await isError(t, await post('{"name":"x"}', 'multipart/form-data; boundary=x'), 415, 'UNSUPPORTED_MEDIA_TYPE', 'multipart');
  const ok = await post('{"name":"x"}', 'application/json; charset=utf-8');
  t.equal(ok.status, 201, 'application/json with a charset is fine');
  await ok.body?.cancel();
  const admin = await s.req('/admin/api/services', { method: 'POST', headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' }, body: '[1,' });
  await isError(t, admin, 400, 'BAD_JSON', 'admin write with broken JSON');
  const adminCt = await s.req('/admin/api/services', { method: 'POST', headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'text/xml' }, body: '<x/>' });
  await isError(t, adminCt, 415, 'UNSUPPORTED_MEDIA_TYPE', 'admin write as XML');
});

t.test('an escaped lone surrogate is refused, never stored as something else', async (t) => {
  const post = (body: string) => s.req('/sandboxes', { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  await isError(t, await post('{"name":"a\\ud800b"}'), 400, 'BAD_JSON', 'a lone high surrogate');
  await isError(t, await post('{"name":"a\\udc00"}'), 400, 'BAD_JSON', 'a lone low surrogate');
  await isError(t, await post('{"name":"x","\\ud800":1}'), 400, 'BAD_JSON', 'in a key');
  const admin = await s.req('/admin/api/services', {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
    body: '{"endpoint":"https://s.example.com","capabilities":["ok"],"properties":{"k":"v\\ud83d"}}',
  });
  await isError(t, admin, 400, 'BAD_JSON', 'deep inside a service');
  const pair = await post('{"name":"smile \\ud83d\\ude00"}');
  t.equal(pair.status, 201, 'a surrogate pair is a character like any other');
  t.equal(((await pair.json()) as { name: string }).name, 'smile \u{1F600}', 'and comes back as sent');
});

t.test('a URL that is too long is a JSON error, not a dropped connection', async (t) => {
  const r = await raw('GET', '/services?capability=' + 'a'.repeat(9000), {});
  t.ok(r.status === 414 || r.status === 400, `status ${r.status}`);
  await isError(t, asResponse(r), r.status);
});

t.test('liveness and readiness', async (t) => {
  const l = await s.req('/livez');
  t.equal(l.status, 200);
  await l.body?.cancel();
  const r = await s.req('/readyz');
  t.equal(r.status, 200, 'ready once PostgreSQL and the index are usable');
  t.match(r.headers.get('content-type') ?? '', /^application\/json/);
  await r.body?.cancel();
});
