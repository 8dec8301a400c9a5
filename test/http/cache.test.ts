// The in-process result cache never hides a write: on the writing node at once, and on
// another node through Redis pub/sub (the entries' own lifetime is set to an hour here, so
// only an invalidation message can make the write visible).
import t from 'tap';
import { registerProduction, startTestServer } from '../helpers/server.js';

const ids = async (r: Response) => ((await r.json()) as { id: string }[]).map((x) => x.id);

t.test('writes invalidate cached results on this node and on others', async (t) => {
  const env = { RESULT_CACHE_TTL_MS: '3600000' };
  const a = await startTestServer({ env });
  t.teardown(() => a.close());
  // node B: same database and Redis prefix, its own process-local cache
  const b = await startTestServer({ env, databaseUrl: a.cfg.databaseUrl, redisKeyPrefix: a.cfg.redisKeyPrefix });
  t.teardown(() => b.server.close(100).then(() => b.app.redis.quit()).then(() => b.app.pool.end()));

  const first = await registerProduction(a, { endpoint: 'https://one.example.com', capability: 'cached' });
  t.same(await ids(await a.req('/services?capability=cached')), [first.id]);
  t.same(await ids(await b.req('/services?capability=cached')), [first.id], 'B has it cached now');
  t.ok(b.app.cache.size > 0, 'B cached the result');

  const second = await registerProduction(a, { endpoint: 'https://two.example.com', capability: 'cached' });
  t.same(await ids(await a.req('/services?capability=cached')), [first.id, second.id], 'the writing node sees its write at once');

  let seen: string[] = [];
  for (let i = 0; i < 100 && seen.length < 2; i++) {
    seen = await ids(await b.req('/services?capability=cached'));
    if (seen.length < 2) await new Promise((r) => setTimeout(r, 20));
  }
  t.same(seen, [first.id, second.id], 'the other node sees it without waiting for expiry');

  const del = await a.admin('DELETE', `/admin/api/services/${first.id}`);
  t.equal(del.status, 204);
  for (let i = 0; i < 100 && seen.length > 1; i++) {
    seen = await ids(await b.req('/services?capability=cached'));
    if (seen.length > 1) await new Promise((r) => setTimeout(r, 20));
  }
  t.same(seen, [second.id], 'a delete is seen on the other node too');
});
