// Request bodies of service writes (validation.ts): what is accepted, how it is normalised,
// and what is refused with VALIDATION_FAILED (a 400 with the contract's error body).
import t, { type Test } from 'tap';
import { ApiError } from '../../src/hot/domain/errors.js';
import { check, parseServiceCreate, parseServicePatch, validators } from '../../src/hot/domain/validation.js';

function refused(t: Test, fn: () => unknown, what: string): void {
  try {
    fn();
    t.fail(`${what}: accepted`);
  } catch (e) {
    t.ok(e instanceof ApiError && e.status === 400 && e.code === 'VALIDATION_FAILED', `${what}: refused with 400`);
  }
}

const ok = { endpoint: 'https://api.example.com/v1' };

t.test('create: capabilities array or capability shorthand', async (t) => {
  const a = parseServiceCreate({ ...ok, capabilities: ['Print', 'scan', 'PRINT'] });
  t.same(a.capabilities, ['print', 'scan'], 'lower-cased, de-duplicated, order kept');
  const b = parseServiceCreate({ ...ok, capability: 'Print' });
  t.same(b.capabilities, ['print']);
  t.same(b.properties, {});
  t.equal(b.iot, null);
  t.equal(b.deprecated, false);
  t.equal(b.locked, false);
  t.equal(b.sunsetDate, null);
  refused(t, () => parseServiceCreate({ ...ok }), 'neither');
  refused(t, () => parseServiceCreate({ ...ok, capability: 'a', capabilities: ['b'] }), 'both');
  refused(t, () => parseServiceCreate({ ...ok, capabilities: [] }), 'empty list');
  refused(t, () => parseServiceCreate({ ...ok, capabilities: Array.from({ length: 33 }, (_, i) => 'c' + i) }), '33 capabilities');
  t.equal(parseServiceCreate({ ...ok, capabilities: Array.from({ length: 32 }, (_, i) => 'c' + i) }).capabilities.length, 32, '32 capabilities');
  refused(t, () => parseServiceCreate({ ...ok, capabilities: ['bad token'] }), 'bad token');
  refused(t, () => parseServiceCreate({ ...ok, capabilities: ['a'.repeat(65)] }), 'token of 65');
  refused(t, () => parseServiceCreate({ ...ok, capability: '' }), 'empty shorthand');
  refused(t, () => parseServiceCreate({ ...ok, capabilities: 'print' }), 'capabilities not an array');
});

t.test('create: endpoint is an absolute http(s) URL', async (t) => {
  t.equal(parseServiceCreate({ endpoint: 'http://h:8080/x?y', capability: 'a' }).endpoint, 'http://h:8080/x?y');
  for (const e of ['ftp://h/x', '/relative', 'h.example.com', 'https://', 'javascript:alert(1)', '', 42]) {
    refused(t, () => parseServiceCreate({ endpoint: e, capability: 'a' }), `endpoint ${JSON.stringify(e)}`);
  }
  refused(t, () => parseServiceCreate({ capability: 'a' }), 'no endpoint');
});

t.test('create: properties', async (t) => {
  const s = parseServiceCreate({ ...ok, capability: 'a', properties: { Color: 'Red', 'x.y': 'a:b' } });
  t.same(s.properties, { color: 'Red', 'x.y': 'a:b' }, 'keys lower-cased, values kept');
  refused(t, () => parseServiceCreate({ ...ok, capability: 'a', properties: { Color: 'a', color: 'b' } }), 'same key twice after lower-casing');
  refused(t, () => parseServiceCreate({ ...ok, capability: 'a', properties: { 'bad key': 'v' } }), 'bad key');
  refused(t, () => parseServiceCreate({ ...ok, capability: 'a', properties: { k: '' } }), 'empty value');
  refused(t, () => parseServiceCreate({ ...ok, capability: 'a', properties: { k: 'v'.repeat(257) } }), 'value of 257');
  t.ok(parseServiceCreate({ ...ok, capability: 'a', properties: { k: 'v'.repeat(256) } }), 'value of 256');
  refused(t, () => parseServiceCreate({ ...ok, capability: 'a', properties: { k: 'a\nb' } }), 'control character');
  refused(t, () => parseServiceCreate({ ...ok, capability: 'a', properties: { k: 1 } }), 'number value');
  const many = Object.fromEntries(Array.from({ length: 33 }, (_, i) => ['k' + i, 'v']));
  refused(t, () => parseServiceCreate({ ...ok, capability: 'a', properties: many }), '33 properties');
});

