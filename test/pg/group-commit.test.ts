// Group commit (issue 22): concurrent registrations, patches and deletions share one
// statement per kind, each resolved only after it committed; a write that violates a
// constraint fails alone and its neighbours of the same batch commit; a patch whose service
// moved on and a deletion of a missing id get their own answer without failing the
// statement (real PostgreSQL, a fresh database).
import t from 'tap';
import { PRODUCTION } from '../../src/hot/domain/keys.js';
import { parseServiceCreate } from '../../src/hot/domain/validation.js';
import { GroupCommitter } from '../../src/hot/writes/group-commit.js';
import { loadIndexStates, loadService } from '../../src/hot/registry/state.js';
import { addReplacement } from '../../src/hot/registry/write-functions.js';
import { patchService, preparePatch } from '../../src/hot/writes/patches.js';
import { createService } from '../../src/hot/writes/register.js';
import { freshPool } from '../helpers/database.js';

const input = (i: number) => parseServiceCreate({ endpoint: `https://g${i}.example.com/`, capabilities: ['group', `n${i}`], properties: { i: String(i) } });

t.test('concurrent registrations: one statement; a constraint violation fails that write alone', async (t) => {
  const { pool } = await freshPool(t, 4);
  // a window long enough that every write below is in the batch, whatever the machine's load
  // the index apply of each batch (the projector's, in the server): recorded, and checked
  // to come before each write is answered
  const applied: string[][] = [];
  const gc = new GroupCommitter(pool, { windowMs: 200, maxBatch: 100, concurrency: 2 }, async (done) => {
    await new Promise(setImmediate); // an apply takes time: a write answered before it ends is caught
    applied.push(done.map((c) => c.id));
  });
  const answered = <C extends { id: string }>(p: Promise<C>) => p.then((c) => (applied.some((b) => b.includes(c.id)) ? c : Promise.reject(new Error(`${c.id} answered before it was applied`))));

  const ok = await Promise.all(Array.from({ length: 8 }, (_, i) => answered(gc.create({ ns: PRODUCTION, input: input(i) }))));
  t.same(gc.stats, { batches: 1, writes: 8, isolated: 0 }, 'eight concurrent writes, one statement');
  t.same(applied, [ok.map((c) => c.id)], 'applied to the index as one batch, before any was answered');
  const states = await loadIndexStates(pool, ok.map((c) => c.id));
  for (const c of ok) t.same(states.get(c.id)?.record, c.state.record, `${c.id}: the state returned is the state committed`);

  const taken = await createService(pool, PRODUCTION, input(100));
  const results = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => answered(gc.create({ ns: PRODUCTION, input: input(200 + i), id: i === 3 ? taken.id : undefined }))));
  t.equal(results[3]!.status, 'rejected', 'the write reusing an existing id fails');
  t.equal(((results[3] as PromiseRejectedResult).reason as { code?: string }).code, '23505', 'with the unique violation');
  t.equal(results.filter((r) => r.status === 'fulfilled').length, 7, 'its seven neighbours commit');
  t.equal(gc.stats.isolated, 1, 'the batch was retried write by write');
  t.equal(applied.length, 2, 'the seven that committed alone applied together');
  t.same(applied[1]!.sort(), results.flatMap((r) => (r.status === 'fulfilled' ? [r.value.id] : [])).sort(), 'and only they (the failed write is not applied)');
  const n = await pool.query<{ n: string }>("SELECT count(*) AS n FROM services WHERE endpoint LIKE 'https://g2__.example.com/'");
  t.equal(Number(n.rows[0]!.n), 7, 'seven rows of that batch exist, once each');
  const ev = await pool.query<{ n: string }>("SELECT count(*) AS n FROM change_events WHERE data LIKE '%g2__.example.com%'");
  t.equal(Number(ev.rows[0]!.n), 7, 'and seven change events');
  const ob = await pool.query<{ n: string }>('SELECT count(*) AS n FROM outbox');
  t.equal(Number(ob.rows[0]!.n), 8 + 1 + 7, 'one outbox row per committed write (none applied here)');
  const first = await pool.query<{ endpoint: string }>('SELECT endpoint FROM services WHERE id = $1', [taken.id]);
  t.equal(first.rows[0]!.endpoint, 'https://g100.example.com/', 'the existing service is untouched');
});

