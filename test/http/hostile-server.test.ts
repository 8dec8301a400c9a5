// Hostile input against the live server (fast-check): any query string — sent as raw bytes
// on a socket, so nothing normalises it on the way — and any body, to every route that
// takes one. Never a 5xx; a 302 always leads to a canonical URL (200 or 400, never another
// 302); the percent-encoding tricks either canonicalise or get 400.
import t from 'tap';
import fc from 'fast-check';
import { createSandbox, registerProduction, serve } from '../helpers/server.js';
import { nearService } from '../helpers/hostile.js';
import { rawClient } from '../helpers/raw-client.js';
import { ADMIN_KEY } from '../helpers/env.js';

/** Bytes a request line can carry: controls, space, DEL and '#' percent-escaped; the rest raw. */
function onTheWire(bytes: Uint8Array): Buffer {
  const out: number[] = [];
  for (const b of bytes) {
    if (b <= 0x20 || b === 0x7f || b === 0x23) out.push(...Buffer.from('%' + b.toString(16).toUpperCase().padStart(2, '0')));
    else out.push(b);
  }
  return Buffer.from(out);
}

const NAMES = ['capability', 'property', 'deviceClass', 'protocol', 'iotReady', 'limit', 'after', 'x', 'constructor', '__proto__'];
const TRICKS = ['%252e', '%2e', '%00', '%C0%AE', '%ED%A0%80', '%F0%9F%98%80', '%', '%G1', '+', '%20', '%2B', '&', '=', ':', '%3A', '..', 'TRUE', '0100', '1000', '1001', '0', '9'.repeat(20)];
const value = fc.oneof(fc.constantFrom(...TRICKS), fc.string({ maxLength: 8 }), fc.stringMatching(/^[a-zA-Z0-9._-]{1,8}$/));
const query = fc.oneof(
  fc.uint8Array({ maxLength: 60 }).map((b) => onTheWire(b)),
  fc.string({ unit: 'grapheme', maxLength: 30 }).map((s) => onTheWire(Buffer.from(s))),
  fc
    .array(fc.tuple(fc.constantFrom(...NAMES), fc.array(value, { minLength: 0, maxLength: 3 })), { maxLength: 6 })
    .map((ps) => onTheWire(Buffer.from(ps.map(([n, v]) => n + '=' + v.join('')).join('&')))),
);

t.test('no query string gets a 5xx, and every 302 leads to a canonical URL', async (t) => {
  const s = await serve(t, { env: { TIERS: 'free=1000000' } });
  const sb = await createSandbox(s, 'Hostile');
  await registerProduction(s, { endpoint: 'https://h.example.com', capabilities: ['hostile'], iot: { deviceClasses: ['sensor'], protocols: ['mqtt'] } });
  const c = rawClient(t, s.server.port);
  const paths = ['/services', '/devices', `/sandbox/${sb.uuid}/services`];
  const get = (path: string, q: Buffer | null) =>
    c.request(Buffer.concat([Buffer.from(`GET ${path}`), q === null ? Buffer.alloc(0) : Buffer.concat([Buffer.from('?'), q]), Buffer.from(` HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${sb.apiKey}\r\n\r\n`)]));
  const seen = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...paths), query, async (path, q) => {
      const r = await get(path, q);
      seen.set(r.status, (seen.get(r.status) ?? 0) + 1);
      if (!(r.status >= 200 && r.status < 500)) return false;
      if (r.status !== 302) return true;
      const loc = r.headers.location ?? '';
      if (!loc.startsWith(path)) return false;
      const i = loc.indexOf('?');
      const again = await get(path, i < 0 ? null : Buffer.from(loc.slice(i + 1)));
      seen.set(-again.status, (seen.get(-again.status) ?? 0) + 1);
      return again.status === 200 || again.status === 400; // canonical: served, or invalid
    }),
    { numRuns: 600 },
  );
  // (negative: the status after following the redirect)
  t.ok((seen.get(-200) ?? 0) > 0 && (seen.get(302) ?? 0) > 0 && (seen.get(400) ?? 0) > 0, `a mix of answers: ${JSON.stringify(Object.fromEntries(seen))}`);

  // the named tricks, one by one, on the wire as they are
  for (const trick of ['capability=%252e', 'capability=%00', 'property=k:%C0%AE', 'property=k:%ED%A0%80', 'property=k:a+b', 'property=k:a%20b', 'capability=%E2%82', 'capability=\u00e9'.normalize()]) {
    const r = await get('/services', Buffer.from(trick));
    if (r.status === 302) {
      const loc = r.headers.location!;
      const again = await get('/services', Buffer.from(loc.slice(loc.indexOf('?') + 1)));
      t.ok(again.status === 200 || again.status === 400, `${trick}: 302 to ${loc}, then ${again.status}`);
    } else t.ok(r.status === 200 || r.status === 400, `${trick}: ${r.status}`);
    if (r.status === 400) t.match(JSON.parse(r.body), { error: { code: 'BAD_QUERY' } });
  }
  const plus = await get('/services', Buffer.from('property=k:a+b'));
  t.equal(plus.headers.location, '/services?property=k:a%20b', '+ is a space: one canonical spelling');
});

