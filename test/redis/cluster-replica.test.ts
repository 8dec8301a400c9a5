// Read scaling in cluster mode (REDIS_CLUSTER_REPLICA_READS): a real one-shard cluster (a
// primary holding every slot and a replica of it, two redis-server processes with
// cluster-enabled) — the shape where all of production's keys share one primary. Searches
// and GET /services/{id} go to the replica as EVALSHA_RO, so they keep being answered
// while the primary process is stopped (SIGSTOP: it answers nothing, reads included;
// CLIENT PAUSE ALL cannot be lifted early, its UNPAUSE waits too); a write is acknowledged
// only after the primary's replica has it (WAIT on the primary's connection), so the
// writer reads it back from the replica at once.
import t from 'tap';
import { Cluster, Redis } from 'ioredis';
import { registerProduction, serve } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { freePort } from '../helpers/free-port.js';
import { startRedis } from '../helpers/redis-server.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ids } from '../helpers/checks.js';

t.test('cluster mode: searches are served by the replica while the primary is stopped', async (t) => {
  // A directory of its own (a node that loads another's dump.rdb claims its keys' slots), and
  // an explicit cluster bus port: the default, port + 10000, was never checked to be free (one
  // CI run lost its node to that). startRedis retries on fresh ports if a node dies on start.
  const dir = mkdtempSync(join(tmpdir(), 'registry-cluster-replica-'));
  const bus: Record<string, number> = {};
  const node = (role: string) => async () => ['--cluster-enabled', 'yes', '--cluster-port', String((bus[role] = await freePort())), '--cluster-node-timeout', '60000', '--dir', dir, '--cluster-config-file', `${role}-nodes.conf`, '--dbfilename', `${role}.rdb`];
  const primary = await startRedis(node('p'));
  const replica = await startRedis(node('r'));
  const admin = new Redis(primary.url, { maxRetriesPerRequest: 1 });
  const probe = new Redis(primary.url, { maxRetriesPerRequest: 1 });
  const rep = new Redis(replica.url, { maxRetriesPerRequest: 1 });
  let stopped = 0;
  t.teardown(async () => {
    for (const c of [admin, probe, rep]) c.disconnect();
    await replica.kill();
    await primary.kill();
    rmSync(dir, { recursive: true, force: true });
  });
  await admin.cluster('ADDSLOTSRANGE', 0, 16383);
  await rep.call('CLUSTER', 'MEET', '127.0.0.1', String(primary.port), String(bus.p)); // the bus port too: MEET assumes port + 10000 otherwise
  const primaryId = String(await admin.cluster('MYID'));
  await waitFor('the replica to know the primary', async () => String(await rep.cluster('NODES')).includes(primaryId));
  await rep.cluster('REPLICATE', primaryId);
  await waitFor('the replica in sync', async () => /master_link_status:up/.test(await rep.info('replication')), 20_000);
  await waitFor('cluster_state:ok on both', async () => {
    const [a, b] = await Promise.all([admin.cluster('INFO'), rep.cluster('INFO')]);
    return /cluster_state:ok/.test(String(a)) && /cluster_state:ok/.test(String(b));
  }, 20_000);
  // the server's cluster client learns the replicas from CLUSTER SLOTS (then every 5 s)
  await waitFor('the primary to list its replica in CLUSTER SLOTS', async () => ((await admin.cluster('SLOTS')) as unknown[][]).every((r) => r.length >= 4), 20_000);

  const server = await serve(t, { env: { REDIS_CLUSTER_NODES: `127.0.0.1:${primary.port}`, REDIS_CLUSTER_REPLICA_READS: 'true', RESULT_CACHE_ENTRIES: '0' } });
  t.teardown(() => {
    if (stopped) process.kill(stopped, 'SIGCONT'); // before the server closes
  });
  t.ok(server.app.redis instanceof Cluster, 'the server runs ioredis in cluster mode');
  await waitFor('the index', async () => (await server.req('/readyz')).status === 200);
  const readsOnReplica = async () => Number(/cmdstat_evalsha_ro:calls=(\d+)/.exec(await rep.info('commandstats'))?.[1] ?? 0) + Number(/cmdstat_eval_ro:calls=(\d+)/.exec(await rep.info('commandstats'))?.[1] ?? 0);
  const before = await readsOnReplica();

  const svc = await registerProduction(server, { endpoint: 'https://cluster-replica.example.com', capability: 'cluster-replica-read', properties: { zone: 'b' } });
  // read-your-write from the replica: the write's 2xx came after WAIT saw the replica have it
  const first = await server.req('/services?capability=cluster-replica-read');
  t.equal(first.status, 200);
  t.same(await ids(first), [svc.id], 'the replica answers the fresh write');
  t.ok((await readsOnReplica()) > before, 'the replica ran read-only scripts (EVALSHA_RO / EVAL_RO)');
  t.match(await admin.info('commandstats'), /cmdstat_wait:calls=[1-9]/, 'the write waited (WAIT) on its primary for the replica');

  const pid = Number(/process_id:(\d+)/.exec(await admin.info('server'))![1]);
  process.kill(pid, 'SIGSTOP');
  stopped = pid;
  // any command on the primary now waits for SIGCONT: it shows the primary is stopped
  let probeDone = false;
  const probeRead = probe.get('anything').then(() => (probeDone = true));
  const during = await server.req('/services?capability=cluster-replica-read&property=zone:b');
  t.equal(during.status, 200, 'a search with a set not loaded before answers while the primary is stopped');
  t.same(await ids(during), [svc.id]);
  const one = await server.req(`/services/${svc.id}`);
  t.equal(one.status, 200, 'GET /services/{id} answers while the primary is stopped');
  t.equal(((await one.json()) as { id: string }).id, svc.id);
  t.notOk(probeDone, 'the primary was still stopped when those reads were answered');

  process.kill(pid, 'SIGCONT');
  stopped = 0;
  await probeRead;
  t.ok(probeDone, 'the held command went through once the primary ran again');
});
