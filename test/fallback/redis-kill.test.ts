// The drill of issue 45 with real processes: the built server in a process of its own, a
// redis-server of its own killed with SIGKILL under reads and writes and started again empty
// (as scripts/services.sh starts it: no persistence). Every read answers 200, and holds every
// write acknowledged before it was sent (the fallback reads PostgreSQL, and a write that could
// not reach the index drops the thread's cached pages); writes answer 201 or 503; /readyz
// stays 200 throughout; the index is rebuilt with no restart of the server and holds every
// acknowledged write; one log line per change of where reads come from.
import t from 'tap';
import { startKillable } from '../helpers/killable.js';
import { startRedis } from '../helpers/redis-server.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { ADMIN_KEY } from '../helpers/env.js';

type Phase = 'before' | 'outage' | 'after';

interface Read {
  phase: Phase;
  status: number;
  /** ids found (null: not a 200) */
  found: Set<string> | null;
  /** writes acknowledged before the read was sent */
  acked: string[];
}

t.test('Redis killed under reads and writes: reads go on from PostgreSQL, the index comes back by itself', async (t) => {
  const redis = await startRedis();
  t.teardown(() => redis.kill());
  const s = await startKillable(t, { REDIS_URL: redis.url, WORKERS: '1', OUTBOX_SWEEP_MS: '200', TIERS: 'free=1000000' });
  const url = s.url;
  const admin = (body: unknown) => fetch(url + '/admin/api/services', { method: 'POST', headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });

  const acked: string[] = [];
  for (let i = 0; i < 20; i++) {
    const r = await admin({ endpoint: `https://seed${i}.example.com`, capability: 'drill' });
    t.equal(r.status, 201);
    acked.push(((await r.json()) as { id: string }).id);
  }
  const sb = (await (await fetch(url + '/sandboxes', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"drill"}' })).json()) as { uuid: string; apiKey: string };
  const sbRes = await fetch(`${url}/sandbox/${sb.uuid}/services`, { method: 'POST', headers: { authorization: `Bearer ${sb.apiKey}`, 'content-type': 'application/json' }, body: '{"endpoint":"https://sb.example.com","capability":"drill"}' });
  t.equal(sbRes.status, 201);
  const sbId = ((await sbRes.json()) as { id: string }).id;

  let phase: Phase = 'before';
  let running = true;
  const reads: Read[] = [];
  const writes: { phase: Phase; status: number; retryAfter: string | null }[] = [];
  const readiness: { phase: Phase; status: number; reads: string }[] = [];
  const count = (p: Phase) => reads.filter((r) => r.phase === p).length;

  const searchLoop = async (keyed: boolean) => {
    while (running) {
      const at = phase;
      const before = [...acked];
      const r = await fetch(url + '/services?capability=drill&limit=1000', keyed ? { headers: { authorization: `Bearer ${sb.apiKey}` } } : {});
      const found = r.status === 200 ? new Set(((await r.json()) as { id: string }[]).map((x) => x.id)) : (await r.text(), null);
      reads.push({ phase: at, status: r.status, found, acked: keyed ? [sbId] : before });
    }
  };
  const oneLoop = async () => {
    for (let i = 0; running; i++) {
      const at = phase;
      const id = acked[i % acked.length]!;
      const r = await fetch(`${url}/services/${id}`);
      const found = r.status === 200 ? new Set([((await r.json()) as { id: string }).id]) : (await r.text(), null);
      reads.push({ phase: at, status: r.status, found, acked: [id] });
    }
  };
  const writeLoop = async () => {
    for (let i = 0; running; i++) {
      const at = phase;
      const r = await admin({ endpoint: `https://w${i}.example.com`, capability: 'drill' });
      writes.push({ phase: at, status: r.status, retryAfter: r.headers.get('retry-after') });
      if (r.status === 201) acked.push(((await r.json()) as { id: string }).id);
      else await r.text();
    }
  };
  const readyLoop = async () => {
    while (running) {
      const at = phase;
      const r = await fetch(url + '/readyz');
      readiness.push({ phase: at, status: r.status, reads: ((await r.json()) as { reads: string }).reads });
      await sleep(20);
    }
  };
  const loops = [searchLoop(false), searchLoop(false), searchLoop(true), oneLoop(), writeLoop(), readyLoop()];

  await waitFor('reads before the kill', async () => count('before') >= 30);
  phase = 'outage';
  const logsBefore = s.server.logs.length; // (the start-up rebuild was a transition too)
  await redis.kill(); // SIGKILL
  // the outage lasts until enough of it was seen (a count, not a time: the machine is shared)
  await waitFor('reads and writes during the outage', async () => count('outage') >= 300 && writes.filter((w) => w.phase === 'outage' && w.status === 201).length >= 10, 60_000, 50);
  phase = 'after';
  await redis.restart(); // empty, on the same port: the server rebuilds the index
  await waitFor('reads from the index again', async () => readiness.some((r) => r.phase === 'after' && r.reads === 'index'), 60_000, 50);
  await waitFor('reads after the recovery', async () => count('after') >= 30 && readiness.filter((r) => r.phase === 'after' && r.reads === 'index').length >= 3);
  running = false;
  await Promise.all(loops);

  for (const p of ['before', 'outage', 'after'] as const) {
    const mine = reads.filter((r) => r.phase === p);
    const bad = mine.filter((r) => r.status !== 200);
    t.equal(bad.length, 0, `${p}: every read of ${mine.length} answered 200 (${bad.map((r) => r.status).join(' ')})`);
    const stale = mine.filter((r) => r.found && r.acked.some((id) => !r.found!.has(id)));
    t.equal(stale.length, 0, `${p}: every read holds the writes acknowledged before it was sent`);
  }
  t.ok(writes.every((w) => w.status === 201 || (w.status === 503 && w.retryAfter)), `writes answer 201 or 503 with Retry-After (${[...new Set(writes.map((w) => w.status))].join(', ')})`);
  t.ok(writes.some((w) => w.phase === 'outage' && w.status === 201), 'writes were acknowledged during the outage');
  t.same(readiness.filter((r) => r.status !== 200), [], '/readyz stayed 200 throughout');
  t.ok(readiness.some((r) => r.phase === 'outage' && r.reads === 'postgres'), '... and said reads came from PostgreSQL');

  // afterwards: the index (rebuilt, no server restart) holds every acknowledged write
  const index = await s.search('drill');
  t.same(acked.filter((id) => !index.has(id)), [], `the index holds all ${acked.length} acknowledged writes`);
  const lines = s.server.logs.slice(logsBefore).filter((l) => l.includes('reads answer from'));
  t.equal(lines.filter((l) => l.includes('from PostgreSQL')).length, 1, 'one log line when reads turned to PostgreSQL');
  t.equal(lines.filter((l) => l.includes('from the index again')).length, 1, 'one when they came back');
});
