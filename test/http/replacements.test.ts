// GET /services/{id}/replacements through the shared public cache: Cache-Control public,
// strong ETag and 304, Age, X-Cache MISS then HIT, invalidation by writes to the service
// or its candidates (contract, "Deprecation and anonymous replacement discovery").
import t from 'tap';
import { ids, isError } from '../helpers/checks.js';
import { registerProduction, serve } from '../helpers/server.js';

const s = await serve(t);

const old = await registerProduction(s, { endpoint: 'https://old.example.com', capability: 'legacy', deprecated: true });
const c1 = await registerProduction(s, { endpoint: 'https://new1.example.com', capability: 'modern' });
const c2 = await registerProduction(s, { endpoint: 'https://new2.example.com', capability: 'modern' });
const c3 = await registerProduction(s, { endpoint: 'https://new3.example.com', capability: 'modern' });
for (const c of [c2, c1]) {
  const r = await s.admin('POST', `/admin/api/services/${old.id}/replacements`, { serviceId: c.id });
  if (r.status !== 201) throw new Error(`add candidate: ${r.status} ${await r.text()}`);
}
const path = `/services/${old.id}/replacements`;

/** Read until a MISS has been seen (entries may be warm from an earlier test). */
const get = (p = path, init?: RequestInit) => s.req(p, init);

t.test('ranked as registered, full service objects', async (t) => {
  const r = await get();
  t.equal(r.status, 200);
  t.match(r.headers.get('content-type'), /^application\/json/);
  const body = (await r.json()) as Record<string, unknown>[];
  t.same(body.map((x) => x.id), [c2.id, c1.id], 'the order they were added in');
  t.same(body[0], { ...c2 }, 'the candidate as /services/{id} shows it');
});

t.test('cache headers: public max-age > 0, strong ETag, Age, X-Cache MISS then HIT', async (t) => {
  // a write makes the next read a MISS
  t.equal((await s.admin('PATCH', `/admin/api/services/${old.id}`, { sunset_date: '2032-01-01' })).status, 200);
  const miss = await get();
  t.equal(miss.status, 200);
  t.equal(miss.headers.get('x-cache'), 'MISS', 'first call after a write is a MISS');
  const cc = miss.headers.get('cache-control') ?? '';
  t.match(cc, /(^|,\s*)public(,|$)/, 'public');
  const m = /max-age=(\d+)/.exec(cc);
  t.ok(m && Number(m[1]) > 0, 'max-age > 0');
  t.notMatch(cc, /private|no-store|no-cache/);
  const etag = miss.headers.get('etag') ?? '';
  t.match(etag, /^"[^"]+"$/, 'a strong ETag (quoted, no W/)');
  t.match(miss.headers.get('age') ?? '', /^\d+$/, 'Age in whole seconds');
  t.ok(Number(miss.headers.get('age')) <= Number(m?.[1]), 'Age within max-age');
  const missBody = await miss.text();

  const hit = await get();
  t.equal(hit.headers.get('x-cache'), 'HIT', 'the call right after a MISS is a HIT');
  t.equal(hit.headers.get('etag'), etag, 'same ETag');
  t.match(hit.headers.get('age') ?? '', /^\d+$/);
  t.equal(await hit.text(), missBody, 'same bytes');

  const q = await get(path + '?x=1');
  t.equal(q.headers.get('x-cache'), 'HIT', 'the cache key is the path alone (query ignored)');
  t.equal(await q.text(), missBody);
  const k = await get(path, { headers: { authorization: 'Bearer x_sb_whatever', cookie: 'a=b' } });
  t.equal(k.headers.get('x-cache'), 'HIT', 'credentials do not split the cache');
  t.equal(await k.text(), missBody);
});

