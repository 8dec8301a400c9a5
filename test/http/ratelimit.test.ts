// Tiered rate limits of sandbox keys, /poll and /dashboard (issue 3 items 5-6; contract
// "Sandbox endpoints" and the sandbox rows of "Public endpoints").
import t from 'tap';
import { isError, keyed } from '../helpers/checks.js';
import { createSandbox, serve } from '../helpers/server.js';

const s = await serve(t);

interface Poll {
  uuid: string;
  now: number;
  total: number;
  rateLimit: number;
  bucketSeconds: number;
  buckets: number[];
}
const poll = async (uuid: string, init?: RequestInit): Promise<Poll> => {
  const r = await s.req(`/sandbox/${uuid}/poll`, init);
  if (r.status !== 200) throw new Error(`poll: ${r.status}`);
  return (await r.json()) as Poll;
};
const policyQuota = (h: string | null) => Number(/q=(\d+)/.exec(h ?? '')?.[1]);

t.test('a free sandbox admits 60 +- 3 in a burst, then 429 with the headers and the error body', async (t) => {
  const sb = await createSandbox(s, 'Burst');
  t.equal(sb.rateLimit, 60);
  const statuses: number[] = [];
  let first429: Response | null = null;
  for (let i = 0; i < 75; i++) {
    const r = await s.req(`/sandbox/${sb.uuid}/services`, keyed(sb.apiKey));
    statuses.push(r.status);
    if (r.status === 200) {
      t.match(r.headers.get('ratelimit-policy') ?? '', /\S/, 'admitted responses carry RateLimit-Policy');
      t.match(r.headers.get('ratelimit') ?? '', /\S/, 'and RateLimit');
      await r.body?.cancel();
    } else if (r.status === 429 && !first429) first429 = r;
    else await r.body?.cancel();
  }
  const admitted = statuses.indexOf(429);
  t.ok(admitted >= 57 && admitted <= 63, `admitted ${admitted} before the first 429`);
  t.ok(statuses.slice(0, admitted).every((x) => x === 200), 'all 200 before');
  t.ok(statuses.slice(admitted).every((x) => x === 429), 'all 429 after');
  const r = first429!;
  t.match(r.headers.get('retry-after') ?? '', /^[1-9]\d*$/, 'Retry-After in seconds');
  t.ok(Number(r.headers.get('retry-after')) <= 60, 'at most the window');
  t.equal(policyQuota(r.headers.get('ratelimit-policy')), 60, 'RateLimit-Policy names the quota');
  t.match(r.headers.get('ratelimit-policy') ?? '', /w=60/, 'and the 60 s window');
  t.match(r.headers.get('ratelimit') ?? '', /r=0/, 'RateLimit: nothing remaining');
  await isError(t, r, 429, 'RATE_LIMITED');

  // every sandbox-key route is limited, and so is /services with the key
  const srch = await s.req('/services', keyed(sb.apiKey));
  t.equal(srch.status, 429, 'keyed /services is limited too');
  t.match(srch.headers.get('retry-after') ?? '', /^\d+$/);
  t.match(srch.headers.get('vary') ?? '', /Authorization/i, 'the 429 of /services still varies on Authorization');
  t.match(srch.headers.get('cache-control') ?? '', /^private/, 'and is private');
  t.equal((srch.headers.get('cache-control') ?? '').split(',').filter((x) => /store|private/.test(x)).length, 2, 'one Cache-Control header');
  await isError(t, srch, 429, 'RATE_LIMITED');
  const post = await s.req(`/sandbox/${sb.uuid}/services`, { method: 'POST', headers: { authorization: `Bearer ${sb.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ endpoint: 'https://x.example.com', capability: 'x' }) });
  t.equal(post.status, 429, 'writes too');
  t.ok(post.headers.get('retry-after'));
  await isError(t, post, 429);
  const n = Number((await s.app.pg.query<{ n: string }>('SELECT count(*) AS n FROM services WHERE ns = $1', [sb.uuid])).rows[0]!.n);
  t.equal(n, 0, 'a refused write writes nothing');
  // anonymous traffic is not limited by a sandbox's window
  t.equal((await s.req('/services')).status, 200);

  const p = await poll(sb.uuid);
  t.equal(p.total, 75 + 2, 'poll total counts every answered request, 429s included');
  t.equal(p.rateLimit, 60);
});

t.test('a concurrent burst is counted atomically: 60 +- 3 admitted', async (t) => {
  const sb = await createSandbox(s, 'Parallel');
  const all = await Promise.all(
    Array.from({ length: 80 }, async () => {
      const r = await s.req(`/sandbox/${sb.uuid}/services`, keyed(sb.apiKey));
      await r.body?.cancel();
      return r.status;
    }),
  );
  const ok = all.filter((x) => x === 200).length;
  t.ok(ok >= 57 && ok <= 63, `${ok} admitted`);
  t.equal(all.filter((x) => x === 429).length, 80 - ok, 'the rest are 429');
  t.equal((await poll(sb.uuid)).total, 80, 'every request counted once');
});

t.test('poll: fields, JSON whatever Accept says, not counted, total = requests answered before it', async (t) => {
  const sb = await createSandbox(s, 'Poller');
  const p0 = await poll(sb.uuid, { headers: { accept: 'text/html' } });
  t.same(Object.keys(p0).filter((k) => ['uuid', 'now', 'total', 'rateLimit', 'bucketSeconds', 'buckets'].includes(k)).sort(), ['bucketSeconds', 'buckets', 'now', 'rateLimit', 'total', 'uuid']);
  t.equal(p0.uuid, sb.uuid);
  t.equal(p0.total, 0);
  t.equal(p0.rateLimit, 60);
  t.equal(p0.bucketSeconds, 5);
  t.equal(p0.buckets.length, 72, '72 buckets: six minutes');
  t.ok(p0.buckets.every((b) => b === 0));
  t.ok(Number.isInteger(p0.now) && Math.abs(p0.now - Date.now()) < 60_000, 'now is the server time in ms');
  const html = await s.req(`/sandbox/${sb.uuid}/poll`, { headers: { accept: 'text/html' } });
  t.match(html.headers.get('content-type') ?? '', /^application\/json/, 'JSON with Accept: text/html');
  const htmlText = await html.text();
  t.doesNotThrow(() => JSON.parse(htmlText), 'a JSON body');
  const xml = await s.req(`/sandbox/${sb.uuid}/poll`, { headers: { accept: 'application/xml' } });
  t.match(xml.headers.get('content-type') ?? '', /^application\/json/, 'JSON with Accept: application/xml');
  await xml.body?.cancel();

  for (let i = 0; i < 5; i++) await poll(sb.uuid);
  t.equal((await poll(sb.uuid)).total, 0, 'polling does not count');

  // a mix of answers: 200, 201, 302, 400, 404 all count
  const base = `/sandbox/${sb.uuid}/services`;
  const reqs: [string, RequestInit][] = [
    [base, keyed(sb.apiKey)],
    [base, { method: 'POST', headers: { authorization: `Bearer ${sb.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ endpoint: 'https://p.example.com', capability: 'p' }) }],
    [base + '?capability=P', keyed(sb.apiKey)],
    [base + '?limit=0', keyed(sb.apiKey)],
    [base + '/nosuch', keyed(sb.apiKey)],
    ['/services', keyed(sb.apiKey)],
  ];
  const got: number[] = [];
  for (const [path, init] of reqs) {
    const r = await s.req(path, init);
    got.push(r.status);
    t.match(r.headers.get('ratelimit-policy') ?? '', /q=60/, `${r.status}: an admitted response carries RateLimit-Policy`);
    t.match(r.headers.get('ratelimit') ?? '', /r=\d+/, `${r.status}: and RateLimit`);
    await r.body?.cancel();
    const p = await poll(sb.uuid);
    t.equal(p.total, got.length, `total after ${got.length} request(s)`);
  }
  t.same(got, [200, 201, 302, 400, 404, 200]);
  const p = await poll(sb.uuid);
  t.equal(p.buckets.reduce((a, b) => a + b, 0), 6, 'the buckets hold the recent requests');
  t.ok(p.buckets[71]! > 0 || p.buckets[70]! > 0, 'newest bucket last');

  // requests without the key (401) are not the sandbox's requests
  await (await s.req(base)).body?.cancel();
  t.equal((await poll(sb.uuid)).total, 6);
});

