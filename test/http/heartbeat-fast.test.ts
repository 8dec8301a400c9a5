// The heartbeat's common path (liveness/routes.ts): a token this thread has seen accepted is
// renewed from the thread's batch and answered from its callback, and a sandbox's rate limit
// is decided by this thread when it can (its rate-limit lease, or a refusal it knows of).
// What a user sees must not differ from the general path: every heartbeat counted once, 429
// with its fields when over the limit, and a 429 renews nothing. A 204 carries the RateLimit
// fields only once fewer than half the window's requests are left (draft-10 §6.2).
import t from 'tap';
import { Cluster } from 'ioredis';
import { isError, jsonBody } from '../helpers/checks.js';
import { createSandbox, serve } from '../helpers/server.js';
import { leaseKeys } from '../../src/hot/liveness/redis-lease.js';
import type { Leased } from '../helpers/svc.js';

let clock = Date.now();
// tiny: every admission asks Redis, then refusals are known to this thread; wide: batches of
// admissions are leased to this thread (limits of 2,000 a minute and more, ratelimit/admission.ts)
const s = await serve(t, { hooks: { leaseNow: () => clock, sweep: false }, env: { TIERS: 'free=60,pro=600,enterprise=6000,tiny=5,wide=60000' } });

const beat = (path: string, token: string) => s.req(path, { method: 'PUT', headers: { authorization: `Bearer ${token}` } });

async function leasedSandbox(name: string, tier: string): Promise<{ uuid: string; apiKey: string; svc: Leased; path: string }> {
  const sb = await createSandbox(s, name);
  t.equal((await s.admin('POST', `/admin/api/sandboxes/${sb.uuid}/tier`, { tier })).status, 200, `tier ${tier}`);
  const svc = (await (await s.req(`/sandbox/${sb.uuid}/services`, jsonBody('POST', { endpoint: `https://${tier}-fast.example.com`, capability: 'hb-fast', ttl: 30 }, sb.apiKey))).json()) as Leased;
  return { ...sb, svc, path: `/sandbox/${sb.uuid}/services/${svc.id}/heartbeat` };
}

const deadline = async (id: string) => {
  const [, d] = leaseKeys(s.app.keys, id);
  return s.app.redis.zscore(d, id);
};

t.test('over the limit: 429 with its fields, from Redis and then from this thread, and nothing renewed', async (t) => {
  const sb = await leasedSandbox('Tiny Beats', 'tiny');
  // admitted while the window allows (the registration counted too), then refused
  let admitted = 0;
  while ((await beat(sb.path, sb.svc.heartbeatToken)).status === 204) if (++admitted > 5) break;
  t.ok(admitted >= 3 && admitted <= 4, `${admitted} heartbeats admitted of 5 a minute`);
  const refusedLocally0 = s.app.auth.stats.refusedLocally;
  clock += 1000;
  const before = await deadline(sb.svc.id);
  for (let i = 0; i < 3; i++) {
    const r = await beat(sb.path, sb.svc.heartbeatToken);
    t.ok(Number(r.headers.get('retry-after')) > 0, 'Retry-After');
    t.match(r.headers.get('ratelimit') ?? '', /"sandbox";r=0;/, 'RateLimit: none remaining');
    await isError(t, r, 429, 'RATE_LIMITED', `refused heartbeat ${i + 1}`);
  }
  t.ok(s.app.auth.stats.refusedLocally > refusedLocally0, 'refusals answered by this thread (the path without Redis)');
  t.equal(await deadline(sb.svc.id), before, 'no 429 renewed the lease');
});

t.test('under a wide limit: answered under the thread\'s rate-limit lease, each heartbeat counted once and renewing', async (t) => {
  const sb = await leasedSandbox('Wide Beats', 'wide');
  const poll = async () => ((await (await s.req(`/sandbox/${sb.uuid}/poll`)).json()) as { total: number }).total;
  t.equal((await beat(sb.path, sb.svc.heartbeatToken)).status, 204, 'the token is now known to this thread');
  const n0 = await poll();
  const leased0 = s.app.auth.stats.batched;
  const carried0 = s.app.liveness.batch.stats.records;
  const onLine0 = s.app.liveness.batch.stats.lineCalls;
  const N = 30;
  for (let i = 0; i < N; i++) {
    clock += 10;
    const r = await beat(sb.path, sb.svc.heartbeatToken);
    t.equal(r.status, 204);
    t.equal(r.headers.get('cache-control'), null, 'no Cache-Control on a PUT\'s 204 (not cacheable: RFC 9110 §9.3.4)');
    t.equal(r.headers.get('content-length'), null, 'no Content-Length on a 204 (RFC 9110 §8.6)');
    t.equal(r.headers.get('ratelimit'), null, 'no RateLimit field: far from exhaustion');
    t.equal(r.headers.get('ratelimit-policy'), null, 'no RateLimit-Policy field: far from exhaustion');
    t.equal(await deadline(sb.svc.id), String(clock + 30_000), 'renewed: the deadline is now + ttl');
  }
  t.ok(s.app.auth.stats.batched - leased0 > 0, `${s.app.auth.stats.batched - leased0} admitted from the thread's lease`);
  t.equal((await poll()) - n0, N, 'every heartbeat counted once');
  // on a standalone Redis the records of requests answered from the lease ride in the
  // heartbeat call (heartbeats.lua); a cluster sends them apart (rate-count-2.lua)
  const carried = s.app.liveness.batch.stats.records - carried0;
  if (s.app.liveness.redis instanceof Cluster) t.equal(carried, 0, 'a cluster carries none');
  else t.ok(carried > 0, `${carried} records carried by heartbeat calls`);
  // on a standalone Redis those calls go on the heartbeat connection (redis/script-line.ts)
  const onLine = s.app.liveness.batch.stats.lineCalls - onLine0;
  if (s.app.liveness.redis instanceof Cluster) t.equal(onLine, 0, 'a cluster keeps ioredis');
  else t.ok(onLine >= N, `${onLine} heartbeat calls on the heartbeat connection`);
});

