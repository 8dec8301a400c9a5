// The JSON Schemas of request bodies and registry objects (src/hot/domain/schemas.ts): the
// request ones compiled as validation.ts compiles them (ajv, formats), the response ones as
// the test harness compiles the served document (JSON Schema 2020-12, strict mode). Bodies
// written out by hand; the rules issue 24 found too loose in the document come first.
// (Request bodies of services are covered through parseServiceCreate/Patch in validation.test.ts.)
import t from 'tap';
import { Ajv } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import * as S from '../../src/hot/domain/schemas.js';

const req = new Ajv({ allErrors: false, strict: false });
addFormats.default(req, ['date']);
const res = new Ajv2020({ strict: true, allErrors: false, allowUnionTypes: true });
addFormats.default(res);

t.test('sunset_date: an existing day of years 0001-9999, or null', async (t) => {
  const v = req.compile(S.servicePatch);
  for (const d of ['2030-02-28', '2028-02-29', '0001-01-01', '9999-12-31', null]) t.ok(v({ sunset_date: d }), `${d}`);
  for (const d of ['0000-01-01', '0000-00-00', '2030-02-30', '2030-13-01', '2030-00-10', '2030-01-32', '2030-1-01', '30-01-2030', '2030-01-01T00:00:00Z', '']) {
    t.notOk(v({ sunset_date: d }), `${d}`);
  }
});

t.test('sandbox name: 1-64 characters, no control characters, not only white space', async (t) => {
  const v = req.compile(S.sandboxCreate);
  for (const name of ['lab', ' lab ', 'é', 'x'.repeat(64), 'a b']) t.ok(v({ name }), JSON.stringify(name));
  for (const name of ['', ' ', '\t', '\u00a0\u2003', 'x'.repeat(65), 'a\u0000b', 'a\nb', 'a\u007fb', 'a\u0085b']) t.notOk(v({ name }), JSON.stringify(name));
  t.ok(v({ name: 'lab', location: { lat: 90, lon: -180 } }), 'a location at the bounds');
  t.ok(v({ name: 'lab', location: null }), 'no location');
  t.notOk(v({ name: 'lab', location: { lat: 91, lon: 0 } }), 'a latitude past the pole');
  t.notOk(v({ name: 'lab', location: { lat: 0, lon: 180.1 } }), 'a longitude past the antimeridian');
  t.notOk(v({ name: 'lab', location: { lat: 0 } }), 'lon missing');
  t.notOk(v({ name: 'lab', tier: 'pro' }), 'no other field');
});

t.test('endpoint in a request: an http(s) URL without white space or control characters', async (t) => {
  const v = req.compile(S.servicePatch);
  for (const endpoint of ['https://a.example', 'HTTP://A.EXAMPLE/x?y', 'http://[::1]:8080/']) t.ok(v({ endpoint }), endpoint);
  for (const endpoint of ['ftp://a.example', 'https://a b.example', 'https://a.example/\u0085', 'http://', 'https:/a.example', `https://${'a'.repeat(2041)}`]) {
    t.notOk(v({ endpoint }), endpoint.slice(0, 30));
  }
});

t.test('service creation: capabilities or capability (not both), tokens, leases', async (t) => {
  const v = req.compile(S.serviceCreate);
  const e = 'https://a.example';
  t.ok(v({ endpoint: e, capability: 'Pay' }), 'one capability (lower-cased later)');
  t.ok(v({ endpoint: e, capabilities: ['a', 'b'], ttl: 5, deregisterAfter: 60 }), 'a list, a lease at its minimums');
  t.notOk(v({ endpoint: e }), 'no capability');
  t.notOk(v({ endpoint: e, capability: 'a', capabilities: ['a'] }), 'both');
  t.notOk(v({ endpoint: e, capabilities: [] }), 'an empty list');
  t.notOk(v({ endpoint: e, capability: 'ê' }), 'not a token');
  t.notOk(v({ endpoint: e, capability: 'a', ttl: 4 }), 'a ttl under 5 s');
  t.notOk(v({ endpoint: e, capability: 'a', ttl: 86401 }), 'a ttl over a day');
  t.notOk(v({ endpoint: e, capability: 'a', deregisterAfter: 59 }), 'deregisterAfter under a minute');
  t.notOk(v({ endpoint: e, capability: 'a', properties: { k: 'a\u0001' } }), 'a control character in a property value');
  t.notOk(v({ endpoint: e, capability: 'a', properties: { 'k k': 'v' } }), 'a property name that is not a token');
  t.notOk(v({ endpoint: e, capability: 'a', iot: { deviceClasses: ['s'], protocols: [] } }), 'an IoT profile without a protocol');
  t.ok(req.compile(S.servicePatch)({ ttl: null, deregisterAfter: null }), 'a patch drops the lease with null');
  t.notOk(req.compile(S.servicePatch)({}), 'an empty patch');
});

