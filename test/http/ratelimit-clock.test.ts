// One clock for rate-limit buckets (issue 15): two nodes whose clocks disagree by two
// minutes share one sandbox's window, and together admit exactly the limit. The node clock
// is injected (the `now` option of SandboxAuth); the buckets must come from Redis's clock.
import t from 'tap';
import { createSandbox, serve } from '../helpers/server.js';

t.test('two nodes with skewed clocks never admit more than the limit', async (t) => {
  const env = { TIERS: 'free=30,pro=600,enterprise=6000' };
  const a = await serve(t, { env });
  // B's clock is two minutes behind
  const b = await serve(t, { env, on: a, now: () => Date.now() - 120_000 });
  const sb = await createSandbox(a);
  const hit = async (node: typeof a) => (await node.req(`/sandbox/${sb.uuid}/services`, { headers: { authorization: `Bearer ${sb.apiKey}` } })).status;
  const onA: number[] = [];
  for (let i = 0; i < 30; i++) onA.push(await hit(a));
  const onB: number[] = [];
  for (let i = 0; i < 30; i++) onB.push(await hit(b));
  const admitted = [...onA, ...onB].filter((x) => x === 200).length;
  t.same(onA.filter((x) => x !== 200), [], 'node A admits its 30');
  t.equal(onB.filter((x) => x === 429).length, 30, 'node B refuses all 30: the window is full whatever its clock says');
  t.equal(admitted, 30, 'exactly the limit was admitted');
  const poll = (await (await b.req(`/sandbox/${sb.uuid}/poll`)).json()) as { buckets?: number[]; total: number };
  t.equal(poll.total, 60, 'both nodes counted into one history');
});
