// Heartbeats (contract, "Liveness: leases and heartbeats"; issue 23): one that changes
// nothing writes nothing (same row, document and ETag); without one a lease expires to
// critical (a durable write and an event) and the next heartbeat makes it passing again; a
// heartbeat may report critical itself. Then the counts the dashboard and /metrics show of
// them. Against real Redis and PostgreSQL, deadlines on an injected clock and the sweeper
// driven by hand (helpers/leases.ts): no test sleeps through a ttl.
import t from 'tap';
import { ids, isError, jsonBody } from '../helpers/checks.js';
import { createSandbox, registerProduction } from '../helpers/server.js';
import { serveOnLeaseClock } from '../helpers/leases.js';
import type { Svc } from '../helpers/svc.js';

const { s, advance, sweep, beat, health, row, events } = await serveOnLeaseClock(t);

t.test('a heartbeat that changes nothing: 204, no PostgreSQL row touched, same document and ETag', async (t) => {
  const a = await registerProduction(s, { endpoint: 'https://quiet.example.com', capability: 'quiet', ttl: 10 });
  const first = await s.req('/services?capability=quiet&healthy=true');
  const etag = first.headers.get('etag')!;
  const doc = await (await s.req(`/services/${a.id}`)).text();
  const before = await row(a.id);
  const evs = await events(a.id);
  for (let i = 0; i < 5; i++) {
    advance(8); // within the ttl each time, 40 s in all: only the heartbeats keep it passing
    t.equal((await beat(`/services/${a.id}/heartbeat`, a.heartbeatToken!)).status, 204);
    await sweep();
  }
  const explicit = await beat(`/services/${a.id}/heartbeat`, a.heartbeatToken!, { status: 'passing' });
  t.equal(explicit.status, 204, 'an explicit passing body');
  t.equal(explicit.headers.get('cache-control'), null, 'no Cache-Control: a response to PUT is not cacheable');
  t.same(await row(a.id), before, 'same version and xmin: no row was written');
  t.same(await events(a.id), evs, 'no change event');
  t.equal(await (await s.req(`/services/${a.id}`)).text(), doc, 'same document');
  const again = await s.req('/services?capability=quiet&healthy=true', { headers: { 'if-none-match': etag } });
  t.equal(again.status, 304, 'same ETag: the cached page still holds');
});

t.test('expiry: critical after ttl without a heartbeat (a durable write and an event), passing again on the next heartbeat', async (t) => {
  const a = await registerProduction(s, { endpoint: 'https://expire.example.com', capability: 'expire', ttl: 5 });
  const etag = (await s.req('/services?capability=expire')).headers.get('etag')!;
  advance(4);
  await sweep();
  t.equal((await health(a.id)).status, 'passing', 'not before the deadline');
  advance(2);
  await sweep();
  t.same(await health(a.id), { status: 'critical', ttl: 5 });
  t.equal((await row(a.id))!.hs, 'critical', 'in PostgreSQL');
  t.same((await events(a.id)).slice(-1), ['service.updated']);
  const r = await s.req('/services?capability=expire', { headers: { 'if-none-match': etag } });
  t.equal(r.status, 200, 'a transition changes the ETag');
  t.same(await ids(await s.req('/services?capability=expire&healthy=true')), [], 'healthy=true leaves it out');
  t.same(await ids(await s.req('/services?capability=expire')), [a.id], 'without healthy it stays');

  t.equal((await beat(`/services/${a.id}/heartbeat`, a.heartbeatToken!)).status, 204);
  t.same(await health(a.id), { status: 'passing', ttl: 5 }, 'visible right after the 204');
  t.same(await ids(await s.req('/services?capability=expire&healthy=true')), [a.id]);
  advance(3);
  await sweep();
  t.equal((await health(a.id)).status, 'passing', 'the heartbeat renewed the lease');
});

t.test('a heartbeat reporting critical, then passing', async (t) => {
  const a = await registerProduction(s, { endpoint: 'https://self.example.com', capability: 'self-report', ttl: 60 });
  t.equal((await beat(`/services/${a.id}/heartbeat`, a.heartbeatToken!, { status: 'critical' })).status, 204);
  t.same(await health(a.id), { status: 'critical', ttl: 60 });
  const v = (await row(a.id))!.version;
  t.equal((await beat(`/services/${a.id}/heartbeat`, a.heartbeatToken!, { status: 'critical' })).status, 204);
  t.equal((await row(a.id))!.version, v, 'critical again changes nothing');
  t.equal((await beat(`/services/${a.id}/heartbeat`, a.heartbeatToken!)).status, 204);
  t.same(await health(a.id), { status: 'passing', ttl: 60 });
  await isError(t, await beat(`/services/${a.id}/heartbeat`, a.heartbeatToken!, { status: 'dead' }), 400, 'VALIDATION_FAILED');
  await isError(t, await beat(`/services/${a.id}/heartbeat`, a.heartbeatToken!, { status: 'critical', x: 1 }), 400, 'VALIDATION_FAILED');
});

