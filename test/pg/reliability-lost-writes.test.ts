// No lost writes: a few thousand concurrent registrations against the built server running
// as a child process, SIGKILL partway, restart. Every write that was acknowledged (201) is
// in PostgreSQL with the id it was given and in the index (the search finds it), and no
// registration was stored twice (each carries a unique endpoint marker). Writes that
// committed but whose answer was lost to the kill are in the index too: the index equals
// PostgreSQL, and the outbox drains, with no manual step.
import t from 'tap';
import { startKillable } from '../helpers/killable.js';
import { ADMIN_KEY } from '../helpers/env.js';

const TOTAL = 3000;
const CONCURRENCY = 48;
const KILL_AFTER = 1200; // acknowledged writes before the SIGKILL

// a guard against hangs, not a speed assertion: thousands of writes, a kill, a restart and a
// full comparison outlast package.json's per-file limit on a loaded machine
t.setTimeout(300_000);

t.test('every acknowledged write survives a SIGKILL, exactly once, in PostgreSQL and the index', async (t) => {
  const srv = await startKillable(t, { WORKERS: '2' });
  const pgc = srv.pg;

  const acked = new Map<number, string>(); // marker -> id
  const failed: number[] = [];
  let next = 0;
  let killed = false;
  const one = async (i: number) => {
    try {
      const r = await fetch(srv.url + '/admin/api/services', {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ endpoint: `https://w${i}.lost.example.com/`, capabilities: ['lostwrites'], properties: { marker: String(i) } }),
      });
      const body = await r.text();
      if (r.status === 201) acked.set(i, (JSON.parse(body) as { id: string }).id);
      else failed.push(i);
    } catch {
      failed.push(i); // the connection died with the server: not acknowledged
    }
    if (!killed && acked.size >= KILL_AFTER) {
      killed = true;
      srv.kill();
    }
  };
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (!killed && next < TOTAL) await one(next++);
    }),
  );
  if (!killed) {
    // too few writes acknowledged for the kill: say so now instead of waiting for an exit
    t.fail(`only ${acked.size} of ${TOTAL} writes acknowledged (${failed.length} refused or cut off): the kill never came`);
    srv.kill();
  }
  t.equal(await srv.server.exited, 'SIGKILL', 'the server was killed mid-stream');
  t.ok(acked.size >= KILL_AFTER, `${acked.size} writes acknowledged before the kill, ${failed.length} cut off`);

  await srv.restart();

  // PostgreSQL: every acknowledged write with its id, nothing twice
  const rows = (await pgc.query<{ id: string; endpoint: string }>(`SELECT id, endpoint FROM services WHERE ns = 'production'`)).rows;
  const byMarker = new Map<number, string[]>();
  for (const r of rows) {
    const m = Number(/^https:\/\/w(\d+)\.lost/.exec(r.endpoint)![1]);
    byMarker.set(m, [...(byMarker.get(m) ?? []), r.id]);
  }
  const missing = [...acked].filter(([m, id]) => byMarker.get(m)?.[0] !== id);
  t.same(missing, [], `every acknowledged write is in PostgreSQL with its id (${rows.length} rows for ${acked.size} acknowledgements)`);
  t.same([...byMarker].filter(([, ids]) => ids.length > 1), [], 'no registration stored twice');

  // the index: equal to PostgreSQL once the outbox has drained (no manual step)
  const inPg = new Set(rows.map((r) => r.id));
  const found = new Set((await srv.indexSettles('lostwrites', (f) => f.size === inPg.size && [...inPg].every((id) => f.has(id)))).keys());
  t.same([...acked.values()].filter((id) => !found.has(id)), [], 'the search finds every acknowledged write');
  t.equal(found.size, inPg.size, 'and nothing PostgreSQL does not have');
  await srv.outboxDrained();
  t.pass('the outbox is empty: every committed write reached the index');
});
