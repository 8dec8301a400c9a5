// Rate-limit leases (src/hot/ratelimit/admission.ts): a sandbox with a high limit is answered
// mostly without a Redis round trip per request, yet its window never admits more than
// the limit, its RateLimit fields count down one by one, /poll's total counts every
// request answered before it, and a tier change applies to the very next request.
import t from 'tap';
import { keyed } from '../helpers/checks.js';
import { createSandbox, serve } from '../helpers/server.js';
import { RATE_LIMIT_ARGS } from '../../src/hot/ratelimit/window.js';
import { NOT_INDEXED, rateLimitReply } from '../../src/hot/redis/replies.js';

const TIERS = 'free=60,pro=600,mid=3000,busy=9000,huge=1000000';
const s = await serve(t, { env: { TIERS } });

/** calls of the rate-limit script so far */
const calls = () => s.app.auth.stats.asked;

async function sandboxOf(tier: string) {
  const sb = await createSandbox(s, `Leases ${tier}`);
  const r = await s.admin('POST', `/admin/api/sandboxes/${sb.uuid}/tier`, { tier });
  if (r.status !== 200) throw new Error(`tier: ${r.status} ${await r.text()}`);
  await r.body?.cancel();
  return sb;
}
const remaining = (r: Response) => Number(/r=(\d+)/.exec(r.headers.get('ratelimit') ?? '')?.[1]);
const pollTotal = async (uuid: string) => ((await (await s.req(`/sandbox/${uuid}/poll`)).json()) as { total: number }).total;

t.test('a high limit: fewer script calls than requests, exact countdown and total', async (t) => {
  const sb = await sandboxOf('huge');
  const before = calls();
  const rem: number[] = [];
  const N = 300;
  for (let i = 0; i < N; i++) {
    const r = await s.req(`/sandbox/${sb.uuid}/services`, keyed(sb.apiKey));
    t.equal(r.status, 200);
    rem.push(remaining(r));
    await r.body?.cancel();
    if (i % 50 === 49) t.equal(await pollTotal(sb.uuid), i + 1, `poll total after ${i + 1} requests`);
  }
  const asked = calls() - before;
  t.ok(asked < N / 2, `${asked} script calls for ${N} requests`);
  t.ok(s.app.auth.stats.prefetched > 0, `batches asked for ahead (${s.app.auth.stats.prefetched}): the countdown crossed them`);
  t.same(rem, Array.from({ length: N }, (_, i) => 1_000_000 - (i + 1)), 'RateLimit remaining counts down by one per request');
  const metrics = await (await s.metrics()).text();
  t.match(metrics, /registry_rate_limit_checks_total\{source="lease"\} [1-9]/, '/metrics counts the requests answered from leases');
});

t.test('a small limit still asks Redis on every request', async (t) => {
  const sb = await sandboxOf('pro');
  const before = calls();
  for (let i = 0; i < 20; i++) await (await s.req(`/sandbox/${sb.uuid}/services`, keyed(sb.apiKey))).body?.cancel();
  t.equal(calls() - before, 20);
});

/** `n` keyed searches of the sandbox from 25 concurrent clients: how many were admitted and refused (429). */
async function flood(sb: { uuid: string; apiKey: string }, n: number): Promise<{ admitted: number; refused: number }> {
  let admitted = 0;
  let refused = 0;
  let next = 0;
  const worker = async () => {
    while (next < n) {
      next++;
      const r = await s.req(`/sandbox/${sb.uuid}/services`, keyed(sb.apiKey));
      if (r.status === 200) admitted++;
      else if (r.status === 429) refused++;
      await r.body?.cancel();
    }
  };
  await Promise.all(Array.from({ length: 25 }, worker));
  return { admitted, refused };
}