t.test('a 204 carries the RateLimit fields once fewer than half the window is left, on either path', async (t) => {
  // free: 60 a minute, below the limits that lease batches: every heartbeat asks Redis (the
  // general path); the registration was the window's first request
  const sb = await leasedSandbox('Half Beats', 'free');
  const seen: (number | null)[] = [];
  for (let k = 1; k <= 60; k++) {
    const r = await beat(sb.path, sb.svc.heartbeatToken);
    if (r.status !== 204) {
      t.equal(r.status, 429, `heartbeat ${k}: 204 or 429`);
      t.match(r.headers.get('ratelimit') ?? '', /"sandbox";r=0;t=\d+/, 'the 429 carries RateLimit');
      t.equal(r.headers.get('ratelimit-policy'), '"sandbox";q=60;w=60', 'and RateLimit-Policy');
      await r.arrayBuffer();
      break;
    }
    const f = r.headers.get('ratelimit');
    const m = f === null ? null : /^"sandbox";r=(\d+);t=(\d+)$/.exec(f);
    if (f !== null) {
      t.ok(m, `heartbeat ${k}: RateLimit well formed (${f})`);
      t.equal(r.headers.get('ratelimit-policy'), '"sandbox";q=60;w=60', `heartbeat ${k}: RateLimit-Policy beside it`);
    } else t.equal(r.headers.get('ratelimit-policy'), null, `heartbeat ${k}: neither field`);
    seen.push(m ? Number(m[1]) : null);
  }
  const first = seen.findIndex((x) => x !== null);
  t.equal(first, 29, 'the first 29 heartbeats (more than half left) carry no fields');
  t.equal(seen[first], 29, 'the first with fields: 29 of 60 left (registration and 30 heartbeats used)');
  t.same(seen.slice(first), seen.slice(first).map((_, i) => 29 - i), 'then on every 204, counting down to 0');
  t.equal(seen.length, 59, '59 heartbeats admitted (the registration was the 60th request)');
});

t.test('under a lease (the thread decides): fields once fewer than half the window is left', async (t) => {
  // wide: 60,000 a minute, answered from the thread's rate-limit lease; 30,000 requests are
  // too many for a test, so the window is filled in Redis first as another node would
  const sb = await leasedSandbox('Half Wide', 'wide');
  t.equal((await beat(sb.path, sb.svc.heartbeatToken)).status, 204, 'the token is now known to this thread');
  const far = await beat(sb.path, sb.svc.heartbeatToken);
  t.equal(far.headers.get('ratelimit'), null, 'far from exhaustion: no fields');
  s.app.auth.dropAdmissions(sb.uuid);
  // 30,000 requests of another node, counted through the same script (one call of n)
  await s.app.auth.limitManyOrThrow(sb.uuid, 30_000);
  const leased0 = s.app.auth.stats.batched;
  let near: Response | null = null;
  for (let i = 0; i < 5; i++) near = await beat(sb.path, sb.svc.heartbeatToken);
  t.ok(s.app.auth.stats.batched > leased0, 'answered from the thread\'s lease');
  t.equal(near!.status, 204);
  t.match(near!.headers.get('ratelimit') ?? '', /^"sandbox";r=\d+;t=\d+$/, 'fewer than half left: RateLimit');
  t.ok(Number(/r=(\d+)/.exec(near!.headers.get('ratelimit') ?? '')?.[1]) < 30_000, 'and it says fewer than half are left');
  t.equal(near!.headers.get('ratelimit-policy'), '"sandbox";q=60000;w=60', 'RateLimit-Policy beside it');
});

t.test('REDIS_HEARTBEAT_LINE=false: heartbeat calls through ioredis, answered alike', async (t) => {
  const off = await serve(t, { hooks: { sweep: false }, env: { REDIS_HEARTBEAT_LINE: 'false' } });
  const sb = await createSandbox(off, 'No Line');
  const svc = (await (await off.req(`/sandbox/${sb.uuid}/services`, jsonBody('POST', { endpoint: 'https://no-line.example.com', capability: 'hb-fast', ttl: 30 }, sb.apiKey))).json()) as Leased;
  const calls0 = off.app.liveness.batch.stats.calls;
  for (let i = 0; i < 3; i++) {
    const r = await off.req(`/sandbox/${sb.uuid}/services/${svc.id}/heartbeat`, { method: 'PUT', headers: { authorization: `Bearer ${svc.heartbeatToken}` } });
    t.equal(r.status, 204);
  }
  t.ok(off.app.liveness.batch.stats.calls - calls0 >= 3, 'the calls were sent');
  t.equal(off.app.liveness.batch.stats.lineCalls, 0, 'none on a heartbeat connection');
});
