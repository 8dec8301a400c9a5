// The search dimensions' derivations (src/hot/domain/dimensions.ts), with no servers: the
// empty filters, a route's dimensions, the sets a search reads, the sets a service document
// is in, the Lua member rule as text, its fingerprint and the OpenAPI query parameters. Every
// expected value is written out by hand (test/redis/member-rule.test.ts runs the Lua on Redis).
import t from 'tap';
import { createHash } from 'node:crypto';
import {
  DIMENSIONS, MEMBER_RULE, dimensionsOf, documentMembers, filterSuffixes, memberRuleLua, noFilters, openApiParameters, type Dimension, type DimensionFilters,
} from '../../src/hot/domain/dimensions.js';

/** a token dimension over one string (as docs/dimensions.md's `region` example) */
const REGION: Dimension = {
  param: 'region', field: 'region', kind: 'token', set: 'g', path: ['properties', 'region'], routes: ['services'],
  description: 'region', example: 'eu-west',
};

t.test('noFilters: no token, no flag, empty lists — exactly the six fields', async (t) => {
  t.strictSame(noFilters(), { capabilities: [], properties: [], deviceClass: null, protocol: null, iotReady: false, healthy: false });
  const a = noFilters();
  a.capabilities.push('x');
  t.strictSame(noFilters().capabilities, [], 'a fresh object each call');
});

t.test('dimensionsOf: the parameters each route takes, in table order', async (t) => {
  t.strictSame(dimensionsOf('services').map((d) => d.param), ['capability', 'property', 'deviceClass', 'protocol', 'iotReady', 'healthy']);
  t.strictSame(dimensionsOf('devices').map((d) => d.param), ['capability', 'deviceClass', 'protocol', 'healthy']);
  t.equal(DIMENSIONS.length, 6);
});

t.test('filterSuffixes: one set per token, pair and flag; `all` when nothing restricts', async (t) => {
  t.strictSame(filterSuffixes({}), ['all'], 'no field at all');
  t.strictSame(filterSuffixes(noFilters()), ['all'], 'the empty filters');
  t.strictSame(filterSuffixes({ capabilities: ['a', 'b.c'] }), ['c:a', 'c:b.c']);
  t.strictSame(filterSuffixes({ properties: [{ key: 'region', value: 'eu:west' }, { key: 'k', value: 'V' }] }), ['p:region:eu:west', 'p:k:V']);
  t.strictSame(filterSuffixes({ deviceClass: 'sensor' }), ['d:sensor']);
  t.strictSame(filterSuffixes({ protocol: 'mqtt' }), ['r:mqtt']);
  t.strictSame(filterSuffixes({ deviceClass: null, protocol: null }), ['all'], 'a null token restricts nothing');
  t.strictSame(filterSuffixes({ deviceClass: '' }), ['all'], 'nor an empty one');
  t.strictSame(filterSuffixes({ iotReady: true }), ['iot']);
  t.strictSame(filterSuffixes({ healthy: true }), ['h']);
  t.strictSame(filterSuffixes({ iotReady: false, healthy: false }), ['all'], 'a false flag restricts nothing');
  t.strictSame(filterSuffixes({ iotReady: 'true' } as unknown as Partial<DimensionFilters>), ['all'], 'only the boolean true is a flag');
  t.strictSame(
    filterSuffixes({ capabilities: ['a'], properties: [{ key: 'k', value: 'v' }], deviceClass: 'd', protocol: 'p', iotReady: true, healthy: true }),
    ['c:a', 'p:k:v', 'd:d', 'r:p', 'h'],
    'every dimension, in table order (iotReady implied by deviceClass)',
  );
});

t.test('filterSuffixes: iotReady is not read when deviceClass or protocol is given (their sets lie within it)', async (t) => {
  t.strictSame(filterSuffixes({ iotReady: true, deviceClass: 'sensor' }), ['d:sensor']);
  t.strictSame(filterSuffixes({ iotReady: true, protocol: 'mqtt' }), ['r:mqtt']);
  t.strictSame(filterSuffixes({ iotReady: true, deviceClass: null, protocol: null }), ['iot'], 'null tokens imply nothing');
  t.strictSame(filterSuffixes({ iotReady: true, capabilities: ['a'] }), ['c:a', 'iot'], 'a capability does not imply an IoT profile');
  t.strictSame(filterSuffixes({ iotReady: true, properties: [{ key: 'k', value: 'v' }] }), ['p:k:v', 'iot'], 'nor does a property');
  t.strictSame(filterSuffixes({ healthy: true, deviceClass: 'sensor' }), ['d:sensor', 'h'], 'healthy is implied by nothing');
});

