// GET /discovery/prometheus (contract, "Prometheus HTTP service discovery"): one target group
// per service ordered by id, `host:port` (the scheme's default port, IPv6 in brackets), the
// `__meta_registry_*` labels, the search filters in any order, a sandbox key, ETag / 304,
// and 422 TOO_MANY_TARGETS past DISCOVERY_MAX_TARGETS.
import t from 'tap';
import { isError, jsonBody, keyed } from '../helpers/checks.js';
import { createSandbox, registerProduction, serve } from '../helpers/server.js';
import { heldCount } from '../helpers/held.js';

const s = await serve(t, { env: { DISCOVERY_MAX_TARGETS: '4' } });

interface Group {
  targets: string[];
  labels: Record<string, string>;
}

const sd = async (q = '', init: RequestInit = {}): Promise<Group[]> => {
  const r = await s.req('/discovery/prometheus' + q, init);
  if (r.status !== 200) throw new Error(`${q}: ${r.status} ${await r.text()}`);
  return (await r.json()) as Group[];
};

const a = await registerProduction(s, { endpoint: 'https://a.example.com/metrics', capabilities: ['web', 'api'], properties: { team: 'blue', 'rack.no': '7' } });
const b = await registerProduction(s, { endpoint: 'http://[::1]:9100/m?x=1', capabilities: ['web'], iot: { deviceClasses: ['sensor'], protocols: ['mqtt', 'http'] }, deprecated: true });
const c = await registerProduction(s, { endpoint: 'http://10.0.0.3', capabilities: ['db'], ttl: 3600 });

t.test('one target group per service, ordered by id, with every label', async (t) => {
  const groups = await sd();
  t.same(groups.map((g) => g.labels.__meta_registry_service_id), [a.id, b.id, c.id].sort(), 'every production service, by id');
  const byId = new Map(groups.map((g) => [g.labels.__meta_registry_service_id!, g]));
  t.same(byId.get(a.id), {
    targets: ['a.example.com:443'],
    labels: {
      __meta_registry_service_id: a.id,
      __meta_registry_namespace: 'production',
      __meta_registry_endpoint: 'https://a.example.com/metrics',
      __meta_registry_scheme: 'https',
      __meta_registry_path: '/metrics',
      __meta_registry_health: 'unknown',
      __meta_registry_deprecated: 'false',
      __meta_registry_capabilities: ',web,api,',
      __meta_registry_device_classes: ',,',
      __meta_registry_protocols: ',,',
      __meta_registry_property_rack_no: '7',
      __meta_registry_property_team: 'blue',
    },
  });
  const gb = byId.get(b.id)!;
  t.same(gb.targets, ['[::1]:9100'], 'IPv6 in brackets, the port as given');
  t.equal(gb.labels.__meta_registry_path, '/m');
  t.equal(gb.labels.__meta_registry_deprecated, 'true');
  t.equal(gb.labels.__meta_registry_device_classes, ',sensor,');
  t.equal(gb.labels.__meta_registry_protocols, ',mqtt,http,');
  const gc = byId.get(c.id)!;
  t.same(gc.targets, ['10.0.0.3:80'], "the scheme's default port");
  t.equal(gc.labels.__meta_registry_health, 'passing');
});

t.test('the filters of /services, in any order, no redirect', async (t) => {
  const ids = async (q: string) => (await sd(q)).map((g) => g.labels.__meta_registry_service_id);
  t.same(await ids('?capability=web'), [a.id, b.id].sort());
  t.same(await ids('?capability=WEB&capability=api'), [a.id]);
  t.same(await ids('?capability=api&capability=web'), [a.id], 'any order');
  t.same(await ids('?property=team:blue&capability=web'), [a.id]);
  t.same(await ids('?iotReady=true'), [b.id]);
  t.same(await ids('?protocol=mqtt&deviceClass=sensor'), [b.id]);
  t.same(await ids('?limit=1&after=5&capability=db'), [c.id], 'no paging: limit and after are not filters');
  await isError(t, await s.req('/discovery/prometheus?capability=%ZZ'), 400, 'BAD_QUERY', 'undecodable');
  await isError(t, await s.req('/discovery/prometheus?capability=a%20b'), 400, 'BAD_QUERY', 'not a token');
});

