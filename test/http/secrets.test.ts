// Secrets. (1) Keys are stored only as hashes: neither PostgreSQL nor Redis holds a sandbox
// key or the admin key. (2) No key, cookie, CSRF token or Authorization value reaches any
// log line, on error paths included: the built server runs as a child process logging
// everything (trace level, access log on), and the test forces 500s (a table gone from
// under it), 503s (Redis, then PostgreSQL cut), 4xx refusals and oversized bodies while
// the requests carry every secret, then greps all output. (3) Sandbox UUIDs are not
// enumerable: an unknown and a foreign sandbox look exactly alike on every key-protected
// route (status, body, headers).
import t from 'tap';
import { createHash, randomUUID } from 'node:crypto';
import pg from 'pg';
import { Redis } from 'ioredis';
import { loadConfig } from '../../src/hot/config.js';
import { createSandbox, registerProduction, serve } from '../helpers/server.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { serveProcess } from '../helpers/server-process.js';
import { startProxy } from '../helpers/tcp-proxy.js';
import { ADMIN_KEY, baseEnv } from '../helpers/env.js';

const json = { 'content-type': 'application/json' };

t.test('keys are stored hashed, nowhere in clear', async (t) => {
  const s = await serve(t);
  const sb = await createSandbox(s, 'Hashed');
  const random = sb.apiKey.split('_sb_')[1]!;
  const login = await s.req('/admin/session', { method: 'POST', headers: json, body: JSON.stringify({ apiKey: ADMIN_KEY }) });
  t.equal(login.status, 200);
  await s.req('/services', { headers: { authorization: `Bearer ${sb.apiKey}` } });

  const rows = await s.app.pg.query<{ row: string }>('SELECT row_to_json(s)::text AS row FROM sandboxes s');
  const dump = rows.rows.map((r) => r.row).join('\n');
  t.notMatch(dump, random, 'PostgreSQL holds no sandbox key');
  t.notMatch(dump, ADMIN_KEY, '... nor the admin key');
  const stored = await s.app.pg.query<{ key_hash: Buffer }>('SELECT key_hash FROM sandboxes WHERE uuid = $1', [sb.uuid]);
  t.same(stored.rows[0]!.key_hash, createHash('sha256').update(sb.apiKey).digest(), 'only sha256(key)');

  let redisDump = '';
  const r = s.app.redis;
  // every primary when the suite runs on a Redis Cluster (SCAN sees one node)
  for (const node of 'nodes' in r && typeof r.nodes === 'function' ? r.nodes('master') : [r as Redis]) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', s.cfg.redisKeyPrefix + '*', 'COUNT', 1000);
      cursor = next;
      for (const k of keys) {
        redisDump += k + '\n';
        const type = await node.type(k);
        if (type === 'string') redisDump += (await node.get(k)) + '\n';
        else if (type === 'hash') redisDump += JSON.stringify(await node.hgetall(k)) + '\n';
      }
    } while (cursor !== '0');
  }
  t.ok(redisDump.includes(createHash('sha256').update(sb.apiKey).digest('hex')), 'Redis maps the key hash to the sandbox');
  t.notMatch(redisDump, random, 'Redis holds no sandbox key');
  t.notMatch(redisDump, ADMIN_KEY, '... nor the admin key');
});