t.test('the small request bodies', async (t) => {
  const hb = req.compile(S.heartbeat);
  t.ok(hb({}) && hb({ status: 'passing' }) && hb({ status: 'critical' }), 'heartbeat: empty, passing, critical');
  t.notOk(hb({ status: 'unknown' }), 'heartbeat: a client cannot report unknown');
  const rep = req.compile(S.replacementAdd);
  t.ok(rep({ serviceId: 'aB-_9' }));
  for (const serviceId of ['', 'a/b', 'x'.repeat(65)]) t.notOk(rep({ serviceId }), `serviceId ${JSON.stringify(serviceId)}`);
  const tier = req.compile(S.tierChange);
  t.ok(tier({ tier: 'pro' }));
  t.notOk(tier({ tier: '' }), 'an empty tier');
  const login = req.compile(S.adminLogin);
  t.ok(login({ apiKey: 'k' }));
  t.notOk(login({ apiKey: 'k'.repeat(513) }), 'a key over 512 characters');
});

t.test('response objects: a service, a device binding, an error, a sandbox', async (t) => {
  const service = res.compile(S.service);
  const ok = {
    id: 'AbC_1', endpoint: 'https://a.example/', capabilities: ['pay'], properties: { region: 'eu' }, deprecated: false, locked: false,
    sunset_date: null, iotReady: true, iot: { deviceClasses: ['sensor'], protocols: ['mqtt'] }, health: { status: 'unknown', ttl: null },
  };
  t.ok(service(ok), 'a service');
  t.ok(service({ ...ok, iotReady: false, iot: null, health: { status: 'passing', ttl: 30 }, sunset_date: '2030-01-01', heartbeatToken: 'x' }));
  t.notOk(service({ ...ok, endpoint: 'HTTpS://a.example' }), 'an endpoint not in its serialised (lower-case) form');
  t.notOk(service({ ...ok, capabilities: ['Pay'] }), 'a capability not lower-cased');
  t.notOk(service({ ...ok, health: { status: 'warning', ttl: null } }), 'a health status that does not exist');
  t.notOk(service({ ...ok, sunset_date: '0000-01-01' }), 'year 0');
  const binding = res.compile(S.deviceBinding);
  t.ok(binding({ serviceId: 's', endpoint: 'https://a.example/', deviceClass: 'sensor', protocol: 'mqtt', capabilities: ['pay'] }));
  t.notOk(binding({ serviceId: 's', endpoint: 'https://a.example/', deviceClass: 'Sensor', protocol: 'mqtt', capabilities: [] }), 'a device class not lower-cased');
  const error = res.compile(S.error);
  t.ok(error({ error: { code: 'VALIDATION_FAILED', message: 'x' } }), 'a registered code');
  t.ok(error({ error: { code: 'BAD_JSON', message: 'x' } }));
  t.notOk(error({ error: { code: 'OOPS', message: 'x' } }), 'a code that is not in the registry');
  t.notOk(error({ error: { code: 'BAD_JSON' } }), 'no message');
  const sandbox = res.compile(S.sandbox);
  const sb = { uuid: '0b5f7a4e-4c1e-4f6b-9a57-3c1d2e8f9a10', name: 'lab', tier: 'free', rateLimit: 60, location: null, createdAt: '2026-11-24T10:00:00Z' };
  t.ok(sandbox(sb));
  t.ok(sandbox({ ...sb, location: { lat: 1, lon: 2 }, apiKey: 'k' }));
  t.notOk(sandbox({ ...sb, location: { lat: 1 } }), 'a location without lon');
  t.notOk(sandbox({ ...sb, rateLimit: 1.5 }), 'a fractional rate limit');
});
