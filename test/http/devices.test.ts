// GET /devices: one binding per (service, deviceClass, protocol) of production IoT profiles,
// filters, paging across service boundaries, canonical 302/400 (contract, "Device query").
import t from 'tap';
import { allPages, isError, jsonBody, nextLink } from '../helpers/checks.js';
import { createSandbox, registerProduction, serve } from '../helpers/server.js';

const s = await serve(t);

interface Binding {
  serviceId: string;
  endpoint: string;
  deviceClass: string;
  protocol: string;
  capabilities: string[];
}

const S1 = await registerProduction(s, { endpoint: 'https://s1.example.com', capabilities: ['print', 'scan'], iot: { deviceClasses: ['camera', 'sensor'], protocols: ['mqtt', 'http'] } });
const S2 = await registerProduction(s, { endpoint: 'https://s2.example.com', capabilities: ['scan'], iot: { deviceClasses: ['sensor'], protocols: ['coap'] } });
await registerProduction(s, { endpoint: 'https://s3.example.com', capabilities: ['scan'] }); // no profile: no binding
const S4 = await registerProduction(s, { endpoint: 'https://s4.example.com', capabilities: ['fax'], deprecated: true, iot: { deviceClasses: ['meter', 'plug', 'sensor'], protocols: ['zigbee', 'mqtt'] } });
const sb = await createSandbox(s, 'Device Box');
const sbReg = await s.req(`/sandbox/${sb.uuid}/services`, jsonBody('POST', { endpoint: 'https://sb.example.com', capability: 'scan', iot: { deviceClasses: ['sensor'], protocols: ['mqtt'] } }, sb.apiKey));
if (sbReg.status !== 201) throw new Error('sandbox register failed');
const sbSvc = (await sbReg.json()) as { id: string };

const expected: Binding[] = [];
for (const svc of [S1, S2, S4]) {
  const iot = svc.iot as { deviceClasses: string[]; protocols: string[] };
  for (const d of iot.deviceClasses) for (const p of iot.protocols) expected.push({ serviceId: svc.id, endpoint: svc.endpoint as string, deviceClass: d, protocol: p, capabilities: svc.capabilities as string[] });
}
const key = (b: Binding) => `${b.serviceId}/${b.deviceClass}/${b.protocol}`;

const devices = async (q: string): Promise<Binding[]> => {
  const r = await s.req('/devices' + q);
  if (r.status !== 200) throw new Error(`${q}: ${r.status} ${await r.text()}`);
  return (await r.json()) as Binding[];
};

t.test('one binding per service x deviceClass x protocol of production profiles', async (t) => {
  const r = await s.req('/devices');
  t.equal(r.status, 200);
  t.match(r.headers.get('content-type'), /^application\/json/);
  const all = (await r.json()) as Binding[];
  t.equal(all.length, 4 + 1 + 6);
  t.same(new Set(all.map(key)), new Set(expected.map(key)), 'exactly the expected bindings');
  for (const b of all) t.same(Object.keys(b).sort(), ['capabilities', 'deviceClass', 'endpoint', 'protocol', 'serviceId'], 'binding fields');
  t.same(all.find((b) => b.serviceId === S2.id), { serviceId: S2.id, endpoint: 'https://s2.example.com/', deviceClass: 'sensor', protocol: 'coap', capabilities: ['scan'] });
  t.notOk(all.some((b) => b.serviceId === sbSvc.id), 'sandbox services never appear');
  t.same(await devices(''), all, 'stable order');
});

