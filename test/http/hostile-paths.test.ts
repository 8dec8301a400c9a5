// Encoded and literal dot-segments in the path (issue 41): a path a proxy would read as
// another one (`/admin/api/x/..%2F..%2F..%2Fservices` is `/services` to nginx) is refused with
// 400 and the error body before any route runs, whatever the method and the credentials;
// the answer keeps the connection. (Through the shipped proxy: test/proxy/paths.test.ts.)
import t from 'tap';
import fc from 'fast-check';
import { serve } from '../helpers/server.js';
import { rawClient } from '../helpers/raw-client.js';
import { dotPath } from '../helpers/dot-paths.js';
import { ambiguousPath } from '../../src/hot/domain/raw-path.js';
import { ADMIN_KEY } from '../helpers/env.js';

const s = await serve(t);

t.test('the bypass of the admin allow-list is a 400, not an admin answer', async (t) => {
  const c = rawClient(t, s.server.port);
  for (const auth of ['', `Authorization: Bearer ${ADMIN_KEY}\r\n`]) {
    const r = await c.request(Buffer.from(`GET /admin/api/x/..%2F..%2F..%2Fservices HTTP/1.1\r\nHost: x\r\n${auth}\r\n`));
    t.equal(r.status, 400, auth ? 'with the admin key' : 'without a key (the admin routes would say 401)');
    t.match(JSON.parse(r.body), { error: { code: 'BAD_REQUEST', message: /encoded/ } });
  }
  const after = await c.request(Buffer.from('GET /livez HTTP/1.1\r\nHost: x\r\n\r\n'));
  t.equal(after.status, 200, 'the same connection serves the next request');
});

t.test('every ambiguous path, any method: 400 before the route; the others are routed', async (t) => {
  const c = rawClient(t, s.server.port);
  const seen = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(dotPath, fc.constantFrom('GET', 'HEAD', 'POST', 'PATCH', 'DELETE', 'PUT'), fc.boolean(), async (path, method, keyed) => {
      const body = method === 'POST' || method === 'PATCH' ? '{"endpoint":"https://a.example.com","capability":"a"}' : '';
      const head = `${method} ${path} HTTP/1.1\r\nHost: x\r\n${keyed ? `Authorization: Bearer ${ADMIN_KEY}\r\n` : ''}${body ? `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n` : ''}\r\n`;
      const r = await c.request(Buffer.from(head), Buffer.from(body), method === 'HEAD');
      seen.set(r.status, (seen.get(r.status) ?? 0) + 1);
      if (r.status >= 500) throw new Error(`${method} ${path}: ${r.status}`);
      if (ambiguousPath(path)) {
        if (r.status !== 400) throw new Error(`${method} ${path}: ${r.status}, not 400`);
        if (method !== 'HEAD' && (JSON.parse(r.body) as { error: { code: string } }).error.code !== 'BAD_REQUEST') throw new Error(`${method} ${path}: ${r.body}`);
      }
    }),
    { numRuns: 400 },
  );
  t.ok((seen.get(400) ?? 0) > 50 && seen.size > 2, `answers: ${JSON.stringify(Object.fromEntries(seen))}`);
});