const FULL = {
  id: 's1',
  capabilities: ['pay', 'print'],
  properties: { region: 'eu-west', tier: 'a:b' },
  iotReady: true,
  iot: { deviceClasses: ['sensor'], protocols: ['mqtt', 'coap'] },
  health: { status: 'passing', ttl: 30 },
};

t.test('documentMembers: the sets a service document is in', async (t) => {
  t.strictSame(documentMembers(FULL), ['all', 'c:pay', 'c:print', 'p:region:eu-west', 'p:tier:a:b', 'd:sensor', 'r:mqtt', 'r:coap', 'iot', 'h']);
  t.strictSame(
    documentMembers({ capabilities: ['a'], properties: {}, iotReady: false, iot: null, health: { status: 'critical', ttl: 30 } }),
    ['all', 'c:a'],
    'no IoT profile, critical: no d/r/iot sets, not healthy',
  );
  t.strictSame(documentMembers({ capabilities: ['a'], health: { status: 'unknown', ttl: null } }), ['all', 'c:a', 'h'], 'unknown (no lease) is healthy');
  t.strictSame(documentMembers({}), ['all'], 'an empty document is only in all');
  t.strictSame(documentMembers({ iotReady: 'true', health: { status: 'PASSING' } }), ['all'], 'a flag needs one of its exact values');
  t.strictSame(documentMembers({ health: 'passing' }), ['all'], 'a path through a string finds nothing');
});

t.test('documentMembers: values of the wrong shape are skipped, never thrown on', async (t) => {
  t.strictSame(documentMembers({ properties: null, iot: null, health: null }), ['all'], 'null along a path');
  t.strictSame(documentMembers({ properties: 'ab' }), ['all'], 'properties as a string: no pairs from its characters');
  t.strictSame(documentMembers({ properties: ['x'] }), ['all', 'p:0:x'], '(an array is an object: its indexes are keys)');
  t.strictSame(documentMembers({ capabilities: 5, iot: { deviceClasses: true, protocols: {} } }), ['all'], 'token kinds: neither a list nor a string');
  t.strictSame(documentMembers({ capabilities: 'solo' }), ['all', 'c:solo'], 'a token kind over one string');
});

t.test('documentMembers: only the document\'s own members count', async (t) => {
  const inherited = Object.create({ capabilities: ['a'], iotReady: true, properties: { k: 'v' } }) as object;
  t.strictSame(documentMembers(inherited), ['all'], 'inherited members are not values');
  t.strictSame(documentMembers({ properties: Object.create({ k: 'v' }) as object }), ['all'], 'nor inherited properties');
  const INDEX: Dimension = { ...REGION, set: 'x', path: ['name', '0'] };
  t.strictSame(documentMembers({ name: 'xy' }, [INDEX]), ['all'], 'a path does not index into a string');
  t.strictSame(documentMembers({ name: ['xy'] }, [INDEX]), ['all', 'x:xy'], 'it does into a list');
});

t.test('documentMembers: a table of other dimensions', async (t) => {
  const doc = { properties: { region: 'eu-west' }, capabilities: ['a'] };
  t.strictSame(documentMembers(doc, [REGION]), ['all', 'g:eu-west'], 'a token over one property value');
  t.strictSame(documentMembers(doc, []), ['all'], 'no dimensions: all only');
  t.strictSame(documentMembers({ properties: {} }, [REGION]), ['all']);
});

const HEAD = [
  '-- generated from src/hot/domain/dimensions.ts (memberRuleLua): the sets a stored document is in',
  'local function memberSuffixes(doc)',
  "  local out = { 'all' }",
  '  if not doc then return out end',
  '  local s = cjson.decode(doc)',
  '  local function at(path)',
  '    local v = s',
  "    for _, k in ipairs(path) do if type(v) ~= 'table' then return nil end v = v[k] end",
  '    return v',
  '  end',
  '  local v',
];
const TAIL = ['  return out', 'end', ''];

