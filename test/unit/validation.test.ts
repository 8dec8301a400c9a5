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

// What each refusal says, by registry key and text (ApiError.key, message), so that a refusal
// for another reason than the one under test does not pass.
function refusal(fn: () => unknown): string {
  try {
    fn();
    return 'accepted';
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    return `${e.key}: ${e.message}`;
  }
}

t.test('refusals after the schema: endpoint, repeated property keys, "__proto__"', async (t) => {
  t.equal(refusal(() => parseServiceCreate({ endpoint: 'http://u:p@h.example/', capability: 'a' })), 'BODY_INVALID: /endpoint must not contain user info (user:password@)');
  t.equal(refusal(() => parseServicePatch({ endpoint: 'http://[::1/' })), 'BODY_INVALID: /endpoint is not an absolute URL');
  t.equal(refusal(() => parseServiceCreate({ ...ok, capability: 'a', properties: { Color: 'a', color: 'b' } })), 'PROPERTY_KEY_TWICE: /properties has the key "color" twice (keys are case-insensitive)');
  t.equal(refusal(() => parseServicePatch({ properties: { a: '1', A: '2' } })), 'PROPERTY_KEY_TWICE: /properties has the key "a" twice (keys are case-insensitive)');
  const p = parseServiceCreate({ ...ok, capability: 'a', properties: JSON.parse('{"__proto__":"x","constructor":"y"}') }).properties;
  t.same(Object.keys(p), ['__proto__', 'constructor'], '"__proto__" and "constructor" are keys like any other');
  t.equal(p['__proto__'], 'x');
  t.equal(Object.getPrototypeOf(p), null, 'no prototype to be confused with');
});

t.test('sunset_date: a day that exists, year 0001-9999', async (t) => {
  t.equal(refusal(() => parseServiceCreate({ ...ok, capability: 'a', sunset_date: '2030-02-30' })), 'BODY_INVALID: /sunset_date must match format "date"');
  t.equal(refusal(() => parseServicePatch({ sunset_date: '2031-02-29' })), 'BODY_INVALID: /sunset_date must match format "date"', 'not a leap year');
  t.equal(parseServicePatch({ sunset_date: '2032-02-29' }).sunsetDate, '2032-02-29', 'a leap year');
  t.equal(refusal(() => parseServiceCreate({ ...ok, capability: 'a', sunset_date: '0000-01-01' })), 'BODY_INVALID: /sunset_date must match pattern "^(?!0000)\\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d|3[01])$"');
  t.equal(parseServiceCreate({ ...ok, capability: 'a', sunset_date: '0001-01-01' }).sunsetDate, '0001-01-01');
  t.equal(parseServiceCreate({ ...ok, capability: 'a', sunset_date: '9999-12-31' }).sunsetDate, '9999-12-31');
  t.equal(parseServiceCreate({ ...ok, capability: 'a', sunset_date: null }).sunsetDate, null);
});

t.test('leases: ttl and deregisterAfter', async (t) => {
  const none = parseServiceCreate({ ...ok, capability: 'a' });
  t.equal(none.ttl, null, 'no lease');
  t.equal(none.deregisterAfter, null);
  const s = parseServiceCreate({ ...ok, capability: 'a', ttl: 5, deregisterAfter: 604800 });
  t.equal(s.ttl, 5);
  t.equal(s.deregisterAfter, 604800);
  t.equal(refusal(() => parseServiceCreate({ ...ok, capability: 'a', ttl: 4 })), 'BODY_INVALID: /ttl must be >= 5');
  t.equal(refusal(() => parseServiceCreate({ ...ok, capability: 'a', ttl: 10.5 })), 'BODY_INVALID: /ttl must be integer');
  t.equal(refusal(() => parseServiceCreate({ ...ok, capability: 'a', deregisterAfter: 604801 })), 'BODY_INVALID: /deregisterAfter must be <= 604800');
  t.equal(refusal(() => parseServiceCreate({ ...ok, capability: 'a', ttl: null })), 'BODY_INVALID: /ttl must be integer', 'null only in a patch');
  t.strictSame(parseServicePatch({ ttl: 30 }), { ttl: 30 });
  t.strictSame(parseServicePatch({ ttl: null }), { ttl: null }, 'a patch drops the lease with null');
  t.strictSame(parseServicePatch({ deregisterAfter: 60 }), { deregisterAfter: 60 });
  t.strictSame(parseServicePatch({ deregisterAfter: null }), { deregisterAfter: null });
  t.equal(refusal(() => parseServicePatch({ ttl: 86401 })), 'BODY_INVALID: /ttl must be <= 86400');
});