t.test('a full batch goes at once; the rest waits for a connection', async (t) => {
  const { pool } = await freshPool(t, 2);
  const gc = new GroupCommitter(pool, { windowMs: 200, maxBatch: 5, concurrency: 1 });
  const all = await Promise.all(Array.from({ length: 12 }, (_, i) => gc.create({ ns: PRODUCTION, input: input(i) })));
  t.equal(new Set(all.map((c) => c.id)).size, 12, 'every write committed');
  t.equal(gc.stats.writes, 12);
  t.ok(gc.stats.batches >= 3, `at most 5 a statement: ${gc.stats.batches} statements`);
  const n = await pool.query<{ n: string }>('SELECT count(*) AS n FROM services');
  t.equal(Number(n.rows[0]!.n), 12);
});

t.test('concurrent patches: one statement; a service that moved on answers alone; a violation fails alone', async (t) => {
  const { pool } = await freshPool(t, 4);
  const applied: string[][] = [];
  const gc = new GroupCommitter(pool, { windowMs: 200, maxBatch: 100, concurrency: 2 }, async (done) => {
    applied.push(done.map((c) => c.id));
  });
  const made = await Promise.all(Array.from({ length: 6 }, (_, i) => createService(pool, PRODUCTION, input(i))));
  const cur = await Promise.all(made.map((c) => loadService(pool, PRODUCTION, c.id)));
  // service 2 moves on after its state was read: its patch must find no row and say so
  await patchService(pool, PRODUCTION, made[2]!.id, { properties: { moved: 'yes' } });
  const patches = cur.map((s, i) =>
    // service 4's patch breaks the ttl CHECK (the route's validation would have refused it)
    preparePatch(s!, i === 4 ? { ttl: 1 } : { properties: { round: String(i) }, capabilities: ['group', 'patched'] }, 1_700_000_000, null),
  );
  const r = await Promise.allSettled(patches.map((p) => gc.patch(p)));
  t.equal(r[2]!.status === 'fulfilled' && r[2]!.value, null, 'the service that moved on: null (read it again)');
  t.equal(r[4]!.status, 'rejected', 'the violating patch fails');
  t.equal(((r[4] as PromiseRejectedResult).reason as { code?: string }).code, '23514', 'with the check violation');
  const ok = [0, 1, 3, 5];
  for (const i of ok) t.ok(r[i]!.status === 'fulfilled' && r[i]!.value, `patch ${i} committed`);
  t.equal(gc.stats.isolated, 1, 'the batch was retried write by write (the violation)');
  t.same(applied.flat().sort(), ok.map((i) => made[i]!.id).sort(), 'only the committed patches were applied');
  const states = await loadIndexStates(pool, made.map((c) => c.id));
  for (const i of ok) {
    const c = (r[i] as PromiseFulfilledResult<Awaited<ReturnType<typeof gc.patch>>>).value!;
    t.same(states.get(made[i]!.id)?.record, c.state.record, `patch ${i}: the state returned is the state committed`);
    t.same(states.get(made[i]!.id)?.record?.capabilities, ['group', 'patched'], `patch ${i}: capabilities replaced`);
  }
  t.same(states.get(made[2]!.id)?.record?.properties, { moved: 'yes' }, 'the moved service keeps its own write');
  t.equal(states.get(made[4]!.id)?.record?.health, undefined, 'the violating patch wrote nothing');
  const ev = await pool.query<{ n: string }>("SELECT count(*) AS n FROM change_events WHERE type = 'service.updated'");
  t.equal(Number(ev.rows[0]!.n), 1 + ok.length, 'one change event per committed patch');
});

