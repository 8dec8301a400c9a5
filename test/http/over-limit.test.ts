// Over-limit keys are refused at memory speed (issue 13 item 4): once the rate-limit script
// has refused a sandbox, the node answers its requests 429 locally (same headers and body)
// until the window can admit again, records them in Redis in batches, and a poll still
// counts every request answered before it. A tier change ends the local refusal at once.
import t from 'tap';
import { isError, keyed, serve } from '../helpers/checks.js';
import { createSandbox } from '../helpers/server.js';

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