t.test('filters: given ones must all match', async (t) => {
  const pick = (f: (b: Binding) => boolean) => new Set(expected.filter(f).map(key));
  const check = async (q: string, f: (b: Binding) => boolean) => t.same(new Set((await devices(q)).map(key)), pick(f), q);
  await check('?deviceClass=sensor', (b) => b.deviceClass === 'sensor');
  await check('?protocol=mqtt', (b) => b.protocol === 'mqtt');
  await check('?capability=scan', (b) => b.capabilities.includes('scan'));
  await check('?capability=print&capability=scan', (b) => b.capabilities.includes('print'));
  await check('?capability=scan&deviceClass=sensor', (b) => b.capabilities.includes('scan') && b.deviceClass === 'sensor');
  await check('?deviceClass=camera&protocol=http', (b) => b.deviceClass === 'camera' && b.protocol === 'http');
  await check('?deviceClass=sensor&protocol=mqtt', (b) => b.deviceClass === 'sensor' && b.protocol === 'mqtt');
  await check('?capability=print&deviceClass=sensor&protocol=coap', () => false);
  await check('?capability=fax&protocol=zigbee', (b) => b.serviceId === S4.id && b.protocol === 'zigbee');
  t.same(await devices('?deviceClass=nothing'), []);
});

t.test('paging with Link next, across service boundaries', async (t) => {
  const all = (await devices('')).map(key);
  for (const limit of [1, 3, 4, 5, 10, 11]) {
    const { pages, links } = await allPages(s, `/devices?limit=${limit}`);
    t.same(pages.flat(), all, `limit=${limit}: every binding once, same order`);
    t.ok(pages.slice(0, -1).every((p) => p.length === limit), `limit=${limit}: full pages before the last`);
    t.equal(links.length, pages.length - 1, `limit=${limit}: no next link on the last page`);
    for (const l of links) t.match(l, /^\/devices\?after=[^&]+&limit=\d+$/, 'canonical next link');
  }
  const f = await allPages(s, '/devices?deviceClass=sensor&limit=2');
  t.same(f.pages.flat(), (await devices('?deviceClass=sensor')).map(key), 'filtered paging');
  for (const l of f.links) t.match(l, /deviceClass=sensor/, 'the filter is kept in the link');
  const r = await s.req('/devices?limit=3');
  const link = nextLink(r)!;
  t.equal((await s.req(link)).status, 200, 'the next link is canonical');
});

t.test('canonical rules: 302 and 400', async (t) => {
  const redirects: [string, string][] = [
    ['/devices?deviceClass=Camera', '/devices?deviceClass=camera'],
    ['/devices?iotReady=true', '/devices'],
    ['/devices?property=k:v&protocol=MQTT', '/devices?protocol=mqtt'],
    ['/devices?protocol=mqtt&capability=scan', '/devices?capability=scan&protocol=mqtt'],
    ['/devices?limit=100', '/devices'],
    ['/devices?limit=05', '/devices?limit=5'],
  ];
  for (const [from, to] of redirects) {
    const r = await s.req(from);
    t.equal(r.status, 302, from);
    t.equal(r.headers.get('location'), to);
    t.equal(await r.text(), '', 'empty body');
  }
  for (const q of ['/devices?limit=0', '/devices?limit=1001', '/devices?capability=%zz', '/devices?deviceClass=a&deviceClass=b', '/devices?protocol=%FF', '/devices?after=bogus']) {
    const r = await s.req(q);
    t.equal(r.headers.get('location'), null, `${q}: no redirect`);
    await isError(t, r, 400, undefined, q);
  }
});

t.test('a device query with a sandbox key still shows production only', async (t) => {
  const r = await s.req('/devices?deviceClass=sensor&protocol=mqtt', { headers: { authorization: `Bearer ${sb.apiKey}` } });
  t.equal(r.status, 200);
  const b = (await r.json()) as Binding[];
  t.notOk(b.some((x) => x.serviceId === sbSvc.id));
  t.same(new Set(b.map((x) => x.serviceId)), new Set([S1.id, S4.id]));
});

t.test('a write shows up in /devices', async (t) => {
  const p = await s.admin('PATCH', `/admin/api/services/${S2.id}`, { iot: null });
  t.equal(p.status, 200);
  t.notOk((await devices('')).some((b) => b.serviceId === S2.id), 'profile removed: no bindings');
  const q = await s.admin('PATCH', `/admin/api/services/${S2.id}`, { iot: { deviceClasses: ['sensor'], protocols: ['coap', 'lwm2m'] } });
  t.equal(q.status, 200);
  t.equal((await devices('?deviceClass=sensor')).filter((b) => b.serviceId === S2.id).length, 2);
});