t.test('poll and dashboard: 404 JSON for unknown or malformed uuids', async (t) => {
  for (const u of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid', '7E0A2A2E-5A4B-4C4E-9A9A-1B2C3D4E5F6']) {
    await isError(t, await s.req(`/sandbox/${u}/poll`, { headers: { accept: 'text/html' } }), 404, 'NOT_FOUND', `poll ${u}`);
    await isError(t, await s.req(`/sandbox/${u}/dashboard`, { headers: { accept: 'text/html' } }), 404, 'NOT_FOUND', `dashboard ${u}`);
  }
});

t.test('dashboard: name, tier, rateLimit, service count, location, counters', async (t) => {
  const sb = await createSandbox(s, 'Dash Board', { lat: -33.9, lon: 151.2 });
  for (let i = 0; i < 3; i++) {
    const r = await s.req(`/sandbox/${sb.uuid}/services`, { method: 'POST', headers: { authorization: `Bearer ${sb.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ endpoint: `https://d${i}.example.com`, capability: 'd' }) });
    t.equal(r.status, 201);
    await r.body?.cancel();
  }
  const r = await s.req(`/sandbox/${sb.uuid}/dashboard`);
  t.equal(r.status, 200);
  t.match(r.headers.get('content-type') ?? '', /^application\/json/);
  const d = (await r.json()) as Record<string, unknown>;
  t.equal(d.uuid, sb.uuid);
  t.equal(d.name, 'Dash Board');
  t.equal(d.tier, 'free');
  t.equal(d.rateLimit, 60);
  t.equal(d.serviceCount, 3);
  t.same(d.location, { lat: -33.9, lon: 151.2 });
  t.ok(d.counters && typeof d.counters === 'object', 'request counters');
  t.equal((d.counters as { total: number }).total, 3, 'counters see the requests');
  t.equal((await poll(sb.uuid)).total, 3, 'reading the dashboard does not count');
  const upper = await s.req(`/sandbox/${sb.uuid.toUpperCase()}/dashboard`);
  t.equal(upper.status, 200, 'the uuid is case-insensitive');
  t.equal(((await upper.json()) as { uuid: string }).uuid, sb.uuid);
  t.equal((await poll(sb.uuid.toUpperCase())).uuid, sb.uuid, 'poll too');
});

t.test('a tier change applies to the very next request', async (t) => {
  const sb = await createSandbox(s, 'Upgrade');
  for (let i = 0; i < 60; i++) await (await s.req(`/sandbox/${sb.uuid}/services`, keyed(sb.apiKey))).body?.cancel();
  const limited = await s.req(`/sandbox/${sb.uuid}/services`, keyed(sb.apiKey));
  t.equal(limited.status, 429, 'free limit reached');
  await limited.body?.cancel();

  const up = await s.admin('POST', `/admin/api/sandboxes/${sb.uuid}/tier`, { tier: 'pro' });
  t.equal(up.status, 200, 'tier changed');
  const summary = (await up.json()) as Record<string, unknown>;
  t.equal(summary.tier, 'pro');
  t.equal(summary.rateLimit, 600);
  const next = await s.req(`/sandbox/${sb.uuid}/services`, keyed(sb.apiKey));
  t.equal(next.status, 200, 'the next request is admitted');
  t.equal(policyQuota(next.headers.get('ratelimit-policy')), 600, 'and sees the new quota');
  await next.body?.cancel();
  t.equal((await poll(sb.uuid)).rateLimit, 600, 'poll shows the new limit');
  const dash = (await (await s.req(`/sandbox/${sb.uuid}/dashboard`)).json()) as Record<string, unknown>;
  t.same([dash.tier, dash.rateLimit], ['pro', 600], 'dashboard too');

  const down = await s.admin('POST', `/admin/api/sandboxes/${sb.uuid}/tier`, { tier: 'free' });
  t.equal(down.status, 200);
  await down.body?.cancel();
  const after = await s.req(`/sandbox/${sb.uuid}/services`, keyed(sb.apiKey));
  t.equal(after.status, 429, 'back to free: the next request is refused again');
  t.equal(policyQuota(after.headers.get('ratelimit-policy')), 60);
  await after.body?.cancel();

  await isError(t, await s.admin('POST', `/admin/api/sandboxes/${sb.uuid}/tier`, { tier: 'platinum' }), 400, undefined, 'unknown tier');
  await isError(t, await s.admin('POST', '/admin/api/sandboxes/00000000-0000-4000-8000-000000000000/tier', { tier: 'pro' }), 404, undefined, 'unknown sandbox');
  await isError(t, await s.req(`/admin/api/sandboxes/${sb.uuid}/tier`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"tier":"enterprise"}' }), 401, undefined, 'without the admin key');
  t.equal((await poll(sb.uuid)).rateLimit, 60, 'unchanged by refused calls');
});