t.test('304 on If-None-Match', async (t) => {
  const r = await get();
  const etag = r.headers.get('etag')!;
  await r.body?.cancel();
  for (const inm of [etag, `"nope", ${etag}`, '*']) {
    const nm = await get(path, { headers: { 'if-none-match': inm } });
    t.equal(nm.status, 304, `If-None-Match: ${inm}`);
    t.equal(await nm.text(), '', 'no body');
    t.equal(nm.headers.get('etag'), etag, 'the ETag is repeated');
    t.match(nm.headers.get('cache-control') ?? '', /public/);
  }
  const other = await get(path, { headers: { 'if-none-match': '"something-else"' } });
  t.equal(other.status, 200, 'a different ETag gets the body');
  t.equal(((await other.json()) as unknown[]).length, 2);
  const weak = await get(path, { headers: { 'if-none-match': 'W/' + etag } });
  // weak comparison is what If-None-Match uses (RFC 9110 13.1.2): W/"x" matches "x"
  t.equal(weak.status, 304, 'weak comparison for If-None-Match');
});

t.test('a write to the service invalidates the entry', async (t) => {
  await (await get()).body?.cancel();
  t.equal((await get()).headers.get('x-cache'), 'HIT');
  const before = (await get()).headers.get('etag');
  t.equal((await s.admin('POST', `/admin/api/services/${old.id}/replacements`, { serviceId: c3.id })).status, 201);
  const r = await get();
  t.equal(r.headers.get('x-cache'), 'MISS', 'MISS after a candidate was added');
  t.same(await ids(r), [c2.id, c1.id, c3.id], 'shows the new candidate, ranked last');
  t.not((await get()).headers.get('etag'), before, 'a new ETag');
});

t.test('a write to a candidate invalidates the entry', async (t) => {
  await (await get()).body?.cancel();
  t.equal((await get()).headers.get('x-cache'), 'HIT');
  t.equal((await s.admin('PATCH', `/admin/api/services/${c1.id}`, { endpoint: 'https://new1-moved.example.com' })).status, 200);
  const r = await get();
  t.equal(r.headers.get('x-cache'), 'MISS', 'MISS after a candidate changed');
  const body = (await r.json()) as { id: string; endpoint: string }[];
  t.equal(body.find((x) => x.id === c1.id)?.endpoint, 'https://new1-moved.example.com/', 'shows the change');

  t.equal((await get()).headers.get('x-cache'), 'HIT');
  t.equal((await s.admin('DELETE', `/admin/api/services/${c2.id}`)).status, 204);
  const d = await get();
  t.equal(d.headers.get('x-cache'), 'MISS', 'MISS after a candidate was deleted');
  t.same(await ids(d), [c1.id, c3.id], 'the deleted candidate is gone, ranks kept');
});

t.test('[] when there are no candidates; 404 JSON for unknown ids', async (t) => {
  const none = await get(`/services/${c3.id}/replacements`);
  t.equal(none.status, 200);
  t.equal(await none.text(), '[]');
  t.match(none.headers.get('cache-control') ?? '', /public/);
  t.ok(none.headers.get('etag'));
  t.match(none.headers.get('x-cache') ?? '', /^(HIT|MISS)$/);
  t.equal((await get(`/services/${c3.id}/replacements`)).headers.get('x-cache'), 'HIT');
  await isError(t, await get('/services/nosuchservice/replacements'), 404, 'NOT_FOUND');
  await isError(t, await get(`/services/${c2.id}/replacements`), 404, 'NOT_FOUND', 'deleted service');
});

t.test('the service itself deleted: 404 and no stale entry', async (t) => {
  const x = await registerProduction(s, { endpoint: 'https://x.example.com', capability: 'x' });
  t.equal((await s.admin('POST', `/admin/api/services/${x.id}/replacements`, { serviceId: c3.id })).status, 201);
  await (await get(`/services/${x.id}/replacements`)).body?.cancel();
  t.equal((await get(`/services/${x.id}/replacements`)).headers.get('x-cache'), 'HIT');
  t.equal((await s.admin('DELETE', `/admin/api/services/${x.id}`)).status, 204);
  await isError(t, await get(`/services/${x.id}/replacements`), 404, 'NOT_FOUND');
});