t.test('create: iot profile', async (t) => {
  const s = parseServiceCreate({ ...ok, capability: 'a', iot: { deviceClasses: ['Sensor', 'sensor'], protocols: ['MQTT'] } });
  t.same(s.iot, { deviceClasses: ['sensor'], protocols: ['mqtt'] });
  t.equal(parseServiceCreate({ ...ok, capability: 'a', iot: null }).iot, null);
  refused(t, () => parseServiceCreate({ ...ok, capability: 'a', iot: { deviceClasses: [], protocols: ['p'] } }), 'no device class');
  refused(t, () => parseServiceCreate({ ...ok, capability: 'a', iot: { deviceClasses: ['d'] } }), 'no protocols');
  refused(t, () => parseServiceCreate({ ...ok, capability: 'a', iot: { deviceClasses: ['d'], protocols: ['p'], x: 1 } }), 'unknown iot field');
  refused(t, () => parseServiceCreate({ ...ok, capability: 'a', iot: { deviceClasses: ['bad class'], protocols: ['p'] } }), 'bad token');
});

t.test('create: deprecation fields and unknown fields', async (t) => {
  const s = parseServiceCreate({ ...ok, capability: 'a', deprecated: true, locked: true, sunset_date: '2030-02-28' });
  t.equal(s.deprecated, true);
  t.equal(s.locked, true);
  t.equal(s.sunsetDate, '2030-02-28');
  refused(t, () => parseServiceCreate({ ...ok, capability: 'a', sunset_date: '2030-02-30' }), 'impossible date');
  refused(t, () => parseServiceCreate({ ...ok, capability: 'a', sunset_date: '30-02-2030' }), 'wrong format');
  refused(t, () => parseServiceCreate({ ...ok, capability: 'a', deprecated: 'yes' }), 'deprecated not a boolean');
  refused(t, () => parseServiceCreate({ ...ok, capability: 'a', id: 'mine' }), 'client-chosen id');
  refused(t, () => parseServiceCreate({ ...ok, capability: 'a', iotReady: true }), 'iotReady is derived, not writable');
  refused(t, () => parseServiceCreate(null), 'null body');
  refused(t, () => parseServiceCreate([ok]), 'array body');
  refused(t, () => parseServiceCreate('x'), 'string body');
});

t.test('patch', async (t) => {
  t.same(parseServicePatch({ deprecated: true }), { deprecated: true });
  t.same(parseServicePatch({ sunset_date: null }), { sunsetDate: null });
  t.same(parseServicePatch({ iot: null }), { iot: null });
  t.same(parseServicePatch({ properties: { K: 'V' } }), { properties: { k: 'V' } });
  t.same(parseServicePatch({ capabilities: ['A'] }), { capabilities: ['a'] });
  t.same(parseServicePatch({ locked: false, sunset_date: '2031-01-01' }), { locked: false, sunsetDate: '2031-01-01' });
  refused(t, () => parseServicePatch({}), 'empty patch');
  refused(t, () => parseServicePatch({ id: 'x' }), 'id');
  refused(t, () => parseServicePatch({ capabilities: [] }), 'empty capabilities');
  refused(t, () => parseServicePatch({ endpoint: 'ftp://x/' }), 'bad endpoint');
  refused(t, () => parseServicePatch({ sunset_date: '2031-13-01' }), 'bad date');
});

t.test('other bodies', async (t) => {
  t.same(check(validators.replacementAdd, { serviceId: 'abc' }), { serviceId: 'abc' });
  refused(t, () => check(validators.replacementAdd, {}), 'no serviceId');
  refused(t, () => check(validators.replacementAdd, { serviceId: '../x' }), 'serviceId not URL-safe');
  t.ok(check(validators.sandboxCreate, { name: 'n', location: { lat: -90, lon: 180 } }));
  t.ok(check(validators.sandboxCreate, { name: 'x'.repeat(64) }));
  refused(t, () => check(validators.sandboxCreate, { name: '' }), 'empty name');
  refused(t, () => check(validators.sandboxCreate, { name: 'x'.repeat(65) }), 'name of 65');
  refused(t, () => check(validators.sandboxCreate, { name: 'n', location: { lat: 91, lon: 0 } }), 'lat 91');
  refused(t, () => check(validators.sandboxCreate, { name: 'n', location: { lat: 0, lon: -181 } }), 'lon -181');
  refused(t, () => check(validators.sandboxCreate, { name: 'n', location: { lat: 0 } }), 'no lon');
});

t.test('a schema refusal names where and what, in the words a client sees', async (t) => {
  const msg = (v: Parameters<typeof check>[0], body: unknown) => {
    try {
      check(v, body);
      return 'accepted';
    } catch (e) {
      return (e as ApiError).code + ': ' + (e as Error).message;
    }
  };
  t.equal(msg(validators.serviceCreate, { endpoint: 'https://a.example', capability: 'x', zzz: 1 }), 'VALIDATION_FAILED: (body): unknown field "zzz"');
  t.equal(msg(validators.serviceCreate, { capability: 'x' }), "VALIDATION_FAILED: (body) must have required property 'endpoint'");
  t.equal(msg(validators.serviceCreate, { endpoint: 'https://a.example', capabilities: [] }), 'VALIDATION_FAILED: /capabilities must NOT have fewer than 1 items');
  t.equal(msg(validators.tierChange, {}), "VALIDATION_FAILED: (body) must have required property 'tier'");
  t.equal(msg(validators.tierChange, { tier: 'free' }), 'accepted');
});