t.test('patches of one service from many callers: never in one statement, every one applied in turn', async (t) => {
  const { pool } = await freshPool(t, 4);
  const gc = new GroupCommitter(pool, { windowMs: 20, maxBatch: 100, concurrency: 2 });
  const s = await createService(pool, PRODUCTION, input(1));
  const other = await createService(pool, PRODUCTION, input(2));
  const done = await Promise.all([
    ...Array.from({ length: 6 }, (_, i) => patchService(pool, PRODUCTION, s.id, { properties: { [`k${i}`]: 'v' } }, undefined, null, (p) => gc.patch(p))),
    patchService(pool, PRODUCTION, other.id, { locked: true }, undefined, null, (p) => gc.patch(p)),
  ]);
  t.equal(new Set(done.map((c) => c.state.version)).size, 7, 'seven commits, seven versions');
  t.equal(gc.stats.isolated, 0, 'no statement failed (a statement may not update one row twice)');
  const ev = await pool.query<{ n: string }>('SELECT count(*) AS n FROM change_events WHERE service_id = $1 AND type = $2', [s.id, 'service.updated']);
  t.equal(Number(ev.rows[0]!.n), 6, 'six change events of the service');
  const last = done.slice(0, 6).reduce((a, b) => (a.state.version > b.state.version ? a : b));
  const st = await loadIndexStates(pool, [s.id]);
  t.same(st.get(s.id)?.record, last.state.record, 'the newest commit is the state in PostgreSQL');
});

t.test('concurrent deletions: one statement; a missing id answers 404 alone', async (t) => {
  const { pool } = await freshPool(t, 4);
  const applied: { id: string; gone: boolean }[][] = [];
  const gc = new GroupCommitter(pool, { windowMs: 200, maxBatch: 100, concurrency: 2 }, async (done) => {
    applied.push(done.map((c) => ({ id: c.id, gone: c.state.record === null })));
  });
  const made = await Promise.all(Array.from({ length: 5 }, (_, i) => createService(pool, PRODUCTION, input(i))));
  // service 0 lists service 1 as a candidate: deleting 1 re-indexes 0
  await addReplacement(pool, PRODUCTION, made[0]!.id, made[1]!.id);
  const ids = [made[1]!.id, 'no-such-service', made[3]!.id, made[4]!.id];
  const r = await Promise.all(ids.map((id) => gc.delete({ ns: PRODUCTION, id })));
  t.equal(r[1], null, 'the missing id: null (404)');
  t.same(gc.stats, { batches: 1, writes: 4, isolated: 0 }, 'one statement, not retried write by write');
  t.same(r[0]!.map((w) => [w.id, w.state.record === null]), [[made[1]!.id, true], [made[0]!.id, false]], 'a deletion returns its tombstone and the service that listed it');
  t.same(r[0]![1]!.state.record?.replacementSeqs, [], 'which lists it no more');
  t.same(applied, [[{ id: made[1]!.id, gone: true }, { id: made[0]!.id, gone: false }, { id: made[3]!.id, gone: true }, { id: made[4]!.id, gone: true }]], 'applied as one batch');
  const left = await pool.query<{ id: string }>('SELECT id FROM services ORDER BY id');
  t.same(left.rows.map((x) => x.id).sort(), [made[0]!.id, made[2]!.id].sort(), 'exactly the three are gone');
  const ev = await pool.query<{ n: string }>("SELECT count(*) AS n FROM change_events WHERE type = 'service.deleted'");
  t.equal(Number(ev.rows[0]!.n), 3, 'three deletion events');
  // the same id twice: never in one statement; the second finds it gone
  const again = await Promise.all([gc.delete({ ns: PRODUCTION, id: made[2]!.id }), gc.delete({ ns: PRODUCTION, id: made[2]!.id })]);
  t.same(again.map((x) => x === null), [false, true], 'one deletes it, the other answers 404');
  t.equal(gc.stats.isolated, 0, 'without a failed statement');
});
