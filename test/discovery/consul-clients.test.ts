// Consul's own clients against the Consul-compatible catalog: the `consul` npm client
// (catalog list, nodes, health with passing and tags, a sandbox by its token, and its watch,
// which sees a registration) and Debian's python-consul (python3-consul).
import t from 'tap';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import Consul from 'consul';
import { jsonBody } from '../helpers/checks.js';
import { createSandbox, registerProduction, serve } from '../helpers/server.js';
import { toolPath } from './tools.js';

const run = promisify(execFile);
const s = await serve(t);
const port = s.server.port;

const w1 = (await registerProduction(s, { endpoint: 'https://w1.example.com:8443', capabilities: ['web'], properties: { zone: 'a' }, ttl: 3600 })) as { id: string; heartbeatToken?: string };
const w2 = await registerProduction(s, { endpoint: 'http://10.0.0.2:8080', capabilities: ['web', 'api'], properties: { zone: 'b' } });
const hb = await s.req(`/services/${w1.id}/heartbeat`, { method: 'PUT', headers: { authorization: `Bearer ${w1.heartbeatToken}`, 'content-type': 'application/json' }, body: '{"status":"critical"}' });
if (hb.status !== 204) throw new Error('heartbeat');

interface HealthEntry {
  Service: { ID: string; Address: string; Port: number; Tags: string[] };
  Checks: { Status: string }[];
}

t.test('the consul npm client', async (t) => {
  const consul = new Consul({ host: '127.0.0.1', port });
  t.same(await consul.catalog.service.list(), { api: ['api', 'web', 'zone=b'], web: ['api', 'web', 'zone=a', 'zone=b'] }, 'catalog.service.list');
  t.same(await consul.catalog.datacenters(), ['dc1']);
  const self = (await consul.agent.self()) as { Config: { Datacenter: string } };
  t.equal(self.Config.Datacenter, 'dc1');
  const nodes = (await consul.catalog.service.nodes('web')) as { ServiceID: string; ServiceAddress: string; ServicePort: number }[];
  t.same(nodes.map((n) => [n.ServiceID, n.ServiceAddress, n.ServicePort]), [[w1.id, 'w1.example.com', 8443], [w2.id, '10.0.0.2', 8080]].sort(), 'catalog.service.nodes');
  const all = (await consul.health.service('web')) as HealthEntry[];
  t.same(all.map((h) => h.Checks[0]!.Status).sort(), ['critical', 'passing']);
  const passing = (await consul.health.service({ service: 'web', passing: true })) as HealthEntry[];
  t.same(passing.map((h) => h.Service.ID), [w2.id], 'health.service with passing');
  const tagged = (await consul.health.service({ service: 'web', tag: 'zone=a' } as never)) as HealthEntry[];
  t.same(tagged.map((h) => h.Service.ID), [w1.id], 'health.service with a tag');
  const sb = await createSandbox(s, 'Consul Client Box');
  const r = await s.req(`/sandbox/${sb.uuid}/services`, jsonBody('POST', { endpoint: 'https://sb.example.com', capability: 'web' }, sb.apiKey));
  const own = (await r.json()) as { id: string };
  const keyed = new Consul({ host: '127.0.0.1', port, defaults: { token: sb.apiKey } });
  t.same(((await keyed.health.service('web')) as HealthEntry[]).map((h) => h.Service.ID), [own.id], 'a sandbox by its token');
});

t.test("the consul npm client's watch sees a registration", async (t) => {
  const consul = new Consul({ host: '127.0.0.1', port });
  const watch = consul.watch({ method: consul.health.service, options: { service: 'api', wait: '1s' } as never });
  t.teardown(() => watch.end());
  const seen: string[][] = [];
  let added = '';
  const done = new Promise<void>((resolve, reject) => {
    watch.on('error', reject);
    watch.on('change', (data: HealthEntry[]) => {
      seen.push(data.map((h) => h.Service.ID));
      if (seen.length === 1) {
        void registerProduction(s, { endpoint: 'https://w3.example.com', capabilities: ['api'] }).then((x) => (added = x.id), reject);
      } else if (added && data.some((h) => h.Service.ID === added)) resolve();
    });
  });
  await done;
  t.same(seen[0], [w2.id], 'the first answer');
  t.same(seen[seen.length - 1]!.sort(), [w2.id, added].sort(), 'a change with the registration');
});

t.test("Debian's python-consul", async (t) => {
  const python = await toolPath('python-consul');
  const script = `
import json, sys, consul
c = consul.Consul(host='127.0.0.1', port=${port})
out = {}
index, out['services'] = c.catalog.services()
out['index'] = index
_, out['nodes'] = c.catalog.service('web')
_, out['passing'] = c.health.service('web', passing=True)
_, out['tagged'] = c.catalog.service('web', tag='zone=a')
_, out['blocking'] = c.health.service('web', index=index, wait='1s')
out['datacenters'] = c.catalog.datacenters()
# python-consul reads a 404 as "nothing there": None
_, out['dc'] = c.catalog.service('web', dc='elsewhere')
json.dump(out, sys.stdout)
`;
  const { stdout } = await run(python, ['-c', script]);
  const out = JSON.parse(stdout) as Record<string, unknown>;
  t.same(out.services, { api: ['api', 'web', 'zone=b'], web: ['api', 'web', 'zone=a', 'zone=b'] });
  t.match(out.index, /^[1-9]\d*$/, 'the X-Consul-Index it read');
  t.same((out.nodes as { ServiceID: string }[]).map((n) => n.ServiceID).sort(), [w1.id, w2.id].sort());
  t.same((out.passing as HealthEntry[]).map((h) => h.Service.ID), [w2.id]);
  t.same((out.tagged as { ServiceID: string }[]).map((n) => n.ServiceID), [w1.id]);
  t.equal((out.blocking as HealthEntry[]).length, 2, 'a blocking query is answered');
  t.same(out.datacenters, ['dc1']);
  t.equal(out.dc, null, 'another datacenter: a 404, read as nothing');
});