t.test('a concurrent flood never gets more than the limit admitted', async (t) => {
  const sb = await sandboxOf('mid'); // 3000 a minute: leases of up to 3
  const N = 3150;
  const { admitted, refused } = await flood(sb, N);
  t.equal(admitted + refused, N, 'only 200 and 429');
  t.ok(admitted <= 3000, `admitted ${admitted} <= 3000`);
  // refused early: at most the unused rest of the leases still held when the flood ended
  // (the current one, and one a concurrent ask replaced: 3 admissions each at this limit)
  t.ok(admitted >= 3000 - 6, `admitted ${admitted}: at most two leases' worth refused early`);
  t.equal(await pollTotal(sb.uuid), N, 'poll total counts every request, refused ones too');
});

t.test('batches asked for ahead: a concurrent flood still never gets more than the limit admitted', async (t) => {
  const sb = await sandboxOf('busy'); // 9000 a minute: leases of up to 9, asked for ahead
  const ahead = s.app.auth.stats.prefetched;
  const N = 9300;
  const { admitted, refused } = await flood(sb, N);
  t.ok(s.app.auth.stats.prefetched > ahead, 'batches were asked for ahead');
  t.equal(admitted + refused, N, 'only 200 and 429');
  t.ok(admitted <= 9000, `admitted ${admitted} <= 9000`);
  // refused early: at most what the thread held when the window filled (the rest of the
  // current batch, one asked ahead, one a concurrent ask replaced: 9 admissions each)
  t.ok(admitted >= 9000 - 27, `admitted ${admitted}: at most three leases' worth refused early`);
  t.equal(await pollTotal(sb.uuid), N, 'poll total counts every request, refused ones too');
});

t.test('rate-limit-4.lua with need 0 (a batch asked ahead): counts the batch, records no request', async (t) => {
  const sb = await sandboxOf('mid');
  const k = s.app.keys;
  const keys = [k.sandbox(sb.uuid), k.rateWindow(sb.uuid), k.rateHistory(sb.uuid), k.rateTotals(sb.uuid)] as const;
  const call = async (want: number, pending: number, need: number) => rateLimitReply(await s.app.redis.rateLimit(...keys, want, pending, '', ...RATE_LIMIT_ARGS, need));
  const windowCount = async () => Object.values(await s.app.redis.hgetall(k.rateWindow(sb.uuid))).reduce((a, v) => a + Number(v), 0);
  const totals = async () => await s.app.redis.hgetall(k.rateTotals(sb.uuid));
  t.has(await call(1, 0, 1), { admitted: true, limit: 3000, used: 1 }, 'a request: counted, used after it');
  const before = await totals();
  const r = await call(3, 0, 0);
  if (r === NOT_INDEXED) throw new Error('not indexed');
  t.same([r.admitted, r.used, r.granted], [true, 1, 3], 'ahead: the count before the batch, all three granted');
  t.equal(await windowCount(), 4);
  t.same(await totals(), before, 'no request recorded in the total');
  const p = await call(3, 5, 0);
  if (p === NOT_INDEXED) throw new Error('not indexed');
  t.equal(Number((await totals()).total), Number(before.total) + 5, 'the pending records it carries are');
  // fill the window: ahead is refused once not one more fits, and no rejection is counted
  await s.app.redis.hset(k.rateWindow(sb.uuid), String(p.bucket), '3000');
  const full = await call(3, 0, 0);
  if (full === NOT_INDEXED) throw new Error('not indexed');
  t.same([full.admitted, full.granted], [false, 0]);
  t.equal((await totals()).rejected, before.rejected, 'no rejection counted for a refusal ahead');
});

t.test('a tier change applies to the very next request, lease or not', async (t) => {
  const sb = await sandboxOf('huge');
  for (let i = 0; i < 80; i++) await (await s.req(`/sandbox/${sb.uuid}/services`, keyed(sb.apiKey))).body?.cancel();
  // the thread now holds a lease of several admissions; 80 are counted, over free's 60
  const down = await s.admin('POST', `/admin/api/sandboxes/${sb.uuid}/tier`, { tier: 'free' });
  t.equal(down.status, 200);
  await down.body?.cancel();
  const r = await s.req(`/sandbox/${sb.uuid}/services`, keyed(sb.apiKey));
  t.equal(r.status, 429, 'refused at once under the free limit');
  t.match(r.headers.get('ratelimit-policy') ?? '', /q=60/);
  await r.body?.cancel();
});
