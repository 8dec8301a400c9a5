// Sandbox isolation (issue 3, contract "Sandbox endpoints"): the five isolation rules, one
// test each, between production, anonymous search and two sandboxes; and a malformed or
// unknown key on /services is anonymous production, never an error.
import t from 'tap';
import { ids, keyed } from '../helpers/checks.js';
import { sandboxFixtures, serveSandboxes } from '../helpers/sandboxes.js';

const sandboxes = await serveSandboxes(t);
const { s, list } = sandboxes;
const { prodPrint, prodIso, A, B, a1, a2, b1 } = await sandboxFixtures(sandboxes);

// ---- the five isolation rules (issue 3, item 4), one test each ----
t.test('isolation 1: a sandbox service is absent from anonymous search', async (t) => {
  t.same(await ids(await s.req('/services?capability=sbonly')), [], 'a capability only sandboxes have');
  t.same(await ids(await s.req('/services?capability=print')), [prodPrint.id], 'a shared capability: production only');
  const all = await ids(await s.req('/services?limit=1000'));
  for (const x of [a1, a2, b1]) t.notOk(all.includes(x.id), 'not in the unfiltered list');
  t.same(await ids(await s.req('/services?property=color:red')), []);
});

t.test('isolation 2: production is absent from the sandbox list and sandbox searches', async (t) => {
  t.same(await list(A), [a1.id, a2.id], 'list: the sandbox services only');
  t.same(await list(A, '?capability=print'), [a1.id, a2.id], 'a capability production has too');
  t.same(await ids(await s.req('/services?capability=isolation')), [prodIso.id], 'production has it');
  t.same(await list(A, '?capability=isolation'), [], 'a capability only production has');
  t.same(await list(A, '?property=color:blue'), [a2.id], 'a property production has too');
  t.notOk((await list(B)).includes(a1.id), 'nor another sandbox');
});

t.test('isolation 3: sandbox search by capability returns the sandbox services', async (t) => {
  t.same(await list(A, '?capability=sbonly'), [a1.id]);
  t.same(await list(B, '?capability=sbonly'), [b1.id]);
  t.same(await list(A, '?capability=print&capability=sbonly'), [a1.id]);
});

t.test('isolation 4: capability + property excludes a different value of the same key', async (t) => {
  t.same(await list(A, '?capability=print&property=color:red'), [a1.id]);
  t.same(await list(A, '?capability=print&property=color:blue'), [a2.id]);
  t.same(await list(A, '?capability=print&property=color:Red'), [], 'values are case-sensitive');
});

t.test('isolation 5: /services with a valid key is sandbox-only', async (t) => {
  const r = await s.req('/services?capability=print', keyed(A.apiKey));
  t.equal(r.status, 200);
  t.match(r.headers.get('cache-control') ?? '', /private/, 'Cache-Control: private');
  t.notMatch(r.headers.get('cache-control') ?? '', /public/);
  t.match(r.headers.get('vary') ?? '', /Authorization/i, 'Vary: Authorization');
  t.same(await ids(r), [a1.id, a2.id]);
  t.same(await ids(await s.req('/services', keyed(A.apiKey))), [a1.id, a2.id], 'unfiltered');
  t.same(await ids(await s.req('/services?capability=isolation', keyed(A.apiKey))), [], 'no production');
  t.same(await ids(await s.req('/services?capability=print', keyed(B.apiKey))), [b1.id], 'the other key, the other sandbox');
  t.match((await s.req('/services', keyed(A.apiKey))).headers.get('ratelimit-policy') ?? '', /\S/, 'counted: rate-limit headers');
});

t.test('a malformed or unknown key on /services is anonymous production, never an error', async (t) => {
  const keys = [
    'x_sb_0123456789abcdefghijABCDEFGHIJ',
    'x_sb_short',
    A.apiKey.slice(0, -1) + (A.apiKey.endsWith('a') ? 'b' : 'a'),
    A.apiKey.replace('_sb_', '_xx_'),
    'alpha_sb_' + 'Z'.repeat(32),
    'garbage',
    '',
  ];
  for (const k of keys) {
    const r = await s.req('/services?capability=print', { headers: { authorization: `Bearer ${k}` } });
    t.equal(r.status, 200, `key ${JSON.stringify(k.slice(0, 10))}…`);
    t.same(await ids(r), [prodPrint.id], 'production results');
  }
  const r = await s.req('/services?capability=print', { headers: { authorization: A.apiKey } });
  t.same(await ids(r), [prodPrint.id], 'a key without "Bearer" is not a key');
  const q = await s.req(`/services?capability=print&apiKey=${A.apiKey}`);
  t.same(await ids(q.status === 302 ? await s.req(q.headers.get('location')!) : q), [prodPrint.id], 'a key in the query is not a key');
});
