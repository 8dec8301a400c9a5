// The typed client (client/) against a real server (test/helpers/server.ts): paging by
// Link with canonical queries (never a 302), conditional polling, 429 waits (bounded,
// cancellable), typed errors, a sandbox's keyed calls.
import t from 'tap';
import { ApiError, isApiError, RegistryClient, type Service } from '../../client/src/index.js';
import { registerProduction, serve } from '../helpers/server.js';
import { queryOf, recordingFetch } from './harness.js';
import { ADMIN_KEY } from '../helpers/env.js';

const s = await serve(t, { env: { TIERS: 'free=4,pro=600,enterprise=6000', TIER_MAX_SERVICES: 'pro=4', SANDBOX_CREATE_PER_MINUTE: '1000' } });

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

t.test('search follows Link page after page, in canonical order, without a single 302', async (t) => {
  const made: string[] = [];
  for (let i = 0; i < 7; i++) {
    made.push((await registerProduction(s, { endpoint: `https://fleet${i}.example.com`, capabilities: ['fleet-x', 'pager'], properties: { Zone: 'eu west', tier: 'gold' } })).id);
  }
  await registerProduction(s, { endpoint: 'https://other.example.com', capabilities: ['fleet-x'] });
  const { fetch, sent } = recordingFetch();
  const client = new RegistryClient({ baseUrl: s.url, fetch });
  // object order, upper case, a duplicate and a default-looking spelling: the client must
  // send the canonical form itself
  const got = await collect(client.search({ property: ['zone:eu west', 'TIER:gold'], limit: 3, capability: ['PAGER', 'fleet-x', 'pager'] }));
  t.same(got.map((x) => x.id).sort(), [...made].sort(), 'every matching service, once');
  t.same(sent.map((r) => r.status), [200, 200, 200], 'three pages of 3, 3 and 1: three requests, all 200');
  t.equal(queryOf(sent[0]!.url), 'capability=fleet-x&capability=pager&limit=3&property=tier:gold&property=zone:eu%20west', 'the first query is canonical');
  t.ok(sent.slice(1).every((r) => queryOf(r.url).startsWith('after=')), 'the next pages are the Link targets');

  const pages = await collect(client.searchPages({ capability: 'fleet-x', limit: 4 }));
  t.same(pages.map((p) => p.items.length), [4, 4], '8 services in pages of 4');
  t.equal(pages[1]!.next, null, 'the last page has no next link');
  t.ok(pages.every((p) => typeof p.etag === 'string' && p.etag.length > 0), 'each page carries its ETag');
  t.notOk(sent.some((r) => r.status === 302), 'no request was redirected');
});

t.test('device queries page the same way', async (t) => {
  for (let i = 0; i < 3; i++) {
    await registerProduction(s, { endpoint: `https://dev${i}.example.com`, capability: 'telemetry', iot: { deviceClasses: ['Sensor', 'gateway'], protocols: ['mqtt'] } });
  }
  const { fetch, sent } = recordingFetch();
  const client = new RegistryClient({ baseUrl: s.url, fetch });
  const got = await collect(client.devices({ protocol: 'MQTT', capability: 'telemetry', limit: 2 }));
  t.equal(got.length, 6, 'two bindings for each of three services');
  t.same(sent.map((r) => r.status), [200, 200, 200]);
  t.equal(queryOf(sent[0]!.url), 'capability=telemetry&limit=2&protocol=mqtt');
});

t.test('conditional polling: unchanged on 304, changed after a write, ETags kept per page', async (t) => {
  const { fetch, sent } = recordingFetch();
  const client = new RegistryClient({ baseUrl: s.url, fetch });
  for (let i = 0; i < 3; i++) await registerProduction(s, { endpoint: `https://poll${i}.example.com`, capability: 'polled' });
  const poller = client.servicesPoller({ capability: 'polled', limit: 2 });

  const first = await poller.poll();
  t.equal(first.changed, true, 'the first poll is a change');
  t.equal(first.items.length, 3);
  t.same(sent.map((r) => [r.status, r.ifNoneMatch !== null]), [[200, false], [200, false]]);

  sent.length = 0;
  const again = await poller.poll();
  t.equal(again.changed, false, 'nothing changed: unchanged');
  t.same(again.items.map((x: Service) => x.id), first.items.map((x: Service) => x.id), 'with the items held');
  t.same(sent.map((r) => r.status), [304, 304], 'both pages answered 304');
  t.ok(sent.every((r) => r.ifNoneMatch !== null), 'each page was asked with its ETag');

  await registerProduction(s, { endpoint: 'https://poll3.example.com', capability: 'polled' });
  sent.length = 0;
  const after = await poller.poll();
  t.equal(after.changed, true, 'a registration is a change');
  t.equal(after.items.length, 4);
  t.notOk(sent.some((r) => r.status === 302), 'no redirect');

  const devices = client.devicesPoller({ deviceClass: 'nothing-here' });
  t.same(await devices.poll(), { changed: true, items: [] });
  t.same(await devices.poll(), { changed: false, items: [] }, '/devices too');
});

