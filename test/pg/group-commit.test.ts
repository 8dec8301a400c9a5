// Group commit (issue 22): concurrent registrations share one statement, each resolved
// only after it committed; a write that violates a constraint fails alone and its
// neighbours of the same batch commit (real PostgreSQL, a fresh database).
import t from 'tap';
import { PRODUCTION } from '../../src/hot/domain/keys.js';
import { parseServiceCreate } from '../../src/hot/domain/validation.js';
import { GroupCommitter } from '../../src/hot/store/group-commit.js';
import { createPool } from '../../src/hot/store/pool.js';
import { loadIndexStates } from '../../src/hot/store/services.js';
import { createService } from '../../src/hot/store/writes.js';
import { freshDatabase } from '../helpers/server.js';

const input = (i: number) => parseServiceCreate({ endpoint: `https://g${i}.example.com/`, capabilities: ['group', `n${i}`], properties: { i: String(i) } });

t.test('concurrent registrations: one statement; a constraint violation fails that write alone', async (t) => {
  const db = await freshDatabase();
  const pool = createPool(db.url, 4);
  t.teardown(async () => {
    await pool.end();
    await db.drop();
  });
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
  const db = await freshDatabase();
  const pool = createPool(db.url, 2);
  t.teardown(async () => {
    await pool.end();
    await db.drop();
  });
  const gc = new GroupCommitter(pool, { windowMs: 200, maxBatch: 5, concurrency: 1 });
  const all = await Promise.all(Array.from({ length: 12 }, (_, i) => gc.create({ ns: PRODUCTION, input: input(i) })));
  t.equal(new Set(all.map((c) => c.id)).size, 12, 'every write committed');
  t.equal(gc.stats.writes, 12);
  t.ok(gc.stats.batches >= 3, `at most 5 a statement: ${gc.stats.batches} statements`);
  const n = await pool.query<{ n: string }>('SELECT count(*) AS n FROM services');
  t.equal(Number(n.rows[0]!.n), 12);
});
