// What a heartbeat costs (issue 23, deliverable 2): one that changes nothing sends PostgreSQL
// nothing and changes no ETag; a token refused after a rotation is 401 and costs Redis one
// call per remembering period (PostgreSQL none); the thread's token memory stays within its
// byte budget under a flood of forged tokens, and the service's own token keeps working.
import t from 'tap';
import { isError, jsonBody } from '../helpers/checks.js';
import { createSandbox, registerProduction, serve } from '../helpers/server.js';
import { newHeartbeatToken } from '../../src/hot/liveness/tokens.js';
import { REFUSED_MS } from '../../src/hot/liveness/token-memory.js';
import type { Leased } from '../helpers/svc.js';

let clock = Date.now();
// the smallest budget the configuration takes (1 MiB: 256 KiB of it for refused tokens)
const s = await serve(t, { hooks: { leaseNow: () => clock, sweep: false }, env: { HEARTBEAT_TOKEN_CACHE_MB: '1' } });
const BUDGET = 1024 * 1024;

/** PostgreSQL work about services or sandboxes (pool queries), and connections taken (transactions) */
const pg = { queries: 0, connects: 0 };
let inQuery = false;
const pool = s.app.pg as unknown as { query: (...a: unknown[]) => unknown; connect: (...a: unknown[]) => unknown };
const realQuery = pool.query.bind(pool);
const realConnect = pool.connect.bind(pool);
pool.query = (...a: unknown[]) => {
  const text = typeof a[0] === 'string' ? a[0] : ((a[0] as { text?: string } | undefined)?.text ?? '');
  if (/\b(services|sandboxes)\b/.test(text)) pg.queries++;
  inQuery = true; // pg-pool's query() takes its connection through connect(), synchronously
  try {
    return realQuery(...a);
  } finally {
    inQuery = false;
  }
};
pool.connect = (...a: unknown[]) => {
  if (!inQuery) pg.connects++;
  return realConnect(...a);
};

const beat = (path: string, token: string) => s.req(path, { method: 'PUT', headers: { authorization: `Bearer ${token}` } });
const pgWork = () => pg.queries + pg.connects;

t.test('a heartbeat that changes nothing: no PostgreSQL query, no connection, same ETag', async (t) => {
  const a = (await registerProduction(s, { endpoint: 'https://cost-a.example.com', capability: 'hb-cost', ttl: 30 })) as Leased;
  const sb = await createSandbox(s, 'Costs');
  const c = (await (await s.req(`/sandbox/${sb.uuid}/services`, jsonBody('POST', { endpoint: 'https://cost-c.example.com', capability: 'hb-cost', ttl: 30 }, sb.apiKey))).json()) as Leased;
  const etag = (await s.req('/services?capability=hb-cost')).headers.get('etag')!;
  const sbEtag = (await s.req(`/sandbox/${sb.uuid}/services?capability=hb-cost`, { headers: { authorization: `Bearer ${sb.apiKey}` } })).headers.get('etag')!;
  const before = pgWork();
  for (let i = 0; i < 20; i++) {
    clock += 5000;
    t.equal((await beat(`/services/${a.id}/heartbeat`, a.heartbeatToken)).status, 204);
    t.equal((await beat(`/sandbox/${sb.uuid}/services/${c.id}/heartbeat`, c.heartbeatToken)).status, 204);
  }
  t.equal(pgWork() - before, 0, 'PostgreSQL saw nothing of 40 heartbeats');
  t.equal((await s.req('/services?capability=hb-cost', { headers: { 'if-none-match': etag } })).status, 304, 'same ETag (production)');
  const r = await s.req(`/sandbox/${sb.uuid}/services?capability=hb-cost`, { headers: { authorization: `Bearer ${sb.apiKey}`, 'if-none-match': sbEtag } });
  t.equal(r.status, 304, 'same ETag (sandbox)');
  t.ok(s.app.heartbeatTokens.stats.hashed <= 2, 'each token hashed once, then found in memory');
});

t.test('after a rotation the old token is 401, from Redis once per remembering period, never from PostgreSQL', async (t) => {
  const a = (await registerProduction(s, { endpoint: 'https://cost-rot.example.com', capability: 'hb-cost-rot', ttl: 30 })) as Leased;
  t.equal((await beat(`/services/${a.id}/heartbeat`, a.heartbeatToken)).status, 204, 'the token works (and is remembered)');
  const r = await s.admin('POST', `/admin/api/services/${a.id}/heartbeat-token`);
  t.equal(r.status, 201);
  const fresh = ((await r.json()) as { heartbeatToken: string }).heartbeatToken;
  const pg0 = pgWork();
  const beats0 = s.app.liveness.batch.stats.beats;
  const mem0 = s.app.heartbeatTokens.stats.refusedFromMemory;
  for (let i = 0; i < 10; i++) await isError(t, await beat(`/services/${a.id}/heartbeat`, a.heartbeatToken), 401, 'UNAUTHORIZED', 'old token');
  t.equal(s.app.liveness.batch.stats.beats - beats0, 1, 'one heartbeat reached Redis');
  t.equal(s.app.heartbeatTokens.stats.refusedFromMemory - mem0, 9, 'nine answered from memory');
  clock += REFUSED_MS + 1;
  for (let i = 0; i < 10; i++) await isError(t, await beat(`/services/${a.id}/heartbeat`, a.heartbeatToken), 401, 'UNAUTHORIZED', 'old token, next period');
  t.equal(s.app.liveness.batch.stats.beats - beats0, 2, 'one more Redis call in the next period');
  t.equal(pgWork() - pg0, 0, 'PostgreSQL saw none of them');
  t.equal((await beat(`/services/${a.id}/heartbeat`, fresh)).status, 204, 'the new token works');
  await isError(t, await beat(`/services/${a.id}/heartbeat`, a.heartbeatToken), 401, 'UNAUTHORIZED', 'the old one still refused');
});

t.test('a flood of forged tokens: the memory stays within its budget, real tokens keep working', async (t) => {
  const a = (await registerProduction(s, { endpoint: 'https://cost-flood.example.com', capability: 'hb-cost-flood', ttl: 30 })) as Leased;
  t.equal((await beat(`/services/${a.id}/heartbeat`, a.heartbeatToken)).status, 204);
  const pg0 = pgWork();
  const hashed0 = s.app.heartbeatTokens.stats.hashed;
  let next = 0;
  const N = 3000; // ~160 bytes each remembered: well past the 256 KiB of refused tokens
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next < N) {
      next++;
      const r = await beat(`/services/${a.id}/heartbeat`, newHeartbeatToken('prod').token);
      t.equal(r.status, 401);
      await r.body?.cancel();
    }
  }));
  // the refused tokens' quarter of the budget, plus the few accepted tokens of this file
  t.ok(s.app.heartbeatTokens.bytes() <= BUDGET / 4 + 4096, `the maps hold ${s.app.heartbeatTokens.bytes()} bytes, within ${BUDGET / 4} + the accepted ones`);
  t.equal(s.app.heartbeatTokens.stats.hashed - hashed0, N, 'every forged token was new to the memory');
  t.equal(pgWork() - pg0, 0, 'PostgreSQL saw none of them');
  const hashed1 = s.app.heartbeatTokens.stats.hashed;
  t.equal((await beat(`/services/${a.id}/heartbeat`, a.heartbeatToken)).status, 204, 'the real token still works');
  t.equal(s.app.heartbeatTokens.stats.hashed, hashed1, '... found in memory: forged ones evicted forged ones only');
});
