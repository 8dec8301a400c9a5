// Critical services (contract, "Liveness: leases and heartbeats"; issue 23): one critical for
// deregisterAfter is deleted as by DELETE (unless it came back), and healthy=true leaves
// critical ones out of /services, /sandbox/{uuid}/services and /devices. Against real Redis
// and PostgreSQL, deadlines on an injected clock and the sweeper driven by hand
// (helpers/leases.ts): no test sleeps through a ttl.
import t from 'tap';
import { ids, isError, jsonBody, keyed } from '../helpers/checks.js';
import { createSandbox, registerProduction } from '../helpers/server.js';
import { serveOnLeaseClock } from '../helpers/leases.js';
import type { Svc } from '../helpers/svc.js';

const { s, advance, sweep, beat, health, events } = await serveOnLeaseClock(t);

t.test('deregisterAfter: a service critical that long is deleted as by DELETE', async (t) => {
  const a = await registerProduction(s, { endpoint: 'https://dereg.example.com', capability: 'dereg', ttl: 5, deregisterAfter: 60 });
  const lister = await registerProduction(s, { endpoint: 'https://lister.example.com', capability: 'dereg-lister', deprecated: true });
  t.equal((await s.admin('POST', `/admin/api/services/${lister.id}/replacements`, { serviceId: a.id })).status, 201);
  advance(6);
  await sweep();
  t.equal((await health(a.id)).status, 'critical');
  advance(59);
  await sweep();
  t.equal((await s.req(`/services/${a.id}`)).status, 200, 'not before deregisterAfter');
  advance(2);
  await sweep();
  await isError(t, await s.req(`/services/${a.id}`), 404, 'NOT_FOUND', 'deleted');
  t.same((await events(a.id)).slice(-1), ['service.deleted']);
  t.same(await (await s.req(`/services/${lister.id}/replacements`)).json(), [], 'it left the replacement list');
  const b = await registerProduction(s, { endpoint: 'https://dereg2.example.com', capability: 'dereg', ttl: 5, deregisterAfter: 60 });
  advance(6);
  await sweep();
  advance(30);
  t.equal((await beat(`/services/${b.id}/heartbeat`, b.heartbeatToken!)).status, 204, 'back to passing');
  advance(40);
  await sweep();
  t.equal((await s.req(`/services/${b.id}`)).status, 200, 'a service that came back is not deleted');
});

t.test('healthy=true on /services, /sandbox/{uuid}/services and /devices; canonical only as true', async (t) => {
  const iot = { deviceClasses: ['meter'], protocols: ['mqtt'] };
  const live = await registerProduction(s, { endpoint: 'https://h-live.example.com', capability: 'hsearch', ttl: 30, iot });
  const dead = await registerProduction(s, { endpoint: 'https://h-dead.example.com', capability: 'hsearch', ttl: 5, iot });
  const none = await registerProduction(s, { endpoint: 'https://h-none.example.com', capability: 'hsearch', iot });
  const sb = await createSandbox(s, 'Healthy');
  const post = async (body: unknown) => (await (await s.req(`/sandbox/${sb.uuid}/services`, jsonBody('POST', body, sb.apiKey))).json()) as Svc;
  const sLive = await post({ endpoint: 'https://sh-live.example.com', capability: 'hsearch', ttl: 30 });
  const sDead = await post({ endpoint: 'https://sh-dead.example.com', capability: 'hsearch', ttl: 5 });
  advance(6);
  await sweep();
  t.same(new Set(await ids(await s.req('/services?capability=hsearch&healthy=true'))), new Set([live.id, none.id]), 'unknown stays in, critical goes');
  t.same(new Set(await ids(await s.req('/services?capability=hsearch'))), new Set([live.id, dead.id, none.id]));
  t.same(new Set(await ids(await s.req('/services?healthy=true&iotReady=true'))).has(dead.id), false);
  t.same(new Set(await ids(await s.req(`/sandbox/${sb.uuid}/services?capability=hsearch&healthy=true`, keyed(sb.apiKey)))), new Set([sLive.id]));
  t.same(new Set(await ids(await s.req(`/sandbox/${sb.uuid}/services?healthy=true`, keyed(sb.apiKey)))), new Set([sLive.id]));
  t.same(new Set(await ids(await s.req(`/sandbox/${sb.uuid}/services`, keyed(sb.apiKey)))), new Set([sLive.id, sDead.id]));
  const dev = async (q: string) => new Set(((await (await s.req('/devices' + q)).json()) as { serviceId: string }[]).map((d) => d.serviceId));
  t.same(await dev('?capability=hsearch&healthy=true'), new Set([live.id, none.id]));
  t.same(await dev('?capability=hsearch'), new Set([live.id, dead.id, none.id]));
  // canonical: kept only as true (any case), dropped otherwise
  const r1 = await s.req('/services?healthy=TRUE&capability=hsearch');
  t.equal(r1.status, 302);
  t.equal(r1.headers.get('location'), '/services?capability=hsearch&healthy=true');
  const r2 = await s.req('/services?capability=hsearch&healthy=false');
  t.equal(r2.status, 302);
  t.equal(r2.headers.get('location'), '/services?capability=hsearch');
  const r3 = await s.req('/devices?healthy=yes');
  t.equal(r3.status, 302);
  t.equal(r3.headers.get('location'), '/devices');
  await isError(t, await s.req('/services?healthy=true&limit=0'), 400, undefined, 'a canonical query is still validated');
});