t.test("memberRuleLua: today's table, line by line", async (t) => {
  const want = [
    ...HEAD,
    "  v = at({ 'capabilities' }) -- capability",
    "  if type(v) == 'table' then for _, x in ipairs(v) do out[#out + 1] = 'c:' .. x end elseif type(v) == 'string' then out[#out + 1] = 'c:' .. v end",
    "  v = at({ 'properties' }) -- property",
    "  if type(v) == 'table' then for k, x in pairs(v) do out[#out + 1] = 'p:' .. k .. ':' .. x end end",
    "  v = at({ 'iot', 'deviceClasses' }) -- deviceClass",
    "  if type(v) == 'table' then for _, x in ipairs(v) do out[#out + 1] = 'd:' .. x end elseif type(v) == 'string' then out[#out + 1] = 'd:' .. v end",
    "  v = at({ 'iot', 'protocols' }) -- protocol",
    "  if type(v) == 'table' then for _, x in ipairs(v) do out[#out + 1] = 'r:' .. x end elseif type(v) == 'string' then out[#out + 1] = 'r:' .. v end",
    "  v = at({ 'iotReady' }) -- iotReady",
    "  if v == true then out[#out + 1] = 'iot' end",
    "  v = at({ 'health', 'status' }) -- healthy",
    "  if v == 'passing' or v == 'unknown' then out[#out + 1] = 'h' end",
    ...TAIL,
  ];
  t.strictSame(memberRuleLua().split('\n'), want);
  t.equal(memberRuleLua(), want.join('\n'), 'the same text (ends with a newline)');
});

t.test('memberRuleLua: names of every allowed character are written as Lua strings', async (t) => {
  const odd: Dimension = { ...REGION, param: 'odd', set: 'Az09_.-', path: ['a:B', 'x-9_.'], kind: 'flag', oneOf: [false, 'Up'] };
  t.strictSame(memberRuleLua([odd]).split('\n'), [
    ...HEAD,
    "  v = at({ 'a:B', 'x-9_.' }) -- odd",
    "  if v == false or v == 'Up' then out[#out + 1] = 'Az09_.-' end",
    ...TAIL,
  ]);
  t.strictSame(memberRuleLua([]).split('\n'), [...HEAD, ...TAIL], 'no dimensions: all only');
});

t.test('memberRuleLua: a name that cannot be a plain Lua string is refused, not written', async (t) => {
  const bad = (s: string) => `dimensions: ${JSON.stringify(s)} cannot be written into the Lua member rule`;
  for (const set of ["it's", "'x", "x'", 'a b', 'a\nb', 'é', 'a]]', 'a\\']) {
    t.throws(() => memberRuleLua([{ ...REGION, set }]), { message: bad(set + ':') }, `set ${JSON.stringify(set)}`);
  }
  t.throws(() => memberRuleLua([{ ...REGION, path: ['ok', "x')--"] }]), { message: bad("x')--") }, 'a path element');
  t.throws(() => memberRuleLua([{ ...REGION, kind: 'flag', set: "f'", oneOf: [true] }]), { message: bad("f':") }, 'a flag set');
  t.throws(() => memberRuleLua([{ ...REGION, kind: 'flag', set: 'f', oneOf: ["v'"] }]), { message: bad("v'") }, 'a flag value');
  t.throws(() => memberRuleLua([{ ...REGION, path: [''] }]), { message: bad('') }, 'an empty path element');
});

t.test('MEMBER_RULE: 8 hex digits of the SHA-256 of each row\'s set, kind, path and member values', async (t) => {
  const rule = '[["c","tokens",["capabilities"],null],["p","property",["properties"],null],["d","token",["iot","deviceClasses"],null],["r","token",["iot","protocols"],null],["iot","flag",["iotReady"],[true]],["h","flag",["health","status"],["passing","unknown"]]]';
  t.equal(MEMBER_RULE, createHash('sha256').update(rule).digest('hex').slice(0, 8));
  t.match(MEMBER_RULE, /^[0-9a-f]{8}$/);
});

