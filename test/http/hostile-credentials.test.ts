// A credential is checked before a body is read (contract "Input limits"): on every route
// that takes a sandbox key, a heartbeat token or the admin credential together with a body,
// a missing, malformed, forged or foreign credential (or a sandbox that does not exist) is a
// 401 that closes the connection; its body never reaches the route (never parsed) and at
// most what arrived with the request's head is copied (one read of the socket), nothing at
// all when the thread can tell without I/O. Generated (fast-check) over routes, credentials
// and body sizes up to 4 MiB, measured in bytes through the body reader's test hooks
// (ThreadHooks.body), never in time; a refused request counts against no sandbox. And on a
// raw socket: a client that has sent only the start of a 3.4 MB batch gets its 401 and the
// connection closed without sending the rest.
import t from 'tap';
import fc from 'fast-check';
import { randomBytes, randomUUID } from 'node:crypto';
import { isError, jsonBody, keyed } from '../helpers/checks.js';
import { createSandbox, registerProduction, serve } from '../helpers/server.js';
import { RawClient } from '../helpers/raw-client.js';
import { collect, rawSocket } from '../helpers/raw-socket.js';
import { newSandboxKey } from '../../src/hot/sandboxes/keys.js';
import { newHeartbeatToken } from '../../src/hot/liveness/tokens.js';
import type { Leased } from '../helpers/svc.js';
import { ADMIN_KEY } from '../helpers/env.js';

/** what uWS copies of a body with the request's head: at most one read of the socket (uSockets' receive buffer, 512 KiB) */
const ONE_READ = 512 * 1024;
const MAX = 4 * 1024 * 1024;

// what reading bodies cost, summed over requests (the tests send one at a time)
const cost = { bytes: 0, handed: 0 };
const s = await serve(t, {
  env: { MAX_BODY_BYTES: String(MAX), TIERS: 'free=1000000', LOGIN_FAILURES_PER_MINUTE: '1000000', SANDBOX_CREATE_PER_MINUTE: '1000' },
  hooks: { body: { read: (_req, n) => (cost.bytes += n), handed: () => cost.handed++ } },
});
const A = await createSandbox(s, 'Alpha');
const B = await createSandbox(s, 'Beta');
const a1 = (await (await s.req(`/sandbox/${A.uuid}/services`, jsonBody('POST', { endpoint: 'https://a1.example.com', capability: 'c', ttl: 60 }, A.apiKey))).json()) as Leased;
const p1 = (await registerProduction(s, { endpoint: 'https://p1.example.com', capability: 'c', ttl: 60 })) as Leased;
const p2 = (await registerProduction(s, { endpoint: 'https://p2.example.com', capability: 'c', ttl: 60 })) as Leased;

/** A credential: its headers (made per request: forged ones are new each time), whether the thread refuses it without I/O, and a path of an unknown sandbox instead of A's. */
interface Cred {
  what: string;
  headers: () => Record<string, string>;
  sync: boolean;
  unknownSandbox?: boolean;
}
const bearer = (k: string) => ({ authorization: `Bearer ${k}` });
const badChecksum = A.apiKey.slice(0, -1) + (A.apiKey.endsWith('A') ? 'B' : 'A');
const SANDBOX: Cred[] = [
  { what: 'no key', headers: () => ({}), sync: true },
  { what: 'Bearer alone', headers: () => ({ authorization: 'Bearer' }), sync: true },
  { what: 'malformed', headers: () => bearer('not-a-key'), sync: true },
  { what: 'bad checksum', headers: () => bearer(badChecksum), sync: true },
  { what: 'forged checksum-valid key', headers: () => bearer(newSandboxKey('forged').key), sync: false },
  { what: "another sandbox's key", headers: () => bearer(B.apiKey), sync: false },
  { what: 'a key, unknown sandbox', headers: () => bearer(A.apiKey), sync: false, unknownSandbox: true },
];
const HEARTBEAT: Cred[] = [
  { what: 'no token', headers: () => ({}), sync: true },
  { what: 'malformed', headers: () => bearer('x_hb_nope'), sync: true },
  { what: 'the sandbox key', headers: () => bearer(A.apiKey), sync: true },
  { what: 'forged checksum-valid token', headers: () => bearer(newHeartbeatToken('prod').token), sync: false },
  { what: "another service's token", headers: () => bearer(p2.heartbeatToken), sync: false },
];
const ADMIN: Cred[] = [
  { what: 'nothing', headers: () => ({}), sync: true },
  { what: 'wrong admin key', headers: () => bearer('wrong-admin-key'), sync: false },
  { what: 'a sandbox key', headers: () => bearer(A.apiKey), sync: false },
  { what: 'an unknown session', headers: () => ({ cookie: 'registry_admin=' + randomBytes(32).toString('base64url') }), sync: false },
];