const nearBody = nearService(fc.jsonValue());
const body = fc.oneof(
  fc.oneof(fc.jsonValue(), nearBody).map((v) => Buffer.from(JSON.stringify(v) ?? 'null')),
  fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)), // not JSON, not even UTF-8
  fc.string({ maxLength: 100 }).map((s) => Buffer.from(s)),
  nearBody.map((v) => Buffer.from(JSON.stringify(v).slice(0, -1))), // truncated
);
const contentType = fc.constantFrom('application/json', 'application/json; charset=utf-8', 'text/plain', 'application/merge-patch+json', '', 'application/json; charset=latin1');

t.test('no body gets a 5xx on any route that takes one', async (t) => {
  const s = await serve(t, { env: { TIERS: 'free=1000000', SANDBOX_CREATE_PER_MINUTE: '1000000' } });
  const sb = await createSandbox(s, 'Hostile Bodies');
  const a = await registerProduction(s, { endpoint: 'https://a.example.com', capability: 'a' });
  const sa = (await (await s.req(`/sandbox/${sb.uuid}/services`, { method: 'POST', headers: { authorization: `Bearer ${sb.apiKey}`, 'content-type': 'application/json' }, body: '{"endpoint":"https://s.example.com","capability":"s"}' })).json()) as { id: string };
  const routes: [string, string, string][] = [
    ['POST', '/admin/api/services', ADMIN_KEY],
    ['PATCH', `/admin/api/services/${a.id}`, ADMIN_KEY],
    ['POST', `/admin/api/services/${a.id}/replacements`, ADMIN_KEY],
    ['POST', `/sandbox/${sb.uuid}/services`, sb.apiKey],
    ['PATCH', `/sandbox/${sb.uuid}/services/${sa.id}`, sb.apiKey],
    ['POST', `/sandbox/${sb.uuid}/services/${sa.id}/replacements`, sb.apiKey],
    ['POST', '/sandboxes', ''],
    ['POST', '/admin/session', ''],
  ];
  const statuses = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...routes), body, contentType, async ([method, path, key], b, ct) => {
      const r = await s.req(path, { method, body: b, headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(ct ? { 'content-type': ct } : {}) } });
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      const text = await r.text();
      if (r.status >= 500) throw new Error(`${method} ${path}: ${r.status} ${text}`);
      // every refusal carries the contract's error body
      return r.status < 400 || (JSON.parse(text) as { error?: { code?: string } }).error?.code !== undefined;
    }),
    { numRuns: 500 },
  );
  t.ok((statuses.get(400) ?? 0) > 0, `answers: ${JSON.stringify(Object.fromEntries(statuses))}`);
  t.equal((await s.req('/livez')).status, 200);
});