t.test('prometheusTargets: target groups of production, or of a sandbox by its key', async (t) => {
  const a = await registerProduction(s, { endpoint: 'http://10.7.0.1:9100/metrics', capabilities: ['sd-x'], properties: { team: 'red' } });
  const client = new RegistryClient({ baseUrl: s.url });
  const groups = await client.prometheusTargets({ capability: 'SD-X', healthy: true });
  t.same(groups, [{ targets: ['10.7.0.1:9100'], labels: { ...groups[0]!.labels, __meta_registry_service_id: a.id, __meta_registry_property_team: 'red', __meta_registry_path: '/metrics' } }]);
  const sb = await client.createSandbox({ name: 'SD Client' });
  const box = client.sandbox(sb.uuid, sb.apiKey);
  t.equal((await box.register({ endpoint: 'https://[::1]:8443/', capability: 'sd-x' })).endpoint, 'https://[::1]:8443/');
  const own = await box.prometheusTargets({ capability: 'sd-x' });
  t.same(own.map((g) => [g.targets[0], g.labels.__meta_registry_namespace]), [['[::1]:8443', sb.uuid]], "the sandbox's own, by its key");
});

t.test('typed errors carry the code of the body', async (t) => {
  const client = new RegistryClient({ baseUrl: s.url });
  const e1 = await client.getService('no-such-service').catch((e: unknown) => e);
  t.ok(e1 instanceof ApiError, 'an ApiError');
  t.ok(isApiError(e1, 'NOT_FOUND') && e1.status === 404, '404 NOT_FOUND');
  const sb = await client.createSandbox({ name: 'errors' });
  const wrong = client.sandbox(sb.uuid, 'nope_sb_' + 'A'.repeat(38));
  const e2 = await wrong.get('x').catch((e: unknown) => e);
  t.ok(isApiError(e2, 'UNAUTHORIZED') && e2.status === 401, '401 UNAUTHORIZED for a wrong key');
  const e3 = await client.sandbox(sb.uuid, sb.apiKey!).register({ endpoint: 'ftp://x', capability: 'a' }).catch((e: unknown) => e);
  t.ok(isApiError(e3) && e3.status === 400, `400 for a bad body (${(e3 as ApiError).code})`);
  const e4 = await collect(client.search({ limit: 0 })).catch((e: unknown) => e);
  t.ok(isApiError(e4, 'BAD_QUERY'), 'an invalid query: BAD_QUERY, no redirect');
});

t.test('a sandbox: create, register, read, patch, replacements, search, delete', async (t) => {
  const { fetch, sent } = recordingFetch();
  const client = new RegistryClient({ baseUrl: s.url, fetch });
  const created = await client.createSandbox({ name: 'Fleet One', location: { lat: 48.1, lon: 11.6 } });
  t.match(created, { name: 'Fleet One', tier: 'free', rateLimit: 4 });
  t.match(created.apiKey, /^fleetone_sb_[0-9A-Za-z]{38}$/, 'the key is shown once');
  const admin = (tier: string) => s.admin('POST', `/admin/api/sandboxes/${created.uuid}/tier`, { tier });
  t.equal((await admin('pro')).status, 200, 'room for the calls below');
  const sb = client.sandbox(created.uuid, created.apiKey!);
  const a = await sb.register({ endpoint: 'https://a.example.com', capabilities: ['Old'] });
  const b = await sb.register({ endpoint: 'https://b.example.com', capabilities: ['new'], properties: { region: 'EU' } });
  t.equal((await sb.get(a.id)).id, a.id);
  const batch = await sb.registerBatch({ services: [{ endpoint: 'https://c.example.com', capability: 'batch' }, { endpoint: 'https://d.example.com', capability: 'batch' }] });
  const made = batch.services ?? [];
  t.same(made.map((x) => new URL(x.endpoint).host), ['c.example.com', 'd.example.com'], 'a batch, in order');
  for (const x of made) await sb.delete(x.id);
  const patched = await sb.patch(a.id, { deprecated: true, sunset_date: '2030-01-01' });
  t.match(patched, { deprecated: true, sunset_date: '2030-01-01' });
  t.same((await sb.addReplacement(a.id, b.id)).map((x) => x.id), [b.id]);
  t.same((await sb.replacements(a.id)).map((x) => x.id), [b.id]);
  t.same((await collect(sb.search({ capability: 'NEW', property: 'REGION:EU' }))).map((x) => x.id), [b.id], 'a keyed sandbox search');
  const all = await collect(sb.search({ limit: 1 }));
  t.same(all.map((x) => x.id).sort(), [a.id, b.id].sort(), 'paged one by one');
  const poller = sb.poller({ capability: 'new' });
  t.equal((await poller.poll()).changed, true);
  t.equal((await poller.poll()).changed, false, 'a keyed 304');
  await sb.delete(a.id);
  const gone = await sb.get(a.id).catch((e: unknown) => e);
  t.ok(isApiError(gone, 'NOT_FOUND'), 'deleted');
  t.notOk(sent.some((r) => r.status === 302), 'no redirect anywhere');
  const poll = await client.sandboxPoll(created.uuid);
  t.equal(poll.uuid, created.uuid);
  // the quota (pro: 4 here, reached above): one service left, a batch of 4 does not fit, nothing written
  const full = await sb.registerBatch({ services: ['e', 'f', 'g', 'h'].map((h) => ({ endpoint: `https://${h}.example.com`, capability: 'batch' })) }).catch((e: unknown) => e);
  t.ok(isApiError(full, 'QUOTA_EXCEEDED') && full.status === 409, '409 QUOTA_EXCEEDED, typed');
  t.equal((full as ApiError).message, 'sandbox quota of 4 services reached: 1 registered, batch of 4');
  const dash = await client.sandboxDashboard(created.uuid);
  t.same([dash.serviceQuota, dash.serviceCount], [4, 1], 'the dashboard data: the quota and its use');
});