/** every route with a body that needs a credential: method, path (`sb`: the sandbox uuid segment) and its credentials */
const ROUTES: { method: string; path: (sb: string) => string; creds: Cred[] }[] = [
  { method: 'POST', path: (sb) => `/sandbox/${sb}/services`, creds: SANDBOX },
  { method: 'POST', path: (sb) => `/sandbox/${sb}/services/batch`, creds: SANDBOX },
  { method: 'PATCH', path: (sb) => `/sandbox/${sb}/services/${a1.id}`, creds: SANDBOX },
  { method: 'DELETE', path: (sb) => `/sandbox/${sb}/services/${a1.id}`, creds: SANDBOX },
  { method: 'POST', path: (sb) => `/sandbox/${sb}/services/${a1.id}/heartbeat-token`, creds: SANDBOX },
  { method: 'POST', path: (sb) => `/sandbox/${sb}/services/${a1.id}/replacements`, creds: SANDBOX },
  { method: 'PUT', path: (sb) => `/sandbox/${sb}/services/${a1.id}/heartbeat`, creds: [...HEARTBEAT, { what: 'a production token', headers: () => bearer(p1.heartbeatToken), sync: false }] },
  { method: 'PUT', path: () => `/services/${p1.id}/heartbeat`, creds: [...HEARTBEAT, { what: "a sandbox service's token", headers: () => bearer(a1.heartbeatToken), sync: false }] },
  { method: 'POST', path: () => '/admin/api/services', creds: ADMIN },
  { method: 'POST', path: () => '/admin/api/services/batch', creds: ADMIN },
  { method: 'PATCH', path: () => `/admin/api/services/${p1.id}`, creds: ADMIN },
  { method: 'DELETE', path: () => `/admin/api/services/${p1.id}`, creds: ADMIN },
  { method: 'POST', path: () => `/admin/api/services/${p1.id}/heartbeat-token`, creds: ADMIN },
  { method: 'POST', path: () => `/admin/api/services/${p1.id}/replacements`, creds: ADMIN },
  { method: 'POST', path: (sb) => `/admin/api/sandboxes/${sb}/tier`, creds: ADMIN },
  { method: 'DELETE', path: () => '/admin/session', creds: ADMIN },
];

/** `size` bytes of a registration batch (cut or padded with spaces): it is never meant to be read */
const BATCH = Buffer.from(JSON.stringify({ services: Array.from({ length: 1000 }, (_, i) => ({ endpoint: `https://b${i}.example.com/${'p'.repeat(3300)}`, capability: 'flood' })) }));
const bodyOf = (size: number) => (size <= BATCH.length ? BATCH.subarray(0, size) : Buffer.concat([BATCH, Buffer.alloc(size - BATCH.length, 0x20)]));

function head(method: string, path: string, headers: Record<string, string>, length: number): Buffer {
  const lines = Object.entries({ host: 'x', 'content-type': 'application/json', 'content-length': String(length), ...headers }).map(([k, v]) => `${k}: ${v}\r\n`);
  return Buffer.from(`${method} ${path} HTTP/1.1\r\n${lines.join('')}\r\n`, 'latin1');
}

const rows = async () => Number((await s.app.pg.query<{ n: string }>('SELECT count(*) AS n FROM services')).rows[0]!.n);
const totalOf = async (uuid: string) => ((await (await s.req(`/sandbox/${uuid}/poll`)).json()) as { total: number }).total;

t.test('a refused credential on any route with a body: 401, the connection closed, the body never parsed and at most one read of it copied', async (t) => {
  const rows0 = await rows();
  const total0 = await totalOf(A.uuid);
  const totalB0 = await totalOf(B.uuid);
  const seen = new Set<string>();
  const size = fc.oneof(fc.integer({ min: 1, max: 4096 }), fc.integer({ min: 4096, max: MAX }));
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...ROUTES), fc.nat(), size, async (route, pick, n) => {
      const cred = route.creds[pick % route.creds.length]!;
      const path = route.path(cred.unknownSandbox ? randomUUID() : A.uuid);
      const what = `${route.method} ${path} with ${cred.what}, ${n} bytes`;
      seen.add(`${route.method} ${route.path(':uuid')}`);
      cost.bytes = 0;
      cost.handed = 0;
      const c = new RawClient(s.server.port);
      try {
        const r = await c.request(head(route.method, path, cred.headers(), n), bodyOf(n));
        if (r.status !== 401) throw new Error(`${what}: ${r.status} ${r.body.slice(0, 200)}`);
        if (r.headers.connection !== 'close') throw new Error(`${what}: the connection stays open for the unread body`);
      } finally {
        c.close();
      }
      if (cost.handed !== 0) throw new Error(`${what}: the body went to the route (parsed)`);
      const bound = cred.sync ? 0 : Math.min(n, ONE_READ);
      if (cost.bytes > bound) throw new Error(`${what}: ${cost.bytes} body bytes copied, more than ${bound}`);
    }),
    { numRuns: 150 },
  );
  t.equal(seen.size, ROUTES.length, `all ${ROUTES.length} routes tried`);
  t.equal(await rows(), rows0, 'nothing written');
  t.equal(await totalOf(A.uuid), total0, 'no refused request counted against the sandbox it aimed at');
  t.equal(await totalOf(B.uuid), totalB0, 'nor against the sandbox of the foreign key');
  t.equal((await s.req('/readyz')).status, 200, 'ready afterwards');
});

