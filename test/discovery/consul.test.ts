// The Consul-compatible catalog over HTTP (contract, "Consul-compatible catalog"): the
// routes of its table with their bodies, `?tag=` (all must match), `?passing`, `?dc=`, the
// Consul headers on every answer, X-Consul-Token or Bearer for a sandbox, 404 for any other
// /v1/ path and 405 for another method.
import t from 'tap';
import type { Test } from 'tap';
import { isError, jsonBody } from '../helpers/checks.js';
import { createSandbox, registerProduction, serve } from '../helpers/server.js';
import { heldCount } from '../helpers/held.js';

const s = await serve(t, { env: { CONSUL_DATACENTER: 'east-1', DISCOVERY_MAX_TARGETS: '5' } });

const web1 = await registerProduction(s, { endpoint: 'https://w1.example.com:8443/x', capabilities: ['web', 'api'], properties: { zone: 'a', tier: 'gold' }, ttl: 3600 });
const web2 = await registerProduction(s, { endpoint: 'http://[2001:db8::2]', capabilities: ['web'], properties: { zone: 'b' } });
const db = await registerProduction(s, { endpoint: 'http://10.1.2.3:5432', capabilities: ['db'] });

const get = async <T>(path: string, init: RequestInit = {}): Promise<{ r: Response; body: T }> => {
  const r = await s.req(path, init);
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${await r.text()}`);
  return { r, body: (await r.json()) as T };
};

interface Entry {
  ID: string;
  Node: string;
  Address: string;
  Datacenter: string;
  ServiceID: string;
  ServiceName: string;
  ServiceTags: string[];
  ServiceAddress: string;
  ServicePort: number;
  ServiceMeta: Record<string, string>;
  CreateIndex: number;
  ModifyIndex: number;
}
interface Health {
  Node: { Node: string; Address: string; Datacenter: string };
  Service: { ID: string; Service: string; Tags: string[]; Address: string; Port: number; Meta: Record<string, string> };
  Checks: { CheckID: string; Name: string; Status: string }[];
}

function consulHeaders(t: Test, r: Response, index = true): void {
  t.equal(r.headers.get('x-consul-knownleader'), 'true');
  t.equal(r.headers.get('x-consul-lastcontact'), '0');
  if (index) t.match(r.headers.get('x-consul-index') ?? '', /^[1-9]\d*$/, 'a positive X-Consul-Index');
}

t.test('agent/self and catalog/datacenters name the one datacenter', async (t) => {
  const self = await get<{ Config: { Datacenter: string; NodeName: string }; Member: object }>('/v1/agent/self');
  t.equal(self.body.Config.Datacenter, 'east-1');
  t.equal(self.body.Config.NodeName, 'registry');
  t.type(self.body.Member, 'object');
  consulHeaders(t, self.r);
  const dcs = await get<string[]>('/v1/catalog/datacenters');
  t.same(dcs.body, ['east-1']);
  consulHeaders(t, dcs.r);
});

t.test('catalog/services: every capability with the tags of its instances, de-duplicated and sorted', async (t) => {
  const { r, body } = await get<Record<string, string[]>>('/v1/catalog/services');
  t.same(body, { api: ['api', 'tier=gold', 'web', 'zone=a'], db: ['db'], web: ['api', 'tier=gold', 'web', 'zone=a', 'zone=b'] });
  consulHeaders(t, r);
});

t.test('catalog/service/{capability}: catalog entries ordered by id', async (t) => {
  const { r, body } = await get<Entry[]>('/v1/catalog/service/web');
  consulHeaders(t, r);
  t.same(body.map((e) => e.ServiceID), [web1.id, web2.id].sort());
  const e1 = body.find((e) => e.ID === web1.id)!;
  t.same(Object.keys(e1).sort(), ['Address', 'CreateIndex', 'Datacenter', 'ID', 'ModifyIndex', 'Node', 'ServiceAddress', 'ServiceID', 'ServiceMeta', 'ServiceName', 'ServicePort', 'ServiceTags'].sort());
  t.match(e1, { ID: web1.id, Node: 'registry', Address: 'w1.example.com', Datacenter: 'east-1', ServiceID: web1.id, ServiceName: 'web', ServiceAddress: 'w1.example.com', ServicePort: 8443 });
  t.same(e1.ServiceTags, ['web', 'api', 'tier=gold', 'zone=a'], 'capabilities, then key=value in key order');
  t.same(e1.ServiceMeta, { tier: 'gold', zone: 'a' });
  t.ok(e1.CreateIndex > 0 && e1.ModifyIndex === e1.CreateIndex, 'indexes: the revision');
  const e2 = body.find((e) => e.ID === web2.id)!;
  t.match(e2, { Address: '2001:db8::2', ServiceAddress: '2001:db8::2', ServicePort: 80 }, 'IPv6 without brackets, the default port');
  t.same((await get<Entry[]>('/v1/catalog/service/WEB')).body.map((e) => e.ID), body.map((e) => e.ID), 'names in any case');
  const none = await get<Entry[]>('/v1/catalog/service/nothing');
  t.same(none.body, []);
  consulHeaders(t, none.r);
  t.same((await get<Entry[]>('/v1/catalog/service/not%20a%20token')).body, [], 'a name no service can have');
});

t.test('health/service/{capability}: node, service and the lease check', async (t) => {
  const { r, body } = await get<Health[]>('/v1/health/service/web');
  consulHeaders(t, r);
  t.same(body.map((h) => h.Service.ID), [web1.id, web2.id].sort());
  const h1 = body.find((h) => h.Service.ID === web1.id)!;
  t.same(h1.Node, { Node: 'registry', Address: 'w1.example.com', Datacenter: 'east-1' });
  t.same(h1.Service, { ID: web1.id, Service: 'web', Tags: ['web', 'api', 'tier=gold', 'zone=a'], Address: 'w1.example.com', Port: 8443, Meta: { tier: 'gold', zone: 'a' } });
  t.match(h1.Checks, [{ CheckID: `service:${web1.id}`, Name: 'lease', Status: 'passing' }]);
  t.equal(body.find((h) => h.Service.ID === web2.id)!.Checks[0]!.Status, 'passing', 'unknown reads passing');
});

t.test('?tag= (all must match) and ?passing', async (t) => {
  const ids = async (q: string) => (await get<Health[]>('/v1/health/service/web' + q)).body.map((h) => h.Service.ID);
  t.same(await ids('?tag=zone=a'), [web1.id]);
  t.same(await ids('?tag=web&tag=zone=b'), [web2.id]);
  t.same(await ids('?tag=zone=a&tag=zone=b'), []);
  t.same((await get<Entry[]>('/v1/catalog/service/web?tag=api')).body.map((e) => e.ID), [web1.id]);
  const token = (web1 as unknown as { heartbeatToken: string }).heartbeatToken;
  const hb = await s.req(`/services/${web1.id}/heartbeat`, { method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{"status":"critical"}' });
  t.equal(hb.status, 204);
  t.same(await ids('?passing'), [web2.id], 'critical left out');
  t.same(await ids('?passing=1'), [web2.id]);
  t.same((await ids('?passing=false')).sort(), [web1.id, web2.id].sort(), 'passing=false: no filter');
  t.same((await ids('?passing=0')).sort(), [web1.id, web2.id].sort());
  const h = (await get<Health[]>('/v1/health/service/web')).body.find((x) => x.Service.ID === web1.id)!;
  t.equal(h.Checks[0]!.Status, 'critical');
});

t.test('?dc=: this datacenter answers, another is a 404 with the error body', async (t) => {
  t.equal((await get<Entry[]>('/v1/catalog/service/db?dc=east-1')).body.length, 1);
  const r = await s.req('/v1/catalog/service/db?dc=west-2');
  consulHeaders(t, r);
  const e = await isError(t, r, 404, 'NOT_FOUND');
  t.match(e.message, /west-2/);
  await isError(t, await s.req('/v1/health/service/db?dc=west-2'), 404, 'NOT_FOUND');
  await isError(t, await s.req('/v1/catalog/services?dc=west-2'), 404, 'NOT_FOUND');
});

t.test('bad queries are 400s: an index that is no number, a wait that is no duration, a query that does not decode', async (t) => {
  await isError(t, await s.req('/v1/catalog/service/db?index=abc'), 400, 'BAD_QUERY');
  await isError(t, await s.req('/v1/catalog/service/db?index=1&wait=5x'), 400, 'BAD_QUERY');
  await isError(t, await s.req('/v1/catalog/service/db?tag=%E0%A4'), 400, 'BAD_QUERY');
  await isError(t, await s.req('/v1/catalog/service/%ZZ'), 400, 'BAD_REQUEST');
  const held = await s.req('/v1/catalog/service/db?index=1&wait=10ms');
  t.equal(held.status, 200, 'a blocking query is answered');
});

// Consul's blocking query: held (held/) until the answer's X-Consul-Index exceeds the one sent,
// or the wait passes; a write to another capability wakes nothing.
t.test('a blocking query is held until its wait passes, and woken by a change of its answer', async (t) => {
  const path = '/v1/health/service/db';
  const n = (await get<Health[]>(path)).r.headers.get('x-consul-index')!;
  const started = performance.now();
  const idle = await get<Health[]>(`${path}?index=${n}&wait=2s`);
  t.ok(performance.now() - started >= 1900, 'nothing changed: held for its wait');
  t.equal(idle.r.headers.get('x-consul-index'), n, 'then the same index');
  t.equal(idle.body.length, 1, 'and the same answer');
  t.equal(idle.r.headers.get('preference-applied'), null, 'no Preference-Applied (no Prefer was sent)');
  const held = s.req(`${path}?index=${n}&wait=5m`);
  let settled = false;
  void held.then(() => (settled = true), () => (settled = true));
  await heldCount(s, 1);
  // a probe on another capability: held, then woken by its own write; the db query is not
  const cn = (await get<Health[]>('/v1/health/service/cachex')).r.headers.get('x-consul-index')!;
  const probe = s.req(`/v1/health/service/cachex?index=${cn}&wait=5m`);
  await heldCount(s, 2);
  const other = await registerProduction(s, { endpoint: 'http://10.1.2.9:6379', capabilities: ['cachex'] });
  t.teardown(async () => void (await s.admin('DELETE', `/admin/api/services/${other.id}`)));
  const p = await probe;
  t.ok(BigInt(p.headers.get('x-consul-index')!) > BigInt(cn), 'the probe: woken by its capability\'s write');
  t.ok(((await p.json()) as Health[]).some((h) => h.Service.ID === other.id));
  t.notOk(settled, 'the db query: still held after a write to another capability');
  const added = await registerProduction(s, { endpoint: 'http://10.1.2.4:5432', capabilities: ['db'] });
  t.teardown(async () => void (await s.admin('DELETE', `/admin/api/services/${added.id}`)));
  const woken = await held;
  t.equal(woken.status, 200);
  t.ok(BigInt(woken.headers.get('x-consul-index')!) > BigInt(n), 'woken with a greater index');
  t.ok(((await woken.json()) as Health[]).some((h) => h.Service.ID === added.id), 'and the registration');
  consulHeaders(t, woken);
  t.equal(s.app.held.size, 0, 'nothing left held');
});

// Consul holds a blocking query on a service it does not know; answered at once, a watch on
// such a name asks again at once, for ever.
t.test('a blocking query on a name no service can have waits out its wait, then answers the same', async (t) => {
  for (const path of ['/v1/catalog/service/not%20a%20token', '/v1/health/service/no%21such']) {
    const first = await get<Entry[]>(path);
    t.equal(first.r.headers.get('x-consul-index'), '1', `${path}: index 1`);
    t.same(first.body, []);
    const held = s.req(`${path}?index=1&wait=3s`);
    let settled = false;
    void held.then(() => (settled = true), () => (settled = true));
    await heldCount(s, 1);
    const other = await registerProduction(s, { endpoint: 'http://10.1.2.11:80', capabilities: ['db'] });
    t.teardown(async () => void (await s.admin('DELETE', `/admin/api/services/${other.id}`)));
    t.notOk(settled, 'held, a write notwithstanding');
    const r = await held;
    t.equal(r.status, 200, 'then answered');
    t.equal(r.headers.get('x-consul-index'), '1', 'with the same index');
    t.same(await r.json(), []);
    consulHeaders(t, r);
    t.equal(s.app.held.size, 0, 'nothing left held');
  }
  const zero = await get<Entry[]>('/v1/catalog/service/not%20a%20token?index=0&wait=5m');
  t.equal(zero.r.headers.get('x-consul-index'), '1', 'an index it exceeds: answered at once');
  t.equal(s.app.held.size, 0, 'never held');
});

t.test('a blocking query whose index is already exceeded is answered at once', async (t) => {
  const path = '/v1/catalog/service/web';
  const now = await get<Entry[]>(path);
  const n = BigInt(now.r.headers.get('x-consul-index')!);
  const r = await get<Entry[]>(`${path}?index=${n - 1n}&wait=5m`);
  t.equal(r.r.headers.get('x-consul-index'), String(n));
  t.same(r.body, now.body);
  t.equal(s.app.held.size, 0, 'never held');
});

t.test('other paths under /v1/ are 404, other methods 405, with the error body', async (t) => {
  for (const p of ['/v1/kv/x', '/v1/agent/services', '/v1/catalog/nodes', '/v1/', '/v1/catalog/service/']) {
    const r = await s.req(p);
    consulHeaders(t, r);
    await isError(t, r, 404, 'NOT_FOUND', p);
  }
  for (const [m, p] of [['PUT', '/v1/catalog/services'], ['POST', '/v1/health/service/web'], ['DELETE', '/v1/agent/self']] as const) {
    const r = await s.req(p, { method: m });
    t.equal(r.headers.get('allow'), 'GET, HEAD', `${m} ${p}`);
    await isError(t, r, 405, 'METHOD_NOT_ALLOWED', `${m} ${p}`);
  }
  await isError(t, await s.req('/v1/agent/service/register', { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{}' }), 404, 'NOT_FOUND', 'no write API');
});

t.test('a sandbox key (X-Consul-Token or Bearer) reads that sandbox, counted; anything else production', async (t) => {
  const sb = await createSandbox(s, 'Consul Box');
  const reg = await s.req(`/sandbox/${sb.uuid}/services`, jsonBody('POST', { endpoint: 'https://sb.example.com', capabilities: ['web', 'sbonly'] }, sb.apiKey));
  const own = (await reg.json()) as { id: string };
  for (const headers of [{ 'x-consul-token': sb.apiKey }, { authorization: `Bearer ${sb.apiKey}` }] as Record<string, string>[]) {
    const { r, body } = await get<Entry[]>('/v1/catalog/service/web', { headers });
    t.same(body.map((e) => e.ID), [own.id], Object.keys(headers)[0]!);
    t.match(r.headers.get('ratelimit') ?? '', /^"sandbox";r=\d+;t=\d+$/, 'counted');
  }
  t.same(Object.keys((await get<Record<string, string[]>>('/v1/catalog/services', { headers: { 'x-consul-token': sb.apiKey } })).body), ['sbonly', 'web']);
  const prod = await get<Entry[]>('/v1/catalog/service/web', { headers: { 'x-consul-token': 'anything' } });
  t.same(prod.body.map((e) => e.ID), [web1.id, web2.id].sort(), 'an unknown token reads production');
  t.same((await get<Entry[]>('/v1/catalog/service/sbonly')).body, [], 'sandbox services never in production');
});

t.test('more instances than DISCOVERY_MAX_TARGETS: 422 TOO_MANY_TARGETS', async (t) => {
  for (let i = 0; i < 6; i++) await registerProduction(s, { endpoint: `https://m${i}.example.com`, capabilities: ['many'] });
  const e = await isError(t, await s.req('/v1/health/service/many'), 422, 'TOO_MANY_TARGETS');
  t.match(e.message, /^6 services match.*\(5\)/);
  t.equal((await get<Entry[]>('/v1/catalog/service/db')).body.length, 1, 'a smaller capability is answered');
  void db;
});
