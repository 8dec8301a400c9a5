// The in-process result cache never hides a write: on the writing node at once, and on
// another node through Redis pub/sub (the entries' own lifetime is set to an hour here, so
// only an invalidation message can make the write visible).
import t from 'tap';
import { registerProduction, serve, HOUR_CACHE } from '../helpers/server.js';
import { ids, rawGet } from '../helpers/checks.js';
import { PRODUCTION } from '../../src/hot/domain/keys.js';
import { waitFor } from '../helpers/wait.js';

t.test('writes invalidate cached results on this node and on others', async (t) => {
  const a = await serve(t, { env: HOUR_CACHE });
  const b = await serve(t, { env: HOUR_CACHE, on: a });

  const first = await registerProduction(a, { endpoint: 'https://one.example.com', capability: 'cached' });
  t.same(await ids(await a.req('/services?capability=cached')), [first.id]);
  t.same(await ids(await b.req('/services?capability=cached')), [first.id], 'B has it cached now');
  t.ok(b.app.cache.size > 0, 'B cached the result');

  const second = await registerProduction(a, { endpoint: 'https://two.example.com', capability: 'cached' });
  t.same(await ids(await a.req('/services?capability=cached')), [first.id, second.id], 'the writing node sees its write at once');

  const cached = async () => ids(await b.req('/services?capability=cached'));
  let seen = await waitFor('B to see the write', async () => {
    const v = await cached();
    return v.length >= 2 && v;
  }, 20_000, 20);
  t.same(seen, [first.id, second.id], 'the other node sees it without waiting for expiry');

  const del = await a.admin('DELETE', `/admin/api/services/${first.id}`);
  t.equal(del.status, 204);
  seen = await waitFor('B to see the delete', async () => {
    const v = await cached();
    return v.length <= 1 && v;
  }, 20_000, 20);
  t.same(seen, [second.id], 'a delete is seen on the other node too');
});

t.test('the in-process copy of a replacements entry never hides a write on another node', async (t) => {
  const a = await serve(t, { env: HOUR_CACHE });
  const b = await serve(t, { env: HOUR_CACHE, on: a });

  const old = await registerProduction(a, { endpoint: 'https://old.example.com', capability: 'legacy-x', deprecated: true });
  const c1 = await registerProduction(a, { endpoint: 'https://c1.example.com', capability: 'modern-x' });
  const c2 = await registerProduction(a, { endpoint: 'https://c2.example.com', capability: 'modern-x' });
  t.equal((await a.admin('POST', `/admin/api/services/${old.id}/replacements`, { serviceId: c1.id })).status, 201);
  const path = `/services/${old.id}/replacements`;

  const first = await b.req(path);
  t.same(await ids(first), [c1.id]);
  const second = await b.req(path);
  t.equal(second.headers.get('x-cache'), 'HIT', 'the call right after a MISS is a HIT');
  t.same(await ids(second), [c1.id]);
  t.equal(b.app.replacements.size, 1, 'B holds an in-process copy of the entry');
  const etag = second.headers.get('etag');
  t.equal((await b.req(path, { headers: { 'If-None-Match': etag! } })).status, 304, 'the copy answers 304 too');

  t.equal((await a.admin('POST', `/admin/api/services/${old.id}/replacements`, { serviceId: c2.id })).status, 201);
  const { res, seen } = await waitFor('B to see the new candidate', async () => {
    const r = await b.req(path);
    const v = await ids(r);
    return v.length >= 2 && { res: r, seen: v };
  }, 20_000, 20);
  t.same(seen, [c1.id, c2.id], 'node B sees the new candidate without waiting for expiry');
  t.not(res.headers.get('etag'), etag, 'with a new ETag');
});

t.test('cached answers never stand in for a non-canonical query', async (t) => {
  const a = await serve(t, { env: HOUR_CACHE });
  await registerProduction(a, { endpoint: 'https://fast.example.com', capability: 'fast' });
  for (const [path, bare] of [
    ['/services', '/services?'],
    ['/devices', '/devices?'],
    ['/services?capability=fast', '/services?capability=fast&'],
  ] as const) {
    // the node's own invalidation echo is skipped (invalidation-echo.test.ts): nothing moves
    // the namespace's version between the two requests
    const version = a.app.cache.version(PRODUCTION);
    t.equal((await a.req(path)).status, 200, `${path} answered (and cached)`);
    const hits = a.app.cache.hits;
    t.equal((await a.req(path)).status, 200);
    t.equal(a.app.cache.hits, hits + 1, `${path} again: a cache hit`);
    t.equal(a.app.cache.version(PRODUCTION), version, 'no invalidation in between');
    // (fetch drops a bare "?": a raw request sends it as written)
    const r = await rawGet(a, bare);
    t.equal(r.status, 302, `${bare}: still a redirect`);
    t.equal(r.headers.location, path);
  }
  // a query that is not canonical but means the same: 302, never the cached 200
  const r = await a.req('/services?capability=FAST');
  t.equal(r.status, 302);
});