t.test('429: waits Retry-After, bounded by maxRetryWaitMs and maxRetries, cancellable', async (t) => {
  const plain = new RegistryClient({ baseUrl: s.url });
  const created = await plain.createSandbox({ name: 'throttled' });
  const key = created.apiKey!;
  const use = async (client: RegistryClient) => client.sandbox(created.uuid, key).get('missing').catch((e: unknown) => e);
  // the free tier here admits 4 a minute: spend them
  for (let i = 0; i < 4; i++) t.ok(isApiError(await use(plain), 'NOT_FOUND'));

  const { fetch, sent } = recordingFetch();
  const tooLong = new RegistryClient({ baseUrl: s.url, fetch, maxRetryWaitMs: 10, sleep: async () => void t.fail('must not wait') });
  const e = await use(tooLong);
  t.ok(isApiError(e, 'RATE_LIMITED'), 'a Retry-After beyond the bound throws at once');
  t.equal((e as ApiError).retryAfterMs, Number(sent[0]!.retryAfter) * 1000, 'with the wait the server asked for');
  t.equal(sent.length, 1, 'one request');

  const waits: number[] = [];
  const capped = new RegistryClient({ baseUrl: s.url, maxRetries: 2, maxRetryWaitMs: 120_000, sleep: async (ms) => void waits.push(ms) });
  t.ok(isApiError(await use(capped), 'RATE_LIMITED'), 'still refused after maxRetries waits');
  t.equal(waits.length, 2, 'it waited maxRetries times');
  t.ok(waits.every((w) => w >= 1000 && w <= 60_000), `each wait is the Retry-After (${waits.join(', ')} ms)`);

  // the wait is where the limit goes up (the next request sees the new tier)
  const rec = recordingFetch();
  const lifting = new RegistryClient({
    baseUrl: s.url,
    fetch: rec.fetch,
    maxRetryWaitMs: 120_000,
    sleep: async (ms) => {
      waits.push(ms);
      t.equal((await s.admin('POST', `/admin/api/sandboxes/${created.uuid}/tier`, { tier: 'pro' })).status, 200);
    },
  });
  t.ok(isApiError(await use(lifting), 'NOT_FOUND'), 'after the wait the call goes through');
  t.same(rec.sent.map((r) => r.status), [429, 404]);
  t.equal(waits.at(-1), Number(rec.sent[0]!.retryAfter) * 1000, 'it waited exactly Retry-After');
  t.equal((await s.admin('POST', `/admin/api/sandboxes/${created.uuid}/tier`, { tier: 'free' })).status, 200);
  for (let i = 0; i < 6; i++) await use(plain); // full again

  // cancellable: the real timer, aborted while it waits
  const ac = new AbortController();
  const rec2 = recordingFetch();
  const waiting = new RegistryClient({
    baseUrl: s.url,
    maxRetryWaitMs: 120_000,
    fetch: async (u, i) => {
      const r = await rec2.fetch(u, i);
      if (r.status === 429) setImmediate(() => ac.abort(new Error('stop waiting')));
      return r;
    },
  });
  const aborted = await waiting.sandbox(created.uuid, key).get('missing', { signal: ac.signal }).catch((e: unknown) => e);
  t.match(aborted, { message: 'stop waiting' }, 'the abort ends the wait');
  t.same(rec2.sent.map((r) => r.status), [429], 'and nothing was sent after it');
});

