// Walks the table of search dimensions (src/hot/domain/dimensions.ts) and asserts, for every
// row, what a user and an operator see: the dimension is searchable on each route that takes
// it (a service with the value is found, one without is not), canonicalised (302 to its
// canonical spelling, 400 for an invalid value), documented in /openapi.json on exactly
// those routes and in redis/README.md's key table, and indexed: its members are in Redis
// after a write, gone from the set after a write that drops the value (the Lua member rule
// of apply-service-1.lua removes them), and there again after a rebuild. A row without a
// fixture below fails: adding a dimension means saying here how a service gets its value.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { DIMENSIONS, type Dimension } from '../../src/hot/domain/dimensions.js';
import { PRODUCTION } from '../../src/hot/domain/keys.js';
import { rebuildIndex } from '../../src/hot/reindex/rebuild.js';
import { newSeqArray } from '../../src/hot/search/near/state.js';
import { ROOT } from '../../src/hot/paths.js';
import { nearLoadReply } from '../../src/hot/redis/replies.js';
import { decodeBuckets } from '../../src/workers/buckets.js';
import { registerProduction, serve } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

type Body = Record<string, unknown>;

/**
 * Per dimension: body fields (over BASE) of a service that has `value` and of one that does
 * not; an accepted spelling of the value that is not canonical, and an invalid one (null:
 * every value is accepted, e.g. a flag's other values are dropped).
 */
interface Fixture {
  value: string;
  has: Body;
  hasNot: Body;
  uncanonical: string;
  invalid: string | null;
  /**
   * A value that no body sets (a service's health comes from its heartbeats): called after
   * every write of a fixture's service, with the heartbeat token its registration returned,
   * to give it the value (`has`) or take it away.
   */
  state?: (id: string, token: string, has: boolean) => Promise<void>;
}

const BASE: Body = { capabilities: ['base'], iot: { deviceClasses: ['base'], protocols: ['base'] } };

const FIXTURES: Record<string, Fixture> = {
  capability: { value: 'dim-cap', has: { capabilities: ['base', 'dim-cap'] }, hasNot: {}, uncanonical: 'Dim-CAP', invalid: 'bad token' },
  property: { value: 'zone:eu-1', has: { properties: { zone: 'eu-1' } }, hasNot: { properties: { zone: 'us-1' } }, uncanonical: 'ZONE:eu-1', invalid: 'zone' },
  deviceClass: {
    value: 'sensor',
    has: { iot: { deviceClasses: ['sensor'], protocols: ['base'] } },
    hasNot: { iot: { deviceClasses: ['meter'], protocols: ['base'] } },
    uncanonical: 'SENSOR',
    invalid: 'sen sor',
  },
  protocol: {
    value: 'coap',
    has: { iot: { deviceClasses: ['base'], protocols: ['coap'] } },
    hasNot: { iot: { deviceClasses: ['base'], protocols: ['mqtt'] } },
    uncanonical: 'CoAP',
    invalid: 'co/ap',
  },
  iotReady: { value: 'true', has: {}, hasNot: { iot: null }, uncanonical: 'TRUE', invalid: null },
  // both hold a lease; a heartbeat that reports critical takes the value away, a passing one gives it back
  healthy: {
    value: 'true',
    has: { ttl: 3600 },
    hasNot: { ttl: 3600 },
    uncanonical: 'True',
    invalid: null,
    state: async (id, token, has) => {
      const r = await s.req(`/services/${id}/heartbeat`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ status: has ? 'passing' : 'critical' }),
      });
      if (r.status !== 204) throw new Error(`heartbeat: ${r.status} ${await r.text()}`);
    },
  },
};

const PATHS: Record<string, string[]> = { services: ['/services', '/sandbox/{uuid}/services'], devices: ['/devices'] };

const s = await serve(t, { env: { RESULT_CACHE_ENTRIES: '0' } });
await waitFor('the index', async () => (await s.req('/readyz')).status === 200);
const { redis, keys } = s.app;
const openapi = (await (await s.req('/openapi.json')).json()) as { paths: Record<string, { get?: { parameters?: { name: string }[] } }> };
const redisReadme = readFileSync(join(ROOT, 'redis/README.md'), 'utf8');

/** The seqs in one set of the live generation, read as the near cache reads them. */
async function members(gen: string, suffix: string): Promise<number[]> {
  const r = nearLoadReply(await redis.nearLoadBuffer(keys.ver(PRODUCTION, gen), keys.set(PRODUCTION, gen, suffix), 0, 0, 0));
  if (!r) throw new Error('production is not indexed in ' + gen);
  return [...decodeBuckets(r.buckets, newSeqArray)];
}

async function seqOf(gen: string, id: string): Promise<number> {
  const e = await redis.hget(keys.base(PRODUCTION, gen) + 'ids', id);
  return Number(e!.split(':')[0]);
}

/** The ids (or bindings' service ids) a route answers for one parameter. */
async function found(route: string, param: string, value: string): Promise<string[]> {
  const r = await s.req(`${route}?${param}=${encodeURIComponent(value).replace(/%3A/g, ':')}`);
  if (r.status !== 200) throw new Error(`${route} ${param}=${value}: ${r.status} ${await r.text()}`);
  return ((await r.json()) as { id?: string; serviceId?: string }[]).map((x) => x.id ?? x.serviceId!);
}

/** The set a service with the fixture's value is in (filterSuffixes of that one filter). */
function suffixOf(d: Dimension, value: string): string {
  return d.kind === 'flag' ? d.set : d.set + ':' + value;
}