t.test('a sandbox service read: its ETag holds across heartbeats that change nothing, changes with a transition; a 304 counts', async (t) => {
  const sb = await createSandbox(s, 'ETags');
  const a = (await (await s.req(`/sandbox/${sb.uuid}/services`, jsonBody('POST', { endpoint: 'https://etag.example.com', capability: 'etag', ttl: 10 }, sb.apiKey))).json()) as Svc;
  const path = `/sandbox/${sb.uuid}/services/${a.id}`;
  const read = (etag?: string) => s.req(path, { headers: { authorization: `Bearer ${sb.apiKey}`, ...(etag ? { 'if-none-match': etag } : {}) } });
  const first = await read();
  t.equal(first.status, 200);
  const etag = first.headers.get('etag')!;
  t.match(etag, /^"[^"]+"$/, 'a strong ETag');
  t.equal(first.headers.get('cache-control'), 'private, no-store', 'still private');
  const doc = await first.text();
  for (let i = 0; i < 3; i++) {
    advance(8);
    t.equal((await beat(`${path}/heartbeat`, a.heartbeatToken!)).status, 204);
    await sweep();
  }
  const same = await read(etag);
  t.equal(same.status, 304, 'heartbeats that change nothing keep the ETag');
  t.equal(same.headers.get('etag'), etag);
  t.equal(await same.text(), '', 'no body');
  t.match(same.headers.get('ratelimit') ?? '', /r=\d+/, 'the 304 carries the rate-limit fields (it counts)');
  const total = async () => ((await (await s.req(`/sandbox/${sb.uuid}/poll`)).json()) as { total: number }).total;
  const n = await total();
  t.equal((await read(etag)).status, 304);
  t.equal(await total(), n + 1, 'a 304 counts against the sandbox');
  advance(11);
  await sweep();
  const after = await read(etag);
  t.equal(after.status, 200, 'the expiry changed the ETag');
  t.not(after.headers.get('etag'), etag);
  const body = (await after.json()) as { health: { status: string } };
  t.equal(body.health.status, 'critical');
  t.not(JSON.stringify(body), doc);
  t.equal((await read('"nope"')).status, 200, 'another ETag: the document');
});

t.test('dashboard: global statistics and sandbox detail count services per health status', async (t) => {
  type H = Record<'passing' | 'critical' | 'unknown', { production: number; sandboxes: number }>;
  const stats = async () => ((await (await s.admin('GET', '/admin/api/stats')).json()) as { health: H }).health;
  const before = await stats();
  const sb = await createSandbox(s, 'Counts');
  const post = async (body: Record<string, unknown>) => (await (await s.req(`/sandbox/${sb.uuid}/services`, jsonBody('POST', { endpoint: 'https://count.example.com', capability: 'count', ...body }, sb.apiKey))).json()) as Svc;
  await post({ ttl: 60 });
  await post({ ttl: 60 });
  const c = await post({ ttl: 60 });
  await post({});
  t.equal((await beat(`/sandbox/${sb.uuid}/services/${c.id}/heartbeat`, c.heartbeatToken!, { status: 'critical' })).status, 204);
  await registerProduction(s, { endpoint: 'https://count-p.example.com', capability: 'count', ttl: 60 });
  const d = (await (await s.admin('GET', `/admin/api/sandboxes/${sb.uuid}`)).json()) as { health: Record<string, number> };
  t.same(d.health, { passing: 2, critical: 1, unknown: 1 }, 'sandbox detail');
  const after = await stats();
  t.same(
    { passing: after.passing.sandboxes - before.passing.sandboxes, critical: after.critical.sandboxes - before.critical.sandboxes, unknown: after.unknown.sandboxes - before.unknown.sandboxes },
    { passing: 2, critical: 1, unknown: 1 },
    'global statistics, sandboxes',
  );
  t.equal(after.passing.production - before.passing.production, 1, 'global statistics, production');
  const m = await (await s.metrics()).text();
  t.match(m, /registry_heartbeats_total\{result="renewed"\} [1-9]/, 'heartbeat metrics');
  t.match(m, /registry_health_transitions_total\{to="critical",cause="expiry"\} [1-9]/, 'transition metrics');
  t.match(m, /registry_lease_expiry_lag_seconds_count [1-9]/, 'sweeper lag metric');
  t.match(m, /registry_leased_services [1-9]/, 'leased services gauge');
});
