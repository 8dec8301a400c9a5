// Conditional reads (contract, "Search": conditional requests): every 200 of GET /services,
// GET /sandbox/{uuid}/services and GET /devices carries a strong ETag; an If-None-Match that
// still matches (RFC 9110 weak comparison) gets 304 with the same Cache-Control, Vary and
// ETag and no body; a write changes the ETag; a keyed 304 counts against the rate limit.
import t, { type Test } from 'tap';
import { ids, jsonBody, keyed } from '../helpers/checks.js';
import { createSandbox, registerProduction, serve } from '../helpers/server.js';

// the lease sweeper's periodic scripts go through the same client: out of the count's way
const s = await serve(t, { env: { LEASE_SWEEP_MS: '60000' } });

/**
 * Script calls this server has sent to Redis so far (counted at ioredis's sendCommand): a
 * search, or a near-cache load, is one. The readiness watcher's and the near cache's version
 * checks are plain commands on timers of their own: counting those made the test a race.
 */
let sent = 0;
const client = s.app.redis as unknown as { sendCommand: (...a: unknown[]) => unknown };
const send = client.sendCommand.bind(client);
client.sendCommand = (...a: unknown[]) => {
  if (/^eval/i.test((a[0] as { name?: string } | undefined)?.name ?? '')) sent++;
  return send(...a);
};
const searchCalls = async () => sent;

const inm = (etag: string, init: RequestInit = {}): RequestInit => ({ ...init, headers: { ...(init.headers as Record<string, string> | undefined), 'if-none-match': etag } });

/** 200 → 304 for the same ETag: same caching headers, no body. Returns the ETag. */
async function roundTrip(t: Test, path: string, init: RequestInit = {}): Promise<string> {
  const first = await s.req(path, init);
  t.equal(first.status, 200, `${path}: 200`);
  await first.arrayBuffer();
  const etag = first.headers.get('etag') ?? '';
  t.match(etag, /^"[A-Za-z0-9_-]+"$/, 'a strong ETag (quoted, no W/)');
  const again = await s.req(path, inm(etag, init));
  t.equal(again.status, 304, 'If-None-Match with that ETag: 304');
  t.equal(await again.text(), '', 'no body');
  // RFC 9110 §8.6: a 304's Content-Length, if any, must be the 200's; none is sent
  t.equal(again.headers.get('content-length'), null, 'no Content-Length');
  for (const h of ['etag', 'cache-control', 'vary']) t.equal(again.headers.get(h), first.headers.get(h), `the same ${h}`);
  return etag;
}

t.test('anonymous search: 200 -> 304 -> write -> 200 with a new ETag', async (t) => {
  await registerProduction(s, { endpoint: 'https://p1.example.com', capability: 'polled' });
  const path = '/services?capability=polled';
  const etag = await roundTrip(t, path);
  t.equal((await s.req(path)).headers.get('cache-control'), `public, max-age=${s.app.cfg.searchMaxAge}`);
  const p2 = await registerProduction(s, { endpoint: 'https://p2.example.com', capability: 'polled' });
  const after = await s.req(path, inm(etag));
  t.equal(after.status, 200, 'after a write the old ETag no longer matches');
  t.ok((await ids(after)).includes(p2.id), 'and the body has the write');
  t.not(after.headers.get('etag'), etag, 'a new ETag');
  await roundTrip(t, path);
});

t.test('If-None-Match follows the weak comparison and lists', async (t) => {
  await registerProduction(s, { endpoint: 'https://w1.example.com', capability: 'weakcmp' });
  const path = '/services?capability=weakcmp';
  const etag = await roundTrip(t, path);
  for (const v of ['W/' + etag, `"nope", ${etag}`, `"nope",${etag} `, '*']) t.equal((await s.req(path, inm(v))).status, 304, `If-None-Match: ${v}`);
  for (const v of ['"nope"', etag.slice(0, -2) + '"', 'W/"x"']) {
    const r = await s.req(path, inm(v));
    t.equal(r.status, 200, `If-None-Match: ${v} gets the body`);
    t.equal(r.headers.get('etag'), etag);
    await r.arrayBuffer();
  }
});

