// The writing thread sees its own writes at once, without waiting for pub/sub (issue 24's
// survivor: the writer served its own stale cached page while the invalidation message was
// late, 3 reads in 150). Here the invalidation subscriber is stopped outright and cached
// results live an hour, so only the writer's own invalidation (compose.ts, the projector's
// `applied`) can make a write visible to the next read.
import t from 'tap';
import { registerProduction, serve } from '../helpers/server.js';
import { ids } from '../helpers/checks.js';

t.test('registrations, changes and deletes are visible to the next read on the writing node', async (t) => {
  const s = await serve(t, { env: { RESULT_CACHE_TTL_MS: '3600000' } });
  const subscriber = s.thread.parts.find((p) => p.name === 'invalidation');
  t.ok(subscriber, 'the thread has an invalidation subscriber');
  await subscriber!.stop();

  const path = '/services?capability=ryw';
  const want: string[] = [];
  for (let i = 0; i < 10; i++) {
    t.same((await ids(await s.req(path))).sort(), [...want].sort(), `round ${i}: read (and cached)`);
    const hits = s.app.cache.hits;
    await ids(await s.req(path));
    t.equal(s.app.cache.hits, hits + 1, `round ${i}: the second read is a cache hit`);
    const svc = await registerProduction(s, { endpoint: `https://ryw${i}.example.com`, capability: 'ryw' });
    want.push(svc.id);
    t.same((await ids(await s.req(path))).sort(), [...want].sort(), `round ${i}: the registration is seen at once`);
  }
  const changed = await s.admin('PATCH', `/admin/api/services/${want[0]}`, { capabilities: ['elsewhere'] });
  t.equal(changed.status, 200);
  t.notOk((await ids(await s.req(path))).includes(want[0]!), 'a change that leaves the query is seen at once');
  t.equal((await s.admin('DELETE', `/admin/api/services/${want[1]}`)).status, 204);
  t.notOk((await ids(await s.req(path))).includes(want[1]!), 'a delete is seen at once');
});
