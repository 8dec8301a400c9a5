// JSON nested deeper than MAX_JSON_DEPTH is a 400 BAD_JSON naming the limit on every route
// that takes a body (a 413 once it is over the size limit too), brackets inside strings are
// not nesting, and generated depths, shapes and wrappings (test/helpers/hostile-requests.ts)
// never get a 5xx.
import t from 'tap';
import fc from 'fast-check';
import { createSandbox, registerProduction, serve } from '../helpers/server.js';
import { deep } from '../helpers/hostile-requests.js';
import type { Leased } from '../helpers/svc.js';
import { ADMIN_KEY } from '../helpers/env.js';

t.test('deep JSON is a 400 BAD_JSON naming the limit, on every body route', async (t) => {
  const s = await serve(t, { env: { TIERS: 'free=1000000', SANDBOX_CREATE_PER_MINUTE: '1000000', LOGIN_FAILURES_PER_MINUTE: '1000000', MAX_JSON_DEPTH: '8' } });
  const sb = await createSandbox(s, 'Deep');
  const svc = await registerProduction(s, { endpoint: 'https://p.example.com', capability: 'p', ttl: 30 });
  const routes: [string, string, string][] = [
    ['POST', '/sandboxes', ''],
    ['POST', '/admin/session', ''],
    ['POST', '/admin/api/services', ADMIN_KEY],
    ['PATCH', `/admin/api/services/${svc.id}`, ADMIN_KEY],
    ['POST', `/admin/api/services/${svc.id}/replacements`, ADMIN_KEY],
    ['POST', `/admin/api/sandboxes/${sb.uuid}/tier`, ADMIN_KEY],
    ['POST', `/sandbox/${sb.uuid}/services`, sb.apiKey],
    ['PUT', `/services/${svc.id}/heartbeat`, (svc as Leased).heartbeatToken],
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