t.test('the admin key works as a key too (no admin helpers needed)', async (t) => {
  const client = new RegistryClient({ baseUrl: s.url });
  const r = await client.transport.request('GET', '/admin/api/stats', { key: ADMIN_KEY });
  t.equal(r.status, 200);
  await r.body?.cancel();
});

t.test('heartbeats: a sandbox fleet with leases, token rotation, production through the admin key', async (t) => {
  const { fetch, sent } = recordingFetch();
  const client = new RegistryClient({ baseUrl: s.url, fetch });
  const created = await client.createSandbox({ name: 'fleet-hb' });
  await s.admin('POST', `/admin/api/sandboxes/${created.uuid}/tier`, { tier: 'pro' });
  const sb = client.sandbox(created.uuid, created.apiKey!);
  const dev = await sb.register({ endpoint: 'https://hb.example.com', capability: 'hb', ttl: 60 });
  const token = dev.heartbeatToken!;
  t.match(token, /^[a-z0-9]{1,16}_hb_[0-9A-Za-z]+$/, 'a lease: the 201 carries the heartbeat token');
  t.equal(dev.health.status, 'passing');

  await sb.heartbeat(dev.id, token, 'critical');
  t.equal((await sb.get(dev.id)).health.status, 'critical', 'a heartbeat reporting critical');
  await sb.heartbeat(dev.id, token);
  t.equal((await sb.get(dev.id)).health.status, 'passing', 'no status: passing');
  const beats = sent.filter((r) => r.method === 'PUT');
  t.same(beats.map((r) => [r.url.slice(s.url.length), r.status]), [[`/sandbox/${created.uuid}/services/${dev.id}/heartbeat`, 204], [`/sandbox/${created.uuid}/services/${dev.id}/heartbeat`, 204]]);

  const wrongKey = await sb.heartbeat(dev.id, created.apiKey!).catch((e: unknown) => e);
  t.ok(isApiError(wrongKey, 'UNAUTHORIZED'), 'the sandbox key is not a heartbeat token');
  t.equal((wrongKey as ApiError).status, 401);

  const rotated = await sb.rotateHeartbeatToken(dev.id);
  t.not(rotated.heartbeatToken, token, 'a new token');
  const old = await sb.heartbeat(dev.id, token, 'critical').catch((e: unknown) => e);
  t.ok(isApiError(old, 'UNAUTHORIZED'), 'the previous token stops working');
  t.equal((await sb.get(dev.id)).health.status, 'passing', 'and changed nothing');
  await sb.heartbeat(dev.id, rotated.heartbeatToken, 'critical');
  t.equal((await sb.get(dev.id)).health.status, 'critical', 'the new one works');

  const noLease = await sb.register({ endpoint: 'https://nolease.example.com', capability: 'hb' });
  t.equal(noLease.heartbeatToken, undefined, 'no ttl, no token');
  const conflict = await sb.rotateHeartbeatToken(noLease.id).catch((e: unknown) => e);
  t.ok(isApiError(conflict, 'CONFLICT'), 'no lease: no token to rotate (409)');

  // production: registered and rotated with the admin key, heartbeats with the token alone
  const admin = client.admin(ADMIN_KEY);
  const prod = await admin.register({ endpoint: 'https://prod-hb.example.com', capability: 'hb-prod', ttl: 30 });
  await client.heartbeat(prod.id, prod.heartbeatToken!, 'critical');
  t.equal((await client.getService(prod.id)).health.status, 'critical');
  const prodRotated = await admin.rotateHeartbeatToken(prod.id);
  t.ok(isApiError(await client.heartbeat(prod.id, prod.heartbeatToken!).catch((e: unknown) => e), 'UNAUTHORIZED'), 'the old production token stops working');
  await client.heartbeat(prod.id, prodRotated.heartbeatToken);
  t.equal((await client.getService(prod.id)).health.status, 'passing');
  await admin.delete(prod.id);
  t.ok(isApiError(await client.getService(prod.id).catch((e: unknown) => e), 'NOT_FOUND'), 'deleted through the admin client');
});

t.test('typed errors: a code outside the registry does not compile', async (t) => {
  const e: unknown = new ApiError(404, 'NOT_FOUND', 'no such service');
  t.ok(isApiError(e, 'NOT_FOUND'));
  t.notOk(isApiError(e, 'CONFLICT'));
  // @ts-expect-error 'NO_SUCH_CODE' is not one of the document's error codes
  t.notOk(isApiError(e, 'NO_SUCH_CODE'));
});
