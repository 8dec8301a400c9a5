// Over-limit keys are refused at memory speed (issue 13 item 4): once the rate-limit script
// has refused a sandbox, the node answers its requests 429 locally (same headers and body)
// until the window can admit again, records them in Redis in batches, and a poll still
// counts every request answered before it. A tier change ends the local refusal at once.
import t from 'tap';
import { isError, keyed } from '../helpers/checks.js';
import { createSandbox, serve } from '../helpers/server.js';

// a long batch interval: only the poll's own flush can make its totals exact
const s = await serve(t, { env: { RATE_COUNT_FLUSH_MS: '1000' } });

interface Poll {
  total: number;
  rejected: number;
}
const poll = async (uuid: string): Promise<Poll> => (await (await s.req(`/sandbox/${uuid}/poll`)).json()) as Poll;
const get = (uuid: string, key: string, path = `/sandbox/${uuid}/services`) => s.req(path, keyed(key));

t.test('after the first refusal, 429s are answered without Redis and still counted', async (t) => {
  const sb = await createSandbox(s, 'Flood');
  let n = 0;
  let first: Response | null = null;
  while (!first && n < 100) {
    const r = await get(sb.uuid, sb.apiKey);
    n++;
    if (r.status === 429) first = r;
    else await r.body?.cancel();
  }
  t.ok(first, 'refused within 100 requests');
  await first!.body?.cancel();
  const asked = s.app.auth.stats.asked;
  const local = s.app.auth.stats.refusedLocally;
  const refused = 40;
  for (let i = 0; i < refused; i++) {
    const path = i % 2 ? `/sandbox/${sb.uuid}/services` : '/services?capability=x';
    const r = await get(sb.uuid, sb.apiKey, path);
    t.equal(r.status, 429);
    t.match(r.headers.get('retry-after') ?? '', /^[1-9]\d*$/, 'Retry-After');
    t.ok(Number(r.headers.get('retry-after')) <= 60, 'within the window');
    t.match(r.headers.get('ratelimit-policy') ?? '', /q=60;w=60/, 'RateLimit-Policy');
    t.match(r.headers.get('ratelimit') ?? '', /r=0;t=[1-9]/, 'RateLimit: nothing remaining');
    await isError(t, r, 429, 'RATE_LIMITED');
  }
  t.equal(s.app.auth.stats.asked, asked, 'none of them asked the rate-limit script');
  t.equal(s.app.auth.stats.refusedLocally - local, refused, 'all refused locally');
  const p = await poll(sb.uuid);
  t.equal(p.total, n + refused, 'the poll counts every request answered before it (it flushes first)');
  t.equal(p.rejected, 1 + refused, 'and every refusal');
});

t.test('a tier change ends the local refusal at once', async (t) => {
  const sb = await createSandbox(s, 'Upgrade');
  for (let i = 0; i < 100; i++) {
    const r = await get(sb.uuid, sb.apiKey);
    await r.body?.cancel();
    if (r.status === 429) break;
  }
  const refused = await get(sb.uuid, sb.apiKey);
  await refused.body?.cancel();
  t.equal(refused.status, 429, 'refused (locally)');
  const up = await s.admin('POST', `/admin/api/sandboxes/${sb.uuid}/tier`, { tier: 'pro' });
  t.equal(up.status, 200);
  const after = await get(sb.uuid, sb.apiKey);
  await after.body?.cancel();
  t.equal(after.status, 200, 'admitted under the new limit right away');
  t.match(after.headers.get('ratelimit-policy') ?? '', /q=600/);
});

t.test("a known key's local 429 on /services is the 429 the rate-limit script's refusal gives", async (t) => {
  const sb = await createSandbox(s, 'Same429');
  for (let i = 0; i < 100; i++) {
    const r = await get(sb.uuid, sb.apiKey, '/services?capability=x');
    await r.body?.cancel();
    if (r.status === 429) break;
  }
  const local0 = s.app.auth.stats.refusedLocally;
  const asked0 = s.app.auth.stats.asked;
  // the key is resolved and the sandbox known to be over: answered from memory
  const fast = await get(sb.uuid, sb.apiKey, '/services?capability=x');
  t.equal(s.app.auth.stats.refusedLocally - local0, 1, 'refused locally');
  // forget the local refusal: the script refuses, and the route throws its ApiError
  s.app.auth.dropAdmissions(sb.uuid);
  const slow = await get(sb.uuid, sb.apiKey, '/services?capability=x');
  t.equal(s.app.auth.stats.asked - asked0, 1, 'the second one asked the rate-limit script');
  const timed = new Set(['date', 'retry-after', 'ratelimit']);
  const fields = (r: Response) => [...r.headers].filter(([k]) => !timed.has(k));
  t.equal(fast.status, 429);
  t.equal(slow.status, 429);
  t.same(fields(fast), fields(slow), 'the same fields (Vary, Cache-Control, RateLimit-Policy, Content-Type...)');
  t.equal(fast.headers.get('vary'), 'Authorization');
  t.equal(fast.headers.get('cache-control'), 'private, no-store');
  for (const r of [fast, slow]) {
    t.match(r.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
    t.match(r.headers.get('ratelimit') ?? '', /r=0;t=[1-9]/);
  }
  const [a, b] = [(await fast.json()) as { error: { code: string; message: string } }, (await slow.json()) as { error: { code: string; message: string } }];
  t.equal(a.error.code, 'RATE_LIMITED');
  t.equal(b.error.code, 'RATE_LIMITED');
  t.match(a.error.message, /^rate limit of 60 requests per minute exceeded; retry in [1-9]\d* s$/);
  t.match(b.error.message, /^rate limit of 60 requests per minute exceeded; retry in [1-9]\d* s$/);
});
