// Heartbeat tokens (contract, "Liveness: leases and heartbeats"; issue 23): every credential
// but the service's own token is a 401 and changes nothing, production and sandbox tokens
// each on their own paths; a rotated token replaces the old one. Against real Redis and
// PostgreSQL, deadlines on an injected clock and the sweeper driven by hand
// (helpers/leases.ts): no test sleeps through a ttl.
import t from 'tap';
import { isError, jsonBody, keyed } from '../helpers/checks.js';
import { createSandbox, registerProduction } from '../helpers/server.js';
import { serveOnLeaseClock } from '../helpers/leases.js';
import type { Svc } from '../helpers/svc.js';

const { s, advance, sweep, beat, health, row } = await serveOnLeaseClock(t);

t.test('401 for every credential but the service own token, and nothing changes', async (t) => {
  const sb = await createSandbox(s, 'Beats');
  const a = await registerProduction(s, { endpoint: 'https://guard.example.com', capability: 'guard', ttl: 5 });
  const b = await registerProduction(s, { endpoint: 'https://guard2.example.com', capability: 'guard', ttl: 5 });
  const r = await s.req(`/sandbox/${sb.uuid}/services`, jsonBody('POST', { endpoint: 'https://sbguard.example.com', capability: 'guard', ttl: 5 }, sb.apiKey));
  t.equal(r.status, 201);
  const c = (await r.json()) as Svc;
  t.match(c.heartbeatToken, /^beats_hb_[0-9A-Za-z]{38}$/, "a sandbox token carries the sandbox key's prefix");
  const forged = a.heartbeatToken!.slice(0, -1) + (a.heartbeatToken!.endsWith('A') ? 'B' : 'A');
  const creds = [sb.apiKey, b.heartbeatToken!, c.heartbeatToken!, forged, 'prod_hb_x', ''];
  const before = await row(a.id);
  for (const cred of creds) {
    const res = await s.req(`/services/${a.id}/heartbeat`, { method: 'PUT', headers: cred ? { authorization: `Bearer ${cred}` } : {} });
    await isError(t, res, 401, 'UNAUTHORIZED', cred.slice(0, 12));
  }
  await isError(t, await beat(`/sandbox/${sb.uuid}/services/${a.id}/heartbeat`, a.heartbeatToken!), 401, 'UNAUTHORIZED', 'a production token under a sandbox path');
  await isError(t, await beat(`/services/${c.id}/heartbeat`, c.heartbeatToken!), 401, 'UNAUTHORIZED', 'a sandbox token under the production path');
  await isError(t, await beat(`/services/nosuchservice/heartbeat`, a.heartbeatToken!), 401, 'UNAUTHORIZED', 'an unknown id');
  t.same(await row(a.id), before);
  advance(6);
  await sweep();
  t.equal((await health(a.id)).status, 'critical', 'none of them renewed the lease');
  // the sandbox's own heartbeat works and counts against its rate limit
  const poll = async () => ((await (await s.req(`/sandbox/${sb.uuid}/poll`)).json()) as { total: number }).total;
  const n0 = await poll();
  const ok = await beat(`/sandbox/${sb.uuid}/services/${c.id}/heartbeat`, c.heartbeatToken!);
  t.equal(ok.status, 204);
  t.equal(ok.headers.get('ratelimit'), null, 'far from its limit: a 204 without the RateLimit fields (they come once fewer than half are left)');
  t.equal(await poll(), n0 + 1, 'counted');
  const sbDoc = (await (await s.req(`/sandbox/${sb.uuid}/services/${c.id}`, keyed(sb.apiKey))).json()) as Svc;
  t.same(sbDoc.health, { status: 'passing', ttl: 5 }, 'renewed (and turned passing again after the expiry)');
});

t.test('token rotation: the new token works, the old one is refused', async (t) => {
  const a = await registerProduction(s, { endpoint: 'https://rotate.example.com', capability: 'rotate', ttl: 30 });
  const r = await s.admin('POST', `/admin/api/services/${a.id}/heartbeat-token`);
  t.equal(r.status, 201);
  const { heartbeatToken } = (await r.json()) as { heartbeatToken: string };
  t.match(heartbeatToken, /^prod_hb_/);
  t.not(heartbeatToken, a.heartbeatToken);
  await isError(t, await beat(`/services/${a.id}/heartbeat`, a.heartbeatToken!), 401, 'UNAUTHORIZED', 'old token');
  t.equal((await beat(`/services/${a.id}/heartbeat`, heartbeatToken)).status, 204, 'new token');
  const plain = await registerProduction(s, { endpoint: 'https://rotate2.example.com', capability: 'rotate' });
  await isError(t, await s.admin('POST', `/admin/api/services/${plain.id}/heartbeat-token`), 409, 'CONFLICT', 'no lease, no token');
  await isError(t, await s.admin('POST', `/admin/api/services/nosuch/heartbeat-token`), 404, 'NOT_FOUND');
  const sb = await createSandbox(s, 'Rotate');
  const c = (await (await s.req(`/sandbox/${sb.uuid}/services`, jsonBody('POST', { endpoint: 'https://sbrot.example.com', capability: 'rotate', ttl: 30 }, sb.apiKey))).json()) as Svc;
  await isError(t, await s.req(`/sandbox/${sb.uuid}/services/${c.id}/heartbeat-token`, { method: 'POST' }), 401, 'UNAUTHORIZED', 'the sandbox key is required');
  const r2 = await s.req(`/sandbox/${sb.uuid}/services/${c.id}/heartbeat-token`, { method: 'POST', headers: { authorization: `Bearer ${sb.apiKey}` } });
  t.equal(r2.status, 201);
  const tok2 = ((await r2.json()) as { heartbeatToken: string }).heartbeatToken;
  t.match(tok2, /^rotate_hb_/);
  await isError(t, await beat(`/sandbox/${sb.uuid}/services/${c.id}/heartbeat`, c.heartbeatToken!), 401, 'UNAUTHORIZED');
  t.equal((await beat(`/sandbox/${sb.uuid}/services/${c.id}/heartbeat`, tok2)).status, 204);
});