const TOKEN = '^[A-Za-z0-9._-]{1,64}$';
const PROPERTY = '^[A-Za-z0-9._-]{1,64}:[^\\u0000-\\u001f\\u007f-\\u009f]{1,256}$';
const CURSOR = '^\\d{1,15}(\\.\\d{1,4})?$';
const AFTER = { name: 'after', in: 'query', required: false, description: 'cursor from a `Link: rel="next"` header', schema: { type: 'string', pattern: CURSOR } };
const CAPABILITY = {
  name: 'capability', in: 'query', required: false, description: 'capability token; repeatable, all must match',
  schema: { type: 'array', items: { type: 'string', pattern: TOKEN } }, style: 'form', explode: true, example: ['payments'],
};
const DEVICE_CLASS = { name: 'deviceClass', in: 'query', required: false, description: 'IoT device class of the service profile', schema: { type: 'string', pattern: TOKEN }, example: 'sensor' };
const HEALTHY = {
  name: 'healthy', in: 'query', required: false,
  description: 'only `true` is kept: leaves out services whose health status is `critical` (services without a lease, `unknown`, stay in)',
  schema: { type: 'string', enum: ['true'] }, example: 'true',
};
const LIMIT = {
  name: 'limit', in: 'query', required: false,
  description: 'page size, 1-1000, default 100 (a decimal without leading zeros; the default is dropped from canonical queries)',
  schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
};
const PROTOCOL = { name: 'protocol', in: 'query', required: false, description: 'IoT protocol of the service profile', schema: { type: 'string', pattern: TOKEN }, example: 'mqtt' };

t.test('openApiParameters: /services, every parameter with its schema, in code-point order of names', async (t) => {
  t.strictSame(openApiParameters('services'), [
    AFTER,
    CAPABILITY,
    DEVICE_CLASS,
    HEALTHY,
    { name: 'iotReady', in: 'query', required: false, description: 'only `true` is kept: services with an IoT profile', schema: { type: 'string', enum: ['true'] }, example: 'true' },
    LIMIT,
    {
      name: 'property', in: 'query', required: false, description: '`key:value`, split at the first ":"; repeatable, all must match',
      schema: { type: 'array', items: { type: 'string', pattern: PROPERTY } }, style: 'form', explode: true, example: ['region:eu-west'],
    },
    PROTOCOL,
  ]);
});

t.test('openApiParameters: /devices has no property and no iotReady', async (t) => {
  t.strictSame(openApiParameters('devices'), [AFTER, CAPABILITY, DEVICE_CLASS, HEALTHY, LIMIT, PROTOCOL]);
});

t.test('openApiParameters: the patterns accept and refuse what the server does', async (t) => {
  const pattern = (name: string): RegExp => {
    const p = openApiParameters('services').find((x) => x.name === name)!.schema as { pattern?: string; items?: { pattern: string } };
    return new RegExp(p.pattern ?? p.items!.pattern, 'u');
  };
  const token = pattern('capability');
  for (const ok of ['a', 'Print', 'a.b_c-9', 'x'.repeat(64)]) t.ok(token.test(ok), `token ${ok}`);
  for (const no of ['', 'a b', 'ê', 'x'.repeat(65), 'a:b']) t.notOk(token.test(no), `not a token: ${JSON.stringify(no)}`);
  const property = pattern('property');
  for (const ok of ['k:v', 'K:a:b', 'k:ü ß', `k:${'v'.repeat(256)}`]) t.ok(property.test(ok), `property ${ok.slice(0, 20)}`);
  for (const no of ['k', 'k:', ':v', 'k k:v', 'k:a\u0001', 'k:a\u0085', `k:${'v'.repeat(257)}`]) t.notOk(property.test(no), `not a property: ${JSON.stringify(no.slice(0, 20))}`);
  const after = pattern('after');
  for (const ok of ['0', '42', '123456789012345', '5.3', '1.2345']) t.ok(after.test(ok), `cursor ${ok}`);
  for (const no of ['', 'x', '1234567890123456', '1.', '1.23456', '-1', '.5']) t.notOk(after.test(no), `not a cursor: ${JSON.stringify(no)}`);
});