let n = 0;
for (const d of DIMENSIONS as readonly Dimension[]) {
  t.test(`dimension ${d.param}`, async (t) => {
    const fx = FIXTURES[d.param];
    if (!fx) return t.fail(`no fixture for ${d.param}: say in test/http/dimensions.test.ts how a service gets a value of it`);
    n++;
    const has = await registerProduction(s, { endpoint: `https://has-${d.param.toLowerCase()}.example.com`, ...BASE, ...fx.has });
    const hasNot = await registerProduction(s, { endpoint: `https://hasnot-${d.param.toLowerCase()}.example.com`, ...BASE, ...fx.hasNot });
    await fx.state?.(has.id, has.heartbeatToken!, true);
    await fx.state?.(hasNot.id, hasNot.heartbeatToken!, false);
    const routes = d.routes.flatMap((r) => (r === 'services' ? ['/services'] : ['/devices']));

    // searchable
    for (const route of routes) {
      const ids = await found(route, d.param, fx.value);
      t.ok(ids.includes(has.id), `${route}?${d.param}=${fx.value} finds the service that has it`);
      t.notOk(ids.includes(hasNot.id), `${route}?${d.param}=${fx.value} leaves out the one that has not`);
    }

    // canonicalised
    for (const route of routes) {
      const r = await s.req(`${route}?${d.param}=${encodeURIComponent(fx.uncanonical)}`);
      t.equal(r.status, 302, `${route}: ${d.param}=${fx.uncanonical} is not canonical`);
      t.equal(r.headers.get('location'), `${route}?${d.param}=${fx.value.replace(/[^A-Za-z0-9._~:-]/g, (c) => encodeURIComponent(c))}`, 'and redirects to its canonical spelling');
      if (fx.invalid !== null) {
        const bad = await s.req(`${route}?${d.param}=${encodeURIComponent(fx.invalid).replace(/%3A/g, ':')}`);
        t.equal(bad.status, 400, `${route}: ${d.param}=${fx.invalid} is refused`);
      }
    }
    for (const [route, paths] of Object.entries(PATHS)) {
      if (d.routes.includes(route as 'services' | 'devices')) continue;
      // a route that does not take it drops it as an unknown parameter
      const r = await s.req(`${paths[0]}?${d.param}=${encodeURIComponent(fx.value)}`);
      t.equal(r.status, 302, `${paths[0]} drops ${d.param}`);
    }

    // documented
    for (const [route, paths] of Object.entries(PATHS)) {
      for (const path of paths) {
        const names = (openapi.paths[path]?.get?.parameters ?? []).map((p) => p.name);
        t.equal(names.includes(d.param), d.routes.includes(route as 'services' | 'devices'), `/openapi.json: GET ${path} ${d.routes.includes(route as 'services') ? 'documents' : 'does not take'} ${d.param}`);
      }
    }
    const row = d.kind === 'flag' ? `\`<p>reg:{ns}:<gen>:${d.set}\`` : `\`<p>reg:{ns}:<gen>:${d.set}:`;
    t.ok(redisReadme.includes(row), `redis/README.md's key table has ${row}`);

    // indexed: after the write, after a write that drops the value, after a rebuild
    const suffix = suffixOf(d, fx.value);
    const gen = s.app.index.gen!;
    const seq = await seqOf(gen, has.id);
    t.ok((await members(gen, suffix)).includes(seq), `set ${suffix} holds the service after its write`);
    t.notOk((await members(gen, suffix)).includes(await seqOf(gen, hasNot.id)), `and not the other one`);
    const dropped = await s.admin('PATCH', `/admin/api/services/${has.id}`, { ...BASE, ...fx.hasNot });
    t.equal(dropped.status, 200, 'a patch drops the value');
    await fx.state?.(has.id, has.heartbeatToken!, false);
    t.notOk((await members(gen, suffix)).includes(seq), `set ${suffix} no longer holds it (the Lua member rule removed it)`);
    for (const route of routes) t.notOk((await found(route, d.param, fx.value)).includes(has.id), `${route} no longer finds it`);
    const back = await s.admin('PATCH', `/admin/api/services/${has.id}`, { ...BASE, ...fx.has });
    t.equal(back.status, 200, 'a patch gives it back');
    await fx.state?.(has.id, has.heartbeatToken!, true);
    const rebuilt = await rebuildIndex(s.app.pg, redis, keys, s.cfg.tiers);
    if (!rebuilt) throw new Error('the rebuild did not run');
    await rebuilt.retired;
    t.ok((await members(rebuilt.gen, suffix)).includes(await seqOf(rebuilt.gen, has.id)), `set ${suffix} holds it after a rebuild`);
    t.notOk((await members(rebuilt.gen, suffix)).includes(await seqOf(rebuilt.gen, hasNot.id)), 'and not the other one');
    await waitFor('the server on the rebuilt generation', async () => s.app.index.gen === rebuilt.gen || (await s.app.index.refreshGen()) === rebuilt.gen);
    for (const route of routes) t.ok((await found(route, d.param, fx.value)).includes(has.id), `${route} finds it after the rebuild`);
  });
}

t.test('every fixture names a dimension', async (t) => {
  for (const p of Object.keys(FIXTURES)) t.ok(DIMENSIONS.some((d) => d.param === p), `${p} is a row of the table`);
  t.equal(n, DIMENSIONS.length, 'every row was walked');
});
