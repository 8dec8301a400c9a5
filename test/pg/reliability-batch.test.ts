// No lost or half-written batches (issue 22): batches of registrations and single
// registrations (group-committed) posted concurrently to the built server running as a
// child process, SIGKILL partway, restart. Every acknowledged batch is in PostgreSQL whole,
// with the ids it was answered with; every batch is either all there or not at all (one
// statement); every acknowledged single registration is there once; and the index equals
// PostgreSQL once the outbox has drained, with no manual step.
import t from 'tap';
import { startKillable } from '../helpers/killable.js';
import { ADMIN_KEY } from '../helpers/env.js';

const BATCH = 100;
const BATCH_WRITERS = 3;
const SINGLE_WRITERS = 16;
const KILL_AFTER = 8; // acknowledged batches before the SIGKILL

// a guard against hangs, not a speed assertion (see reliability-lost-writes.test.ts)
t.setTimeout(300_000);

t.test('SIGKILL mid-batch: acknowledged batches whole, no batch half-written, the index equal to PostgreSQL', async (t) => {
  const srv = await startKillable(t, { WORKERS: '1' });
  const pgc = srv.pg;

  const post = (path: string, body: unknown) =>
    fetch(srv.url + path, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const ackedBatches = new Map<number, string[]>(); // batch -> ids in order
  const ackedSingles = new Map<number, string>();
  let nextBatch = 0;
  let nextSingle = 0;
  let killed = false;
  const batchWriter = async () => {
    while (!killed) {
      const b = nextBatch++;
      try {
        const r = await post('/admin/api/services/batch', {
          services: Array.from({ length: BATCH }, (_, i) => ({ endpoint: `https://b${b}-${i}.kill.example.com/`, capabilities: ['killbatch'], properties: { batch: String(b) } })),
        });
        const text = await r.text();
        if (r.status === 201) ackedBatches.set(b, (JSON.parse(text) as { services: { id: string }[] }).services.map((s) => s.id));
      } catch {
        /* cut off by the kill: not acknowledged */
      }
      if (!killed && ackedBatches.size >= KILL_AFTER) {
        killed = true;
        srv.kill();
      }
    }
  };
  const singleWriter = async () => {
    while (!killed) {
      const i = nextSingle++;
      try {
        const r = await post('/admin/api/services', { endpoint: `https://s${i}.kill.example.com/`, capabilities: ['killbatch'] });
        const text = await r.text();
        if (r.status === 201) ackedSingles.set(i, (JSON.parse(text) as { id: string }).id);
      } catch {
        /* cut off */
      }
    }
  };
  await Promise.all([...Array.from({ length: BATCH_WRITERS }, batchWriter), ...Array.from({ length: SINGLE_WRITERS }, singleWriter)]);
  t.equal(await srv.server.exited, 'SIGKILL', 'the server was killed mid-stream');
  t.ok(ackedBatches.size >= KILL_AFTER, `${ackedBatches.size} batches and ${ackedSingles.size} single writes acknowledged before the kill`);

  await srv.restart();

  const rows = (await pgc.query<{ id: string; endpoint: string }>(`SELECT id, endpoint FROM services WHERE ns = 'production'`)).rows;
  const byBatch = new Map<number, Map<number, string>>();
  const singles = new Map<number, string[]>();
  for (const r of rows) {
    const m = /^https:\/\/b(\d+)-(\d+)\.kill/.exec(r.endpoint);
    if (m) {
      const b = Number(m[1]);
      if (!byBatch.has(b)) byBatch.set(b, new Map());
      byBatch.get(b)!.set(Number(m[2]), r.id);
    } else {
      const s = Number(/^https:\/\/s(\d+)\.kill/.exec(r.endpoint)![1]);
      singles.set(s, [...(singles.get(s) ?? []), r.id]);
    }
  }
  t.same([...byBatch].filter(([, m]) => m.size !== BATCH).map(([b, m]) => `${b}: ${m.size}`), [], `no batch half-written (${byBatch.size} batches in PostgreSQL)`);
  t.same(
    [...ackedBatches].filter(([b, ids]) => ids.some((id, i) => byBatch.get(b)?.get(i) !== id)).map(([b]) => b),
    [],
    'every acknowledged batch is there, each service with the id it was answered with, in order',
  );
  t.same([...ackedSingles].filter(([i, id]) => singles.get(i)?.[0] !== id).map(([i]) => i), [], 'every acknowledged single write is there with its id');
  t.same([...singles].filter(([, ids]) => ids.length > 1), [], 'no single write stored twice');

  const inPg = new Set(rows.map((r) => r.id));
  const found = new Set((await srv.indexSettles('killbatch', (f) => f.size === inPg.size && [...inPg].every((id) => f.has(id)))).keys());
  t.same([...ackedBatches.values()].flat().filter((id) => !found.has(id)), [], 'the search finds every service of every acknowledged batch');
  t.equal(found.size, inPg.size, 'and nothing PostgreSQL does not have');
  await srv.outboxDrained();
  t.pass('the outbox is empty: every committed write reached the index');
});