t.test('a patch carries exactly the fields it was given', async (t) => {
  const all = parseServicePatch({
    endpoint: 'HTTP://H.example:80/a',
    capabilities: ['B', 'b', 'c'],
    properties: { K: 'V' },
    iot: { deviceClasses: ['Cam'], protocols: ['RTSP', 'rtsp'] },
    deprecated: false,
    locked: true,
    sunset_date: '2030-01-31',
    ttl: 60,
    deregisterAfter: 3600,
  });
  t.strictSame(Object.keys(all).sort(), ['capabilities', 'deprecated', 'deregisterAfter', 'endpoint', 'iot', 'locked', 'properties', 'sunsetDate', 'ttl']);
  t.equal(all.endpoint, 'http://h.example/a');
  t.strictSame(all.capabilities, ['b', 'c']);
  t.same(all.properties, { k: 'V' });
  t.strictSame(all.iot, { deviceClasses: ['cam'], protocols: ['rtsp'] });
  t.equal(all.deprecated, false);
  t.equal(all.locked, true);
  t.equal(all.sunsetDate, '2030-01-31');
  t.equal(all.ttl, 60);
  t.equal(all.deregisterAfter, 3600);
  for (const [body, keys] of [
    [{ endpoint: 'https://x.example' }, ['endpoint']],
    [{ capabilities: ['a'] }, ['capabilities']],
    [{ properties: {} }, ['properties']],
    [{ iot: null }, ['iot']],
    [{ deprecated: true }, ['deprecated']],
    [{ locked: false }, ['locked']],
    [{ sunset_date: null }, ['sunsetDate']],
    [{ ttl: 5 }, ['ttl']],
    [{ deregisterAfter: 60 }, ['deregisterAfter']],
  ] as const) {
    t.strictSame(Object.keys(parseServicePatch(body)), keys, JSON.stringify(body));
  }
});

t.test('create: every field normalised and carried', async (t) => {
  const s = parseServiceCreate({
    endpoint: 'HTTPS://Api.Example:443/v2',
    capabilities: ['Pay', 'pay', 'Refund'],
    properties: { Region: 'EU-West', tier: 'Gold' },
    iot: { deviceClasses: ['Meter', 'METER', 'gauge'], protocols: ['Modbus'] },
    deprecated: true,
    locked: false,
    sunset_date: '2030-06-30',
    ttl: 90,
    deregisterAfter: 600,
  });
  t.strictSame(
    { ...s, properties: { ...s.properties } },
    {
      endpoint: 'https://api.example/v2',
      capabilities: ['pay', 'refund'],
      properties: { region: 'EU-West', tier: 'Gold' },
      iot: { deviceClasses: ['meter', 'gauge'], protocols: ['modbus'] },
      deprecated: true,
      locked: false,
      sunsetDate: '2030-06-30',
      ttl: 90,
      deregisterAfter: 600,
    },
  );
  t.strictSame(parseServiceCreate({ ...ok, capability: 'Print', locked: true }).capabilities, ['print']);
  t.equal(parseServiceCreate({ ...ok, capability: 'a', locked: true }).locked, true);
  t.equal(parseServiceCreate({ ...ok, capability: 'a', deprecated: false }).deprecated, false);
});

t.test('schema texts: the first error, where it is and what it wants', async (t) => {
  const create = (b: object) => refusal(() => parseServiceCreate(b));
  t.equal(create({ ...ok, capability: 'a', capabilities: ['b'] }), 'BODY_INVALID: give either "capabilities" (array) or "capability" (string), not both');
  t.equal(create({ ...ok }), "BODY_INVALID: (body) must have required property 'capabilities'");
  t.equal(create({ ...ok, capability: 'a', iot: { deviceClasses: ['d'] } }), "BODY_INVALID: /iot must have required property 'protocols'");
  t.equal(create({ ...ok, capability: 'a', iot: 'x' }), 'BODY_INVALID: /iot must be object');
  t.equal(create({ ...ok, capability: 'a', iot: { deviceClasses: ['d'], protocols: ['p'], x: 1 } }), 'BODY_INVALID: /iot: unknown field "x"');
  t.equal(create({ ...ok, capabilities: ['ok', 'bad token'] }), 'BODY_INVALID: /capabilities/1 must match pattern "^[A-Za-z0-9._-]{1,64}$"');
  t.equal(create({ ...ok, capability: 'a', properties: { k: 1 } }), 'BODY_INVALID: /properties/k must be string');
  t.equal(create({ ...ok, capability: 'a', deprecated: 'yes' }), 'BODY_INVALID: /deprecated must be boolean');
  t.equal(create({ endpoint: 'ftp://h.example/', capability: 'a' }), 'BODY_INVALID: /endpoint must match pattern "^[Hh][Tt][Tt][Pp][Ss]?://[^\\u0000-\\u0020\\u007f-\\u009f]*$"');
  // ajv reads the top-level oneOf first: these said "(body) must NOT be valid" before
  for (const b of [null, [ok], 'x', 5, true]) t.equal(refusal(() => parseServiceCreate(b)), 'BODY_INVALID: (body) must be object', JSON.stringify(b));
  t.equal(refusal(() => parseServicePatch([])), 'BODY_INVALID: (body) must be object');
  t.equal(refusal(() => check(validators.tierChange, null)), 'BODY_INVALID: (body) must be object');
  t.equal(refusal(() => parseServicePatch({})), 'BODY_INVALID: (body) must NOT have fewer than 1 properties');
  t.equal(refusal(() => check(validators.heartbeat, { status: 'up' })), 'BODY_INVALID: /status must be equal to one of the allowed values');
  t.strictSame(check(validators.heartbeat, {}), {});
  t.strictSame(check(validators.adminLogin, { apiKey: 'k' }), { apiKey: 'k' });
  t.equal(refusal(() => check(validators.adminLogin, {})), "BODY_INVALID: (body) must have required property 'apiKey'");
});

t.test('the validators stop at the first error (ajv allErrors: false, as advised for untrusted input)', async (t) => {
  const body = { endpoint: 'https://a.example', capabilities: ['a'], deprecated: 'x', locked: 'y', properties: { k: 1 } };
  t.notOk(validators.serviceCreate(body));
  t.equal(validators.serviceCreate.errors?.length, 1, 'one error reported, not every one');
  t.equal(refusal(() => parseServiceCreate(body)), 'BODY_INVALID: /properties/k must be string');
});
