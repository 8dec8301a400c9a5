// Read scaling on a real replica (redis-server --replicaof): with REDIS_REPLICA_URLS set,
// searches and GET /services/{id} are answered from the replica, so they keep being served
// while the primary refuses to run anything that may write (CLIENT PAUSE WRITE blocks every
// EVALSHA there, the read-only search script included). Writes wait (WAIT) until the
// replica has them, so a client reads its own write from the replica at once.
import t from 'tap';
import { Redis } from 'ioredis';
import { registerProduction, serve } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { startRedis } from '../helpers/redis-server.js';
import { ids } from '../helpers/checks.js';

t.test('searches are served by the replica while the primary is paused for writes', async (t) => {
  const primary = await startRedis();
  const replica = await startRedis(['--replicaof', '127.0.0.1', String(primary.port)]);
  const admin = new Redis(primary.url, { maxRetriesPerRequest: 1 });
  const probe = new Redis(primary.url, { maxRetriesPerRequest: 1 });
  const rep = new Redis(replica.url, { maxRetriesPerRequest: 1 });
  t.teardown(async () => {
    for (const c of [admin, probe, rep]) c.disconnect();
    await replica.kill();
    await primary.kill();
  });
  const s = await serve(t, { env: { REDIS_URL: primary.url, REDIS_CLUSTER_NODES: '', REDIS_REPLICA_URLS: replica.url, RESULT_CACHE_ENTRIES: '0' } });
  t.teardown(() => admin.client('UNPAUSE').catch(() => undefined)); // before the server closes
  await waitFor('the replica in sync', async () => /master_link_status:up/.test(await rep.info('replication')));
  await waitFor('the index', async () => (await s.req('/readyz')).status === 200);

  const svc = await registerProduction(s, { endpoint: 'https://replica.example.com', capability: 'replica-read', properties: { zone: 'a' } });
  // read-your-write from the replica: the write's 2xx came after WAIT saw the replica have it
  const first = await s.req('/services?capability=replica-read');
  t.equal(first.status, 200);
  t.same(await ids(first), [svc.id], 'the replica answers the fresh write');

  await admin.client('PAUSE', 60_000, 'WRITE');
  // a write on the primary now waits for the unpause: it shows the pause is in force
  let probeDone = false;
  const probeWrite = probe.set(s.cfg.redisKeyPrefix + 'replica-probe', '1').then(() => (probeDone = true));
  const during = await s.req('/services?capability=replica-read&property=zone:a');
  t.equal(during.status, 200, 'a search answers while the primary is paused');
  t.same(await ids(during), [svc.id]);
  const one = await s.req(`/services/${svc.id}`);
  t.equal(one.status, 200, 'GET /services/{id} answers while the primary is paused');
  t.equal(((await one.json()) as { id: string }).id, svc.id);
  t.notOk(probeDone, 'the primary was still paused for writes when those reads were answered');

  await admin.client('UNPAUSE');
  await probeWrite;
  t.ok(probeDone, 'the held write went through after the unpause');
});

t.test('a replica that is down hands its reads to the primary', async (t) => {
  const primary = await startRedis();
  const replica = await startRedis(['--replicaof', '127.0.0.1', String(primary.port)]);
  t.teardown(async () => {
    await replica.kill();
    await primary.kill();
  });
  const s = await serve(t, {
    env: { REDIS_URL: primary.url, REDIS_CLUSTER_NODES: '', REDIS_REPLICA_URLS: replica.url, RESULT_CACHE_ENTRIES: '0', REDIS_REPLICA_WAIT_MS: '50' },
  });
  await waitFor('the index', async () => (await s.req('/readyz')).status === 200);
  await replica.kill();
  // the write waits at most REDIS_REPLICA_WAIT_MS for a replica that is gone
  const svc = await registerProduction(s, { endpoint: 'https://fallback.example.com', capability: 'replica-fallback' });
  const r = await s.req('/services?capability=replica-fallback');
  t.equal(r.status, 200, 'no 503 while the replica is away');
  t.same(await ids(r), [svc.id], 'the primary answered');
});
