// A write's invalidation message reaches every thread but the one that applied it: that one
// dropped its results when it applied the write, and its own echo (heard moments later
// through pub/sub) must not drop a result computed since. Plain namespace messages (the
// lease sweeper's, health-flip-1.lua) and other threads' tagged ones still invalidate.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { registerProduction, type TestServer, serve, HOUR_CACHE } from '../helpers/server.js';
import { ids } from '../helpers/checks.js';
import { PRODUCTION } from '../../src/hot/domain/keys.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Publish a plain message for a namespace nobody uses and wait until every node has heard
 * it: pub/sub keeps a connection's messages in order, so each has heard all published before.
 */
async function heardAll(...nodes: TestServer[]): Promise<void> {
  const marker = randomUUID();
  const before = nodes.map((n) => n.app.cache.version(marker));
  await nodes[0]!.app.redis.publish(nodes[0]!.app.keys.invalidationChannel(), marker);
  await waitFor('a published invalidation heard by every node', () => nodes.every((n, k) => n.app.cache.version(marker) !== before[k]), 5_000, 20);
}

t.test("the writing thread skips its own echo; other nodes drop the namespace's results", async (t) => {
  const a = await serve(t, { env: HOUR_CACHE });
  const b = await serve(t, { env: HOUR_CACHE, on: a });
  await heardAll(a, b);
  const a0 = a.app.cache.version(PRODUCTION);
  const b0 = b.app.cache.version(PRODUCTION);

  const svc = await registerProduction(a, { endpoint: 'https://echo.example.com', capability: 'echo-test' });
  t.equal(a.app.cache.version(PRODUCTION), a0 + 1, 'the writing node dropped its results when it applied the write');
  t.same(await ids(await a.req('/services?capability=echo-test')), [svc.id], 'and sees the write');

  await heardAll(a, b);
  t.equal(a.app.cache.version(PRODUCTION), a0 + 1, 'its own echo did not drop them again');
  t.ok(b.app.cache.version(PRODUCTION) > b0, 'the other node dropped its results');

  const hits = a.app.cache.hits;
  t.same(await ids(await a.req('/services?capability=echo-test')), [svc.id]);
  t.equal(a.app.cache.hits, hits + 1, 'the result computed before the echo was heard is still served');
});

t.test('plain and other senders\' messages invalidate; a tagged message names its namespace', async (t) => {
  const a = await serve(t, { env: HOUR_CACHE });
  const b = await serve(t, { env: HOUR_CACHE, on: a });
  const channel = a.app.keys.invalidationChannel();
  const sandbox = randomUUID();
  await heardAll(a, b);
  const tagged = `${sandbox}\tanother-thread`;
  const v0 = [a, b].map((n) => [n.app.cache.version(PRODUCTION), n.app.cache.version(sandbox), n.app.cache.version(tagged)]);

  await a.app.redis.publish(channel, PRODUCTION); // as health-flip-1.lua publishes
  await a.app.redis.publish(channel, tagged);
  await heardAll(a, b);
  for (const [k, n] of [a, b].entries()) {
    t.equal(n.app.cache.version(PRODUCTION), v0[k]![0]! + 1, `node ${k}: a plain namespace message invalidates it`);
    t.equal(n.app.cache.version(sandbox), v0[k]![1]! + 1, `node ${k}: another sender's message invalidates its namespace`);
    t.equal(n.app.cache.version(tagged), v0[k]![2], `node ${k}: the tag is not taken for part of the namespace`);
  }
});
