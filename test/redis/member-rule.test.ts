// The member rule is written once (domain/dimensions.ts) and run in two languages: in
// TypeScript (documentMembers: the members a write stores and sends) and in Lua
// (memberRuleLua, generated into apply-service-1.lua: the members a previous state is removed
// from). Both run here over generated documents, the Lua on real Redis, and must give the
// same sets: for today's table, and for a table with the hypothetical exact-match dimension
// docs/dimensions.md walks through (`region=eu-west`, a token over one property's value).
import t from 'tap';
import fc from 'fast-check';
import { DIMENSIONS, documentMembers, memberRuleLua, type Dimension } from '../../src/hot/domain/dimensions.js';
import { suiteRedis } from '../helpers/test-data.js';

const REGION: Dimension = {
  param: 'region', field: 'region', kind: 'token', set: 'g', path: ['properties', 'region'], routes: ['services'],
  description: 'the value of the `region` property, exact', example: 'eu-west',
};

const tokenArb = fc.stringMatching(/^[a-z0-9._-]{1,12}$/);
const doc = fc.record({
  id: fc.constant('x'),
  capabilities: fc.array(tokenArb, { maxLength: 4 }),
  properties: fc.dictionary(fc.oneof(tokenArb, fc.constant('region')), tokenArb, { maxKeys: 4 }),
  iotReady: fc.boolean(),
  iot: fc.option(fc.record({ deviceClasses: fc.array(tokenArb, { maxLength: 3 }), protocols: fc.array(tokenArb, { maxLength: 3 }) }), { nil: null }),
  health: fc.record({ status: fc.constantFrom('passing', 'critical', 'unknown'), ttl: fc.option(fc.integer({ min: 1, max: 3600 }), { nil: null }) }),
});

t.test('TypeScript and Lua give a document the same sets', async (t) => {
  const redis = suiteRedis(t);
  const sorted = (a: string[]) => [...a].sort();
  for (const [name, dims] of [['today', DIMENSIONS as readonly Dimension[]], ['with region', [...DIMENSIONS, REGION]]] as const) {
    const script = memberRuleLua(dims) + '\nreturn memberSuffixes(ARGV[1])\n';
    let checked = 0;
    let regional = 0;
    await fc.assert(
      fc.asyncProperty(doc, async (d) => {
        const ts = documentMembers(d, dims);
        const lua = (await redis.eval(script, 0, JSON.stringify(d))) as string[];
        if (JSON.stringify(sorted(ts)) !== JSON.stringify(sorted(lua))) throw new Error(`${name}: ${JSON.stringify(d)}\n  ts:  ${sorted(ts).join(' ')}\n  lua: ${sorted(lua).join(' ')}`);
        checked++;
        if (ts.some((m) => m.startsWith('g:'))) regional++;
      }),
      { numRuns: 150 },
    );
    t.equal(checked, 150, `${name}: every document compared`);
    if (dims.includes(REGION)) t.ok(regional > 0, `${name}: documents with a region were in the run (${regional})`);
  }
});

t.test('the hypothetical region dimension: one set per region value, none without', async (t) => {
  const dims = [...DIMENSIONS, REGION];
  t.ok(documentMembers({ properties: { region: 'eu-west', zone: 'a' } }, dims).includes('g:eu-west'), 'a service in eu-west is in g:eu-west');
  t.notOk(documentMembers({ properties: { zone: 'a' } }, dims).some((m) => m.startsWith('g:')), 'one without a region is in no region set');
  t.notOk(documentMembers({ properties: { region: 'eu-west' } }).some((m) => m.startsWith('g:')), "today's table has no region sets");
});
