// Encoded dot-segments through the shipped proxy (issue 41): nginx chooses its location (the
// /admin allow-list) by the decoded, resolved path and forwards the raw one, so a raw path
// that reads as /services to nginx and as /admin/... to the server bypassed the allow-list.
// nginx now refuses such a path itself (400, the API's error body) before any location
// decides; a path the server routes under /admin never gets an admin answer from an address
// off the allow-list.
import t from 'tap';
import fc from 'fast-check';
import { serve } from '../helpers/server.js';
import { startProxy } from '../helpers/proxy.js';
import { rawClient } from '../helpers/raw-client.js';
import { dotPath } from '../helpers/dot-paths.js';
import { ambiguousPath } from '../../src/hot/domain/raw-path.js';
import { connect } from 'node:net';

const s = await serve(t);
const proxy = await startProxy(s.server.port, { PROXY_ADMIN_ALLOW: '127.0.0.1' });
t.teardown(() => proxy.close());

/** A raw request from `from` on a connection of its own: status and body. */
function raw(from: string, text: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const sock = connect({ port: proxy.port, host: '127.0.0.1', localAddress: from });
    let out = '';
    sock.on('data', (d) => (out += d.toString('latin1')));
    sock.on('close', () => resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(out)?.[1] ?? 0), body: out.slice(out.indexOf('\r\n\r\n') + 4) }));
    sock.on('error', reject);
    sock.write(text);
  });
}

const NGINX_400 = { error: { code: 'BAD_REQUEST', message: 'malformed HTTP request' } };

t.test("the issue's path from an address off the allow-list: nginx's 400, no admin answer", async (t) => {
  for (const path of ['/admin/api/x/..%2F..%2F..%2Fservices', '/admin/api/x/%2e%2e/%2e%2e/%2e%2e/services', '/admin/api/stats/..%2f..%2f..%2fservices']) {
    const r = await raw('127.0.0.2', `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    t.equal(r.status, 400, path);
    t.same(JSON.parse(r.body), NGINX_400, `${path}: refused by nginx, with the API's error body`);
  }
});

t.test('generated dot paths: ambiguous ones refused by nginx, admin ones never answered by the admin routes', async (t) => {
  const c = rawClient(t, proxy.port);
  const seen = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(dotPath, fc.constantFrom('GET', 'POST', 'DELETE'), async (path, method) => {
      // (RawClient connects from 127.0.0.1, on the allow-list: the allow-list case is raw() below)
      const r = await c.request(Buffer.from(`${method} ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n`));
      seen.set(r.status, (seen.get(r.status) ?? 0) + 1);
      if (r.status === 0 || r.status >= 500) throw new Error(`${method} ${path}: ${r.status}`);
      if (ambiguousPath(path) && !(r.status === 400 && JSON.stringify(JSON.parse(r.body)) === JSON.stringify(NGINX_400))) throw new Error(`${method} ${path}: ${r.status} ${r.body}, not nginx's 400`);
    }),
    { numRuns: 300 },
  );
  t.ok((seen.get(400) ?? 0) > 30, `answers: ${JSON.stringify(Object.fromEntries(seen))}`);
  await fc.assert(
    fc.asyncProperty(dotPath.filter((p) => p.startsWith('/admin')), async (path) => {
      const r = await raw('127.0.0.2', `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      if (r.status !== 400 && r.status !== 403) throw new Error(`GET ${path} from 127.0.0.2: ${r.status} ${r.body}`);
    }),
    { numRuns: 100 },
  );
});