t.test('healthy=true leaves critical services out', async (t) => {
  const token = (c as unknown as { heartbeatToken: string }).heartbeatToken;
  const hb = await s.req(`/services/${c.id}/heartbeat`, { method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{"status":"critical"}' });
  t.equal(hb.status, 204);
  const ids = (await sd('?healthy=true')).map((g) => g.labels.__meta_registry_service_id);
  t.same(ids, [a.id, b.id].sort());
  t.equal((await sd('?capability=db'))[0]!.labels.__meta_registry_health, 'critical', 'listed, critical, without the filter');
});

t.test('ETag and If-None-Match: 304; a write changes the tag', async (t) => {
  const r1 = await s.req('/discovery/prometheus?capability=web');
  const etag = r1.headers.get('etag')!;
  t.match(etag, /^"[^"]+"$/);
  t.equal(r1.headers.get('vary'), 'Authorization');
  t.match(r1.headers.get('cache-control'), /^public, max-age=\d+$/);
  const r2 = await s.req('/discovery/prometheus?capability=web', { headers: { 'if-none-match': etag } });
  t.equal(r2.status, 304);
  t.equal(r2.headers.get('etag'), etag);
  t.equal((await s.req('/discovery/prometheus?capability=db', { headers: { 'if-none-match': etag } })).status, 200, 'another answer, another tag');
  const p = await s.admin('PATCH', `/admin/api/services/${a.id}`, { properties: { team: 'red' } });
  t.equal(p.status, 200);
  const r3 = await s.req('/discovery/prometheus?capability=web', { headers: { 'if-none-match': etag } });
  t.equal(r3.status, 200, 'changed after the write');
  t.not(r3.headers.get('etag'), etag);
  const g = ((await r3.json()) as Group[]).find((x) => x.labels.__meta_registry_service_id === a.id)!;
  t.equal(g.labels.__meta_registry_property_team, 'red');
});

t.test('a valid sandbox key reads that sandbox (counted); anything else reads production', async (t) => {
  const sb = await createSandbox(s, 'SD Box');
  const r = await s.req(`/sandbox/${sb.uuid}/services`, jsonBody('POST', { endpoint: 'https://sb.example.com:8443', capability: 'web' }, sb.apiKey));
  const own = (await r.json()) as { id: string };
  const k = await s.req('/discovery/prometheus', keyed(sb.apiKey));
  t.equal(k.status, 200);
  t.equal(k.headers.get('cache-control'), 'private, no-cache');
  t.match(k.headers.get('ratelimit') ?? '', /^"sandbox";r=\d+;t=\d+$/, 'counted against its limit');
  const groups = (await k.json()) as Group[];
  t.same(groups.map((g) => g.labels.__meta_registry_service_id), [own.id]);
  t.equal(groups[0]!.labels.__meta_registry_namespace, sb.uuid);
  t.same(groups[0]!.targets, ['sb.example.com:8443']);
  const wrong = (await sd('', keyed('nope_sb_' + 'A'.repeat(38)))).map((g) => g.labels.__meta_registry_namespace);
  t.ok(wrong.length > 0 && wrong.every((ns) => ns === 'production'), 'an unknown key reads production');
});

t.test('more than DISCOVERY_MAX_TARGETS: 422 TOO_MANY_TARGETS naming both numbers', async (t) => {
  await registerProduction(s, { endpoint: 'https://more1.example.com', capability: 'many' });
  t.equal((await sd()).length, 4, 'four production services: at the bound');
  await registerProduction(s, { endpoint: 'https://more2.example.com', capability: 'many' });
  const e = await isError(t, await s.req('/discovery/prometheus'), 422, 'TOO_MANY_TARGETS');
  t.match(e.message, /^5 services match.*\(4\)/, `the count and the bound: ${e.message}`);
  t.equal((await sd('?capability=many')).length, 2, 'a narrower query is answered');
});

// Held requests (contract, "Waiting for a change"): a matching If-None-Match with Prefer: wait
t.test('a held request: 304 when its wait ends, 200 with the new list when a match is registered', async (t) => {
  const path = '/discovery/prometheus?capability=heldsd';
  const first = await s.req(path);
  const etag = first.headers.get('etag')!;
  t.same(await first.json(), []);
  const idle = await s.req(path, { headers: { 'if-none-match': etag, prefer: 'wait=1' } });
  t.equal(idle.status, 304, 'nothing changed: 304 at the end of the wait');
  t.equal(idle.headers.get('preference-applied'), 'wait=1');
  let settled = false;
  const held = s.req(path, { headers: { 'if-none-match': etag, prefer: 'wait=60' } });
  void held.then(() => (settled = true), () => (settled = true));
  await heldCount(s, 1);
  // a write to another capability: a probe held on it is woken, this one is not
  const probePath = '/discovery/prometheus?capability=heldsdother';
  const probe = s.req(probePath, { headers: { 'if-none-match': (await s.req(probePath)).headers.get('etag')!, prefer: 'wait=60' } });
  await heldCount(s, 2);
  const other = await registerProduction(s, { endpoint: 'http://10.0.0.8:9100', capabilities: ['heldsdother'] });
  t.equal((await probe).status, 200, 'the probe: woken by its own capability');
  t.notOk(settled, 'still held after a write to another capability');
  const d = await registerProduction(s, { endpoint: 'http://10.0.0.7:9100', capabilities: ['heldsd'] });
  const r = await held;
  t.equal(r.status, 200, 'woken by the registration');
  t.equal(r.headers.get('preference-applied'), 'wait=60');
  t.not(r.headers.get('etag'), etag, 'a new ETag');
  t.same(((await r.json()) as Group[]).map((g) => g.labels.__meta_registry_service_id), [d.id]);
  for (const x of [d, other]) await s.admin('DELETE', `/admin/api/services/${x.id}`);
});