t.test('the hooks see what an accepted credential costs: the whole body, parsed once', async (t) => {
  for (const [path, key] of [[`/sandbox/${A.uuid}/services/batch`, A.apiKey], ['/admin/api/services/batch', ADMIN_KEY]] as const) {
    cost.bytes = 0;
    cost.handed = 0;
    const body = bodyOf(BATCH.length - 1); // valid JSON but for its last byte
    await isError(t, await s.req(path, { method: 'POST', headers: { 'content-type': 'application/json', ...bearer(key) }, body }), 400, 'BAD_JSON', path);
    t.equal(cost.bytes, body.length, `${path}: every byte read`);
    t.equal(cost.handed, 1, `${path}: handed to the route once`);
  }
  const before = await totalOf(A.uuid);
  await (await s.req(`/sandbox/${A.uuid}/services/batch`, { method: 'POST', headers: { 'content-type': 'application/json', ...bearer(A.apiKey) }, body: '{"services":[]}' })).body?.cancel();
  t.equal((await totalOf(A.uuid)) - before, 1, 'an invalid batch with a valid key counts one request');
});

t.test('a heartbeat: a wrong token with a bad body is 401 (the body never decides first); the right token with it is 400', async (t) => {
  const bad = { 'content-type': 'application/json' };
  for (const [path, own, wrong] of [[`/services/${p1.id}/heartbeat`, p1.heartbeatToken, p2.heartbeatToken], [`/sandbox/${A.uuid}/services/${a1.id}/heartbeat`, a1.heartbeatToken, newHeartbeatToken('alpha').token]] as const) {
    for (const body of ['{', '{"status":"bogus"}']) {
      await isError(t, await s.req(path, { method: 'PUT', headers: { ...bad, ...bearer(newHeartbeatToken('prod').token) }, body }), 401, 'UNAUTHORIZED', `${path}: a forged token, body ${body}`);
      await isError(t, await s.req(path, { method: 'PUT', headers: { ...bad, ...bearer(wrong) }, body }), 401, 'UNAUTHORIZED', `${path}: a wrong token, body ${body}`);
      await isError(t, await s.req(path, { method: 'PUT', headers: { ...bad, ...bearer(own) }, body }), 400, undefined, `${path}: its own token, body ${body}`);
    }
    // a token first seen with a body: verified, then its body read (and remembered: the next is the common path)
    t.equal((await s.req(path, { method: 'PUT', headers: { ...bad, ...bearer(own) }, body: '{"status":"passing"}' })).status, 204, `${path}: its own token with a body: 204`);
  }
});

t.test('a client still sending a 3.4 MB batch gets its 401 and the connection closed before it has sent the rest', async (t) => {
  const body = bodyOf(3_400_000);
  const cases: [string, string, Record<string, string>][] = [
    [`/sandbox/${A.uuid}/services/batch`, 'no key', {}],
    [`/sandbox/${A.uuid}/services/batch`, 'a forged key', bearer(newSandboxKey('forged').key)],
    [`/sandbox/${A.uuid}/services/batch`, "another sandbox's key", bearer(B.apiKey)],
    [`/sandbox/${randomUUID()}/services/batch`, 'an unknown sandbox', bearer(A.apiKey)],
    ['/admin/api/services/batch', 'a wrong admin key', bearer('wrong-admin-key')],
    [`/services/${p1.id}/heartbeat`, 'a forged token', bearer(newHeartbeatToken('prod').token)],
  ];
  for (const [path, what, headers] of cases) {
    const c = await rawSocket(s.server.port);
    c.on('error', () => undefined);
    // the head and the first 64 KiB; the rest is never sent
    c.write(Buffer.concat([head(path.endsWith('heartbeat') ? 'PUT' : 'POST', path, headers, body.length), body.subarray(0, 64 * 1024)]));
    const r = await collect(c, 5000);
    t.match(r.data, /^HTTP\/1\.1 401 /, `${what}: 401 before the body is complete`);
    t.match(r.data, /\r\nConnection: close\r\n/i, `${what}: Connection: close`);
    t.ok(r.closed, `${what}: the server closed the connection`);
    c.destroy();
  }
  const ok = await s.req(`/sandbox/${A.uuid}/services`, keyed(A.apiKey));
  t.equal(ok.status, 200, 'the sandbox is served as before');
  await ok.body?.cancel();
});