t.test('no secret in any log line, error paths included', async (t) => {
  // the suite's Redis and PostgreSQL, each behind a proxy the test cuts
  const cfg = loadConfig(baseEnv());
  const redisProxy = await startProxy(Number(new URL(cfg.redisUrl).port || 6379));
  const pgProxy = await startProxy(Number(new URL(cfg.databaseUrl).port));
  t.teardown(async () => {
    await redisProxy.close();
    await pgProxy.close();
  });
  const srv = await serveProcess(t, {
    through: { redis: redisProxy, postgres: pgProxy },
    env: { LOG_LEVEL: 'trace', ACCESS_LOG: 'true', ACCESS_LOG_LEVEL: 'info', MAX_BODY_BYTES: '2048' },
  });
  // the test's own way into the server's database, past the proxy
  const direct = new URL(srv.cfg.databaseUrl);
  direct.port = new URL(cfg.databaseUrl).port;
  const req = (path: string, init: RequestInit = {}) => fetch(srv.url + path, { redirect: 'manual', ...init, signal: AbortSignal.timeout(20_000) });

  const created = (await (await req('/sandboxes', { method: 'POST', headers: json, body: '{"name":"Secrets"}' })).json()) as { uuid: string; apiKey: string };
  const login = await req('/admin/session', { method: 'POST', headers: json, body: JSON.stringify({ apiKey: ADMIN_KEY }) });
  const { csrfToken } = (await login.json()) as { csrfToken: string };
  const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
  const secrets = { sandboxKey: created.apiKey, sandboxKeyRandom: created.apiKey.split('_sb_')[1]!, adminKey: ADMIN_KEY, cookie: cookie.split('=')[1]!, csrf: csrfToken, forged: 'zz_sb_' + 'Q'.repeat(40) };
  const sbAuth = { authorization: `Bearer ${secrets.sandboxKey}` };
  const adminAuth = { authorization: `Bearer ${ADMIN_KEY}` };
  const session = { cookie, 'x-csrf-token': csrfToken };
  const svc = { endpoint: 'https://s.example.com', capability: 'secret' };
  const sbPath = `/sandbox/${created.uuid}/services`;

  // every request of a round carries secrets in every place a client might put them
  const round = async (what: string, expect: (status: number) => boolean) => {
    const calls: [string, RequestInit][] = [
      [sbPath, { method: 'POST', headers: { ...sbAuth, ...json }, body: JSON.stringify(svc) }],
      [sbPath, { headers: sbAuth }],
      ['/services?capability=secret', { headers: sbAuth }],
      ['/services?capability=secret', { headers: { authorization: `Bearer ${secrets.forged}` } }],
      ['/admin/api/services', { method: 'POST', headers: { ...adminAuth, ...json }, body: JSON.stringify(svc) }],
      ['/admin/api/services', { method: 'POST', headers: { ...session, ...json }, body: JSON.stringify(svc) }],
      ['/admin/api/services', { method: 'POST', headers: { cookie, 'x-csrf-token': 'wrong', ...json }, body: JSON.stringify(svc) }],
      ['/admin/api/stats', { headers: session }],
      ['/admin/session', { method: 'POST', headers: json, body: JSON.stringify({ apiKey: secrets.forged }) }],
      ['/admin/session', { method: 'POST', headers: json, body: `{"apiKey": "${ADMIN_KEY}"` }], // bad JSON holding the key
      [sbPath, { method: 'POST', headers: { ...sbAuth, ...json }, body: JSON.stringify({ ...svc, note: secrets.sandboxKey.repeat(100) }) }], // 413
      ['/nowhere', { headers: { ...sbAuth, cookie } }],
    ];
    const statuses = [];
    for (const [path, init] of calls) statuses.push((await req(path, init)).status);
    t.ok(statuses.some(expect), `${what}: ${statuses.join(' ')}`);
  };

  await round('healthy', (s) => s === 201);
  await redisProxy.set('refuse');
  await waitFor('redis outage noticed', async () => (JSON.parse(await (await req('/readyz')).text()) as { redis: boolean }).redis === false);
  await round('Redis unreachable', (s) => s === 503);
  await redisProxy.set('pass');
  await waitFor('redis back', async () => (await req('/readyz')).status === 200);
  await pgProxy.set('refuse');
  await waitFor('postgres outage noticed', async () => (JSON.parse(await (await req('/readyz')).text()) as { postgres: boolean }).postgres === false);
  await round('PostgreSQL unreachable', (s) => s === 503);
  await pgProxy.set('pass');
  await waitFor('postgres back', async () => (JSON.parse(await (await req('/readyz')).text()) as { postgres: boolean }).postgres);
  // a genuine 500: a table gone from under the server
  const c = new pg.Client({ connectionString: direct.toString() });
  await c.connect();
  await c.query('DROP TABLE service_properties CASCADE');
  await c.end();
  await round('internal errors', (s) => s === 500);
  await sleep(300);

  const out = srv.logs.join('\n');
  t.ok(srv.logs.some((l) => /"level":50/.test(l) && /request failed/.test(l)), 'the 500s were logged as errors (with their stack)');
  t.ok(srv.logs.some((l) => /Redis is unreachable/.test(l)), 'the outages were logged');
  t.ok(srv.logs.length > 50, `${srv.logs.length} log lines captured`);
  for (const [name, value] of Object.entries(secrets)) t.notOk(out.includes(value), `no ${name} in any log line`);
  t.notMatch(out, /Bearer\s+\S/, 'no Authorization value in any log line');
});

