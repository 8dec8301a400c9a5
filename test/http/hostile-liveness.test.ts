// Hostile heartbeats, property-based (fast-check), against the live server: any credential,
// path and body sent to PUT …/heartbeat and POST …/heartbeat-token gets no 5xx and, when 4xx,
// the contract's error body; and a heartbeat that is not answered 204 changes nothing — not
// the row in PostgreSQL, not the lease's deadline in Redis.
import t from 'tap';
import fc from 'fast-check';
import { nearService } from '../helpers/hostile.js';
import { createSandbox, registerProduction, serve } from '../helpers/server.js';
import { leaseKeys } from '../../src/hot/liveness/redis-lease.js';
import type { Leased } from '../helpers/svc.js';
import { ADMIN_KEY } from '../helpers/env.js';

let clock = Date.now();
const s = await serve(t, { env: { TIERS: 'free=1000000', LOGIN_FAILURES_PER_MINUTE: '1000000' }, hooks: { leaseNow: () => clock, sweep: false } });
const sb = await createSandbox(s, 'Hostile Beats');
const other = await createSandbox(s, 'Other Beats');
const prod = (await registerProduction(s, { endpoint: 'https://hb.example.com', capability: 'hb', ttl: 30 })) as Leased;
const prod2 = (await registerProduction(s, { endpoint: 'https://hb2.example.com', capability: 'hb', ttl: 30 })) as Leased;
const sbSvc = (await (await s.req(`/sandbox/${sb.uuid}/services`, { method: 'POST', headers: { authorization: `Bearer ${sb.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ endpoint: 'https://sbhb.example.com', capability: 'hb', ttl: 30 }) })).json()) as Leased;

const state = async (id: string) => {
  const r = await s.app.pg.query<{ version: string; hs: string; tok: Buffer }>('SELECT version, health_status AS hs, hb_token_hash AS tok FROM services WHERE id = $1', [id]);
  const [, d] = leaseKeys(s.app.keys, id);
  return JSON.stringify({ ...r.rows[0], deadline: await s.app.redis.zscore(d, id) });
};

const forge = (tok: string) => tok.slice(0, -1) + (tok.endsWith('A') ? 'B' : 'A');
const credentials = [prod.heartbeatToken, prod2.heartbeatToken, sbSvc.heartbeatToken, sb.apiKey, other.apiKey, ADMIN_KEY, forge(prod.heartbeatToken), 'prod_hb_', '', 'x'.repeat(5000)];
const schemes = ['Bearer ', 'bearer ', 'Basic ', '', 'Bearer  '];
const bodies = fc.oneof(
  fc.constant(null),
  fc.constantFrom('{}', '{"status":"passing"}', '{"status":"critical"}', '{"status":"unknown"}', '[]', 'null', '"passing"', '{"status":', '\u0000', '{"status":"\\ud800"}'),
  nearService(fc.jsonValue({ maxDepth: 3 })).map((b) => JSON.stringify(b)),
  fc.string({ maxLength: 60 }),
);
const targets: { path: string; id: string; own: string }[] = [
  { path: `/services/${prod.id}/heartbeat`, id: prod.id, own: prod.heartbeatToken },
  { path: `/services/${sbSvc.id}/heartbeat`, id: sbSvc.id, own: '' },
  { path: `/sandbox/${sb.uuid}/services/${sbSvc.id}/heartbeat`, id: sbSvc.id, own: sbSvc.heartbeatToken },
  { path: `/sandbox/${other.uuid}/services/${sbSvc.id}/heartbeat`, id: sbSvc.id, own: '' },
  { path: `/sandbox/${sb.uuid}/services/${prod.id}/heartbeat`, id: prod.id, own: '' },
  { path: `/sandbox/${sb.uuid.toUpperCase()}/services/${sbSvc.id}/heartbeat`, id: sbSvc.id, own: sbSvc.heartbeatToken },
  { path: `/sandbox/not-a-uuid/services/${sbSvc.id}/heartbeat`, id: sbSvc.id, own: '' },
];

t.test('heartbeats: no 5xx, error bodies, and nothing changes unless 204', async (t) => {
  const seen = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...targets), fc.constantFrom(...credentials), fc.constantFrom(...schemes), bodies, fc.constantFrom('application/json', 'text/plain', ''), async (target, cred, scheme, body, ct) => {
      clock += 1000; // a heartbeat that renews moves the deadline: only a 204 may
      const before = await state(target.id);
      const headers: Record<string, string> = { authorization: scheme + cred };
      if (ct) headers['content-type'] = ct;
      const r = await s.req(target.path, { method: 'PUT', headers, body: body ?? undefined });
      const text = await r.text();
      seen.set(r.status, (seen.get(r.status) ?? 0) + 1);
      if (r.status >= 500) throw new Error(`${target.path}: ${r.status} ${text}`);
      if (r.status >= 400) {
        const b = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
        if (typeof b.error?.code !== 'string' || typeof b.error.message !== 'string') throw new Error(`${r.status} without the error body`);
        if ((await state(target.id)) !== before) throw new Error(`${target.path} answered ${r.status} but changed the lease`);
      }
      if (r.status === 204 && !(target.own && cred === target.own && /^bearer +$/i.test(scheme))) throw new Error(`${target.path}: 204 for a credential that is not its token`);
    }),
    {
      numRuns: 400,
      // a 204 needs the target's own token, a Bearer scheme and an acceptable body: about
      // 0.6 % of the random cases, so 400 runs saw none about one time in ten. These cases
      // run first, every time, so the 204 branch of the property is always exercised.
      examples: [
        [targets[0]!, prod.heartbeatToken, 'Bearer ', null, 'application/json'],
        [targets[2]!, sbSvc.heartbeatToken, 'bearer ', '{"status":"passing"}', 'application/json'],
        [targets[5]!, sbSvc.heartbeatToken, 'Bearer ', '{}', 'application/json'],
        // a 400 needs the token too (it is checked before the body: issue 41), then a bad body
        [targets[0]!, prod.heartbeatToken, 'Bearer ', '{"status":', 'application/json'],
        [targets[2]!, sbSvc.heartbeatToken, 'Bearer ', '{"status":"\\ud800"}', 'application/json'],
      ],
    },
  );
  t.ok((seen.get(204) ?? 0) > 0 && (seen.get(401) ?? 0) > 0 && (seen.get(400) ?? 0) > 0, `a mix of answers: ${JSON.stringify(Object.fromEntries(seen))}`);
  t.equal((await s.req('/readyz')).status, 200);
});

t.test('heartbeat-token routes: only the namespace key issues one', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...credentials, sb.apiKey, ADMIN_KEY), fc.constantFrom(`/sandbox/${sb.uuid}/services/${sbSvc.id}/heartbeat-token`, `/admin/api/services/${prod2.id}/heartbeat-token`, `/sandbox/${other.uuid}/services/${sbSvc.id}/heartbeat-token`), async (cred, path) => {
      const id = path.includes('/admin/') ? prod2.id : sbSvc.id;
      const before = await state(id);
      const r = await s.req(path, { method: 'POST', headers: { authorization: `Bearer ${cred}` } });
      const text = await r.text();
      if (r.status >= 500) throw new Error(`${path}: ${r.status} ${text}`);
      const allowed = (path.startsWith(`/sandbox/${sb.uuid}`) && cred === sb.apiKey) || (path.startsWith('/admin/') && cred === ADMIN_KEY);
      if ((r.status === 201) !== allowed) throw new Error(`${path} with ${cred.slice(0, 10)}: ${r.status}`);
      if (r.status !== 201 && (await state(id)) !== before) throw new Error(`${path}: ${r.status} but the token changed`);
    }),
    { numRuns: 60 },
  );
  t.pass('60 token requests');
});

t.test('a turn\'s batch: heartbeats of hostile ids beside a real one get no 5xx, never reach Redis, never disturb it', async (t) => {
  // the batch is one argument of lines (heartbeat-batch.ts): an id that could hold a space,
  // a newline or a pattern character must never get into it, or it would shift every line
  const PLAIN = /^[A-Za-z0-9_-]{1,64}$/;
  let reachedRedis = 0;
  await fc.assert(
    // ("." and ".." are path steps: the client resolves them, they never reach the route)
    fc.asyncProperty(fc.array(fc.oneof(fc.string({ minLength: 1, maxLength: 70 }), fc.string({ unit: 'binary', minLength: 1, maxLength: 8 }), fc.constantFrom('a b', 'a\nb', 'x%0Ay', '%20', 'a.b', "a'b", 'x'.repeat(65))).filter((id) => id !== '.' && id !== '..'), { minLength: 1, maxLength: 6 }), async (hostile) => {
      clock += 1000;
      const beats0 = s.app.liveness.batch.stats.beats;
      const [real, ...others] = await Promise.all([
        s.req(`/services/${prod.id}/heartbeat`, { method: 'PUT', headers: { authorization: `Bearer ${prod.heartbeatToken}` } }),
        ...hostile.map((id) => s.req(`/services/${encodeURIComponent(id)}/heartbeat`, { method: 'PUT', headers: { authorization: `Bearer ${prod.heartbeatToken}` } })),
      ]);
      if (real!.status !== 204) throw new Error(`the real heartbeat beside ${JSON.stringify(hostile)}: ${real!.status} ${await real!.text()}`);
      for (const [i, r] of others.entries()) {
        const text = await r.text();
        if (r.status < 400 || r.status >= 500) throw new Error(`${JSON.stringify(hostile[i])}: ${r.status} ${text}`);
      }
      // only the real heartbeat and ids of the contract's shape may reach Redis
      const beats = s.app.liveness.batch.stats.beats - beats0;
      reachedRedis += beats;
      if (beats > 1 + hostile.filter((id) => PLAIN.test(id)).length) throw new Error(`${beats} heartbeats reached Redis for ${JSON.stringify(hostile)}`);
    }),
    { numRuns: 150 },
  );
  t.ok(reachedRedis >= 150, 'every real heartbeat reached Redis');
});