t.test('each page has its own ETag, and a 304 needs no search once the page is known', async (t) => {
  for (let i = 0; i < 3; i++) await registerProduction(s, { endpoint: `https://pg${i}.example.com`, capability: 'paged-etag' });
  const p1 = await s.req('/services?capability=paged-etag&limit=2');
  const next = /<([^>]+)>/.exec(p1.headers.get('link') ?? '')?.[1] ?? '';
  t.ok(next, 'a next page');
  await p1.arrayBuffer();
  const p2 = await s.req(next);
  await p2.arrayBuffer();
  // a page after a cursor is not kept in the result cache once the near cache holds all of
  // it (it is joined from memory again); before that, from its second request on
  await (await s.req(next)).arrayBuffer();
  t.not(p2.headers.get('etag'), p1.headers.get('etag'), 'pages differ, so do their ETags');
  const hits = s.app.cache.hits;
  const near = s.app.index.near!;
  const fromMemory = near.stats.docHits;
  const searches = await searchCalls();
  await (await s.req(next)).arrayBuffer();
  const nm = await s.req(next, inm(p2.headers.get('etag')!));
  t.equal(nm.status, 304);
  t.ok(s.app.cache.hits > hits || near.stats.docHits > fromMemory, 'answered from the cached page or from the near cache');
  t.equal(await searchCalls(), searches, 'without a command to Redis');
});

t.test('GET /devices: 200 -> 304 -> write -> 200', async (t) => {
  await registerProduction(s, { endpoint: 'https://dev1.example.com', capability: 'devcap', iot: { deviceClasses: ['thermo'], protocols: ['mqtt'] } });
  const path = '/devices?deviceClass=thermo';
  const etag = await roundTrip(t, path);
  await registerProduction(s, { endpoint: 'https://dev2.example.com', capability: 'devcap', iot: { deviceClasses: ['thermo'], protocols: ['coap'] } });
  const after = await s.req(path, inm(etag));
  t.equal(after.status, 200);
  t.equal(((await after.json()) as unknown[]).length, 2, 'both bindings');
  t.not(after.headers.get('etag'), etag);
});

const total = async (uuid: string) => ((await (await s.req(`/sandbox/${uuid}/poll`)).json()) as { total: number }).total;

t.test('keyed searches: private 304s that count against the rate limit, new ETag after a write', async (t) => {
  const sb = await createSandbox(s, 'Etags');
  const reg = async (endpoint: string) => {
    const r = await s.req(`/sandbox/${sb.uuid}/services`, jsonBody('POST', { endpoint, capability: 'kpoll' }, sb.apiKey));
    t.equal(r.status, 201);
    return ((await r.json()) as { id: string }).id;
  };
  await reg('https://k1.example.com');
  for (const path of [`/sandbox/${sb.uuid}/services?capability=kpoll`, '/services?capability=kpoll']) {
    const etag = await roundTrip(t, path, keyed(sb.apiKey));
    const before = await total(sb.uuid);
    const nm = await s.req(path, inm(etag, keyed(sb.apiKey)));
    t.equal(nm.status, 304);
    t.match(nm.headers.get('cache-control'), /^private, no-(cache|store)$/, 'private');
    t.match(nm.headers.get('ratelimit') ?? '', /r=\d+/, 'the 304 carries the rate-limit fields');
    t.equal(await total(sb.uuid), before + 1, 'and was counted');
  }
  const etag = (await s.req('/services?capability=kpoll', keyed(sb.apiKey))).headers.get('etag')!;
  const id2 = await reg('https://k2.example.com');
  const after = await s.req('/services?capability=kpoll', inm(etag, keyed(sb.apiKey)));
  t.equal(after.status, 200, 'the sandbox write changes the keyed answer');
  t.ok((await ids(after)).includes(id2));
  const anon = await s.req('/services?capability=kpoll', inm(etag));
  t.equal(anon.status, 200, "the sandbox's ETag does not match production's answer");
  t.not(anon.headers.get('etag'), etag);
  t.same(await ids(anon), []);
});
