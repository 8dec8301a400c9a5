// The dashboard's static files at /admin/ (contract, "Administration"): five-minute public
// caching without `immutable`, ?v=<version> on script URLs, right types, ETag/304, JSON
// 404s, no way out of web/dist, and a 503 telling what to run when the build is missing.
import { mkdtempSync, rmSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import uWS from 'uWebSockets.js';
import type { App } from '../../src/hot/app.js';
import { registerStatic } from '../../src/admin/static.js';
import { serve } from '../helpers/server.js';
import { ensureWebBuilt } from '../helpers/web.js';

t.test('dashboard static files', async (t) => {
  ensureWebBuilt();
  const s = await serve(t);

  const html = await s.req('/admin/');
  t.equal(html.status, 200);
  t.equal(html.headers.get('content-type'), 'text/html; charset=utf-8');
  t.equal(html.headers.get('cache-control'), 'public, max-age=300');
  t.match(html.headers.get('content-security-policy'), /default-src 'self'/);
  const page = await html.text();
  t.match(page, /<registry-app>/);
  const scripts = [...page.matchAll(/<script[^>]*\bsrc="([^"]+)"/g)].map((m) => m[1]!);
  t.ok(scripts.length >= 1, 'the page loads a script');
  for (const src of scripts) t.match(src, /^\/admin\/assets\/[^?]+\.js\?v=test$/, `${src} carries ?v=<version>`);
  for (const m of page.matchAll(/<link[^>]*\bhref="(\/admin\/[^"]+)"/g)) t.match(m[1], /\?v=test$/, 'local links carry it too');

  const same = await s.req('/admin/index.html');
  t.equal(same.status, 200);
  t.equal(await same.text(), page, '/admin/index.html is the same page');

  for (const src of scripts) {
    const r = await s.req(src);
    t.equal(r.status, 200, src);
    t.equal(r.headers.get('content-type'), 'text/javascript; charset=utf-8');
    const cc = r.headers.get('cache-control') ?? '';
    t.equal(cc, 'public, max-age=300');
    t.notMatch(cc, /immutable/);
    t.equal(r.headers.get('x-content-type-options'), 'nosniff');
    const etag = r.headers.get('etag');
    t.match(etag, /^"[^"]+"$/, 'a strong ETag');
    t.ok((await r.arrayBuffer()).byteLength > 1000);
    const again = await s.req(src, { headers: { 'if-none-match': etag! } });
    t.equal(again.status, 304, 'If-None-Match -> 304');
    t.equal(again.headers.get('cache-control'), 'public, max-age=300');
    t.equal((await again.arrayBuffer()).byteLength, 0);
    const other = await s.req(src, { headers: { 'if-none-match': '"other"' } });
    t.equal(other.status, 200, 'another ETag gets the file');
    await other.arrayBuffer(); // an unread body would hold the connection open
  }

  const slash = await s.req('/admin');
  t.equal(slash.status, 302);
  t.equal(slash.headers.get('location'), '/admin/');

  // (fetch resolves %2e%2e itself: that one arrives as /package.json; an encoded "/" is refused
  // before any route, issue 41)
  for (const [p, status, code] of [
    ['/admin/nope.js', 404, 'NOT_FOUND'],
    ['/admin/assets/nope.js', 404, 'NOT_FOUND'],
    ['/admin/%2e%2e/package.json', 404, 'NOT_FOUND'],
    ['/admin/..%2fpackage.json', 400, 'BAD_REQUEST'],
    ['/admin/assets/..%2f..%2fvite.config.ts', 400, 'BAD_REQUEST'],
    ['/admin/src/main.ts', 404, 'NOT_FOUND'],
  ] as const) {
    const r = await s.req(p);
    t.equal(r.status, status, p);
    t.match(r.headers.get('content-type'), /^application\/json/);
    t.equal(((await r.json()) as { error: { code: string } }).error.code, code);
  }
});

t.test('without a build, /admin/ is 503 JSON saying what to run', async (t) => {
  const empty = mkdtempSync(join(tmpdir(), 'no-dist-'));
  t.teardown(() => rmSync(empty, { recursive: true, force: true }));
  const uws = uWS.App();
  registerStatic(uws, { version: 'x' } as App, { maxBody: 1024, onError: () => undefined }, empty);
  const port = await new Promise<number>((resolve, reject) =>
    uws.listen('127.0.0.1', 0, (sock) => {
      if (!sock) return reject(new Error('cannot listen'));
      t.teardown(() => uWS.us_listen_socket_close(sock));
      resolve(uWS.us_socket_local_port(sock));
    }),
  );
  // node:http without an agent sends Connection: close, so no idle socket keeps the test alive
  const fetchClose = (path: string) =>
    new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
      get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), body }));
      }).on('error', reject);
    });
  for (const p of ['/admin/', '/admin/assets/index.js']) {
    const r = await fetchClose(p);
    t.equal(r.status, 503, p);
    t.match(r.type, /^application\/json/);
    const b = JSON.parse(r.body) as { error: { code: string; message: string } };
    t.equal(b.error.code, 'UNAVAILABLE');
    t.match(b.error.message, /make build/);
  }
});