t.test('unknown and foreign sandboxes look alike on every key-protected route', async (t) => {
  const s = await serve(t, { env: { TIERS: 'free=1000000' } });
  const mine = await createSandbox(s, 'Mine');
  const theirs = await createSandbox(s, 'Theirs');
  const theirSvc = (await (await s.req(`/sandbox/${theirs.uuid}/services`, { method: 'POST', headers: { authorization: `Bearer ${theirs.apiKey}`, ...json }, body: '{"endpoint":"https://t.example.com","capability":"t"}' })).json()) as { id: string };
  await registerProduction(s, { endpoint: 'https://p.example.com', capability: 'p' });
  const unknown = randomUUID();
  const fakeId = 'A'.repeat(16);
  const routes: [string, (uuid: string, id: string) => string, string | undefined][] = [
    ['POST', (u) => `/sandbox/${u}/services`, '{"endpoint":"https://x.example.com","capability":"x"}'],
    ['GET', (u) => `/sandbox/${u}/services`, undefined],
    ['GET', (u) => `/sandbox/${u}/services?capability=t`, undefined],
    ['GET', (u, id) => `/sandbox/${u}/services/${id}`, undefined],
    ['PATCH', (u, id) => `/sandbox/${u}/services/${id}`, '{"deprecated":true}'],
    ['DELETE', (u, id) => `/sandbox/${u}/services/${id}`, undefined],
    ['GET', (u, id) => `/sandbox/${u}/services/${id}/replacements`, undefined],
    ['POST', (u, id) => `/sandbox/${u}/services/${id}/replacements`, `{"serviceId":"${fakeId}"}`],
  ];
  const shape = async (method: string, path: string, body: string | undefined, key: string | null) => {
    const r = await s.req(path, { method, body, headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(body ? json : {}) } });
    const h = (n: string) => r.headers.get(n);
    return { status: r.status, body: await r.text(), wwwAuthenticate: h('www-authenticate'), cacheControl: h('cache-control'), rateLimit: h('ratelimit'), contentType: h('content-type') };
  };
  for (const [method, path, body] of routes) {
    for (const [who, key] of [
      ['my key', mine.apiKey],
      ['no key', null],
      ['a forged key', 'zz_sb_' + 'Q'.repeat(40)],
    ] as const) {
      const foreign = await shape(method, path(theirs.uuid, theirSvc.id), body, key);
      const missing = await shape(method, path(unknown, fakeId), body, key);
      const malformed = await shape(method, path('not-a-uuid', fakeId), body, key);
      t.same(foreign, missing, `${method} ${path(':uuid', ':id')} with ${who}: foreign = unknown (${foreign.status})`);
      t.same(malformed, missing, `... = malformed uuid`);
      t.equal(foreign.status, 401);
    }
  }
  // their service is untouched by all of that
  const still = await s.req(`/sandbox/${theirs.uuid}/services/${theirSvc.id}`, { headers: { authorization: `Bearer ${theirs.apiKey}` } });
  t.equal(still.status, 200, 'nothing was written to the foreign sandbox');
  t.equal(((await still.json()) as { deprecated: boolean }).deprecated, false);
  // the public dashboard and poll: 404 JSON for an unknown (or malformed) uuid, by contract
  for (const p of ['dashboard', 'poll']) {
    const a = await s.req(`/sandbox/${unknown}/${p}`);
    const b = await s.req(`/sandbox/not-a-uuid/${p}`);
    t.equal(a.status, 404);
    t.same(await a.json(), await b.json(), `${p}: unknown and malformed look alike`);
  }
});
