// Services per sandbox (issue 41, migration 0010, writes/register.ts commitServices): the
// count kept by triggers equals the rows through every writer (registrations, deletions
// alone and grouped, imports, TRUNCATE), the statement writes what the quota leaves room
// for (each in turn, or a whole batch or nothing), concurrent statements never pass it
// together, and the migration counts the services already there (real PostgreSQL).
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { PRODUCTION } from '../../src/hot/domain/keys.js';
import { parseServiceCreate } from '../../src/hot/domain/validation.js';
import { bulkUpsert } from '../../src/hot/writes/bulk.js';
import { GroupCommitter } from '../../src/hot/writes/group-commit.js';
import { migrate } from '../../src/hot/migrate.js';
import type { Pool } from '../../src/hot/pg/pool.js';
import { insertSandbox, setTier } from '../../src/hot/sandboxes/store.js';
import { deleteService, deleteServices } from '../../src/hot/registry/write-functions.js';
import { commitServices, createServices, isRefusal, type Created } from '../../src/hot/writes/register.js';
import { freshPool } from '../helpers/database.js';

const TIERS = { free: 5, pro: 8 };
const input = (i: number) => parseServiceCreate({ endpoint: `https://q${i}.example.com/`, capabilities: ['quota', `n${i}`], properties: { i: String(i) } });
const items = (ns: string, from: number, n: number) => Array.from({ length: n }, (_, i) => ({ ns, input: input(from + i) }));

async function sandbox(pool: Pool, tier = 'free'): Promise<string> {
  return (await insertSandbox(pool, 'Quota', 'quota', randomBytes(32), tier, null)).uuid;
}

/** [the counter, the rows] of a sandbox */
async function counted(pool: Pool, uuid: string): Promise<[number, number]> {
  const r = await pool.query<{ c: number; n: string }>('SELECT service_count AS c, (SELECT count(*) FROM services WHERE ns = $1::text) AS n FROM sandboxes WHERE uuid = $1::uuid', [uuid]);
  return [r.rows[0]!.c, Number(r.rows[0]!.n)];
}

const written = (out: Created[]) => out.filter((c) => !isRefusal(c)).length;

t.test('the count follows every writer', async (t) => {
  const { pool } = await freshPool(t, 4);
  const a = await sandbox(pool);
  const b = await sandbox(pool);
  const made = await createServices(pool, [...items(a, 0, 3), ...items(b, 10, 2), ...items(PRODUCTION, 20, 2)]);
  t.same(await counted(pool, a), [3, 3], 'a batch statement: each sandbox counted');
  t.same(await counted(pool, b), [2, 2]);
  await deleteService(pool, a, made[0]!.id);
  t.same(await counted(pool, a), [2, 2], 'a deletion');
  t.same(await deleteServices(pool, [{ ns: a, id: made[1]!.id }, { ns: b, id: made[3]!.id }, { ns: PRODUCTION, id: made[5]!.id }, { ns: a, id: 'missing' }]).then((r) => r.map((x) => x !== null)), [true, true, true, false]);
  t.same([await counted(pool, a), await counted(pool, b)], [[1, 1], [1, 1]], 'grouped deletions across sandboxes');
  const imported = await bulkUpsert(pool, a, [
    { id: 'imp-1', input: input(30) },
    { id: 'imp-2', input: input(31) },
  ]);
  t.equal(imported.created, 2);
  await bulkUpsert(pool, a, [{ id: 'imp-1', input: input(32) }]);
  t.same(await counted(pool, a), [3, 3], 'an import: created rows counted, updated ones not twice');
  await t.rejects(pool.query("UPDATE services SET ns = 'production' WHERE id = 'imp-1'"), /cannot change its namespace/, 'no writer can move a service out of its count');
  await pool.query('TRUNCATE services CASCADE');
  t.same(await counted(pool, a), [0, 0], 'TRUNCATE empties the counts');
});

t.test('registrations committed together: each in turn while there is room', async (t) => {
  const { pool } = await freshPool(t, 2);
  const a = await sandbox(pool);
  const b = await sandbox(pool, 'pro');
  await createServices(pool, items(a, 0, 2));
  const out = await commitServices(pool, [...items(a, 10, 2), ...items(b, 20, 1), ...items(a, 12, 2), ...items(PRODUCTION, 30, 1), ...items('0b6a4f2e-7c1d-4e0a-9d3b-2f8e6c5a1b90', 40, 1)], { tiers: TIERS, all: false });
  t.same(
    out.map((c) => (isRefusal(c) ? 'refused' : 'written')),
    ['written', 'written', 'written', 'written', 'refused', 'written', 'written'],
    'free (5): 2 stored, 3 more fit, the fourth of the statement is refused; the other sandbox, production and a namespace without a sandbox row are not held back',
  );
  t.same((out[4] as { refused: unknown }).refused, { quota: 5, used: 2, asked: 4, written: 3 });
  t.same(await counted(pool, a), [5, 5]);
  const none = await pool.query("SELECT 1 FROM services WHERE endpoint = 'https://q13.example.com/' UNION ALL SELECT 1 FROM change_events WHERE data LIKE '%q13.example%' UNION ALL SELECT 1 FROM service_capabilities WHERE capability = 'n13'");
  t.equal(none.rowCount, 0, 'nothing of the refused one: no row, no detail, no event');

  const all = await commitServices(pool, items(b, 50, 8), { tiers: TIERS, all: true });
  t.ok(all.every(isRefusal), 'a batch (all): pro (8) holds 1, a batch of 8 is refused whole');
  t.same((all[0] as { refused: unknown }).refused, { quota: 8, used: 1, asked: 8, written: 0 });
  t.same(await counted(pool, b), [1, 1], 'nothing written');
  t.equal(written(await commitServices(pool, items(b, 60, 7), { tiers: TIERS, all: true })), 7, 'a batch that fits is written whole');
  t.same(await counted(pool, b), [8, 8]);

  await setTier(pool, a, 'pro', 'test');
  t.equal(written(await commitServices(pool, items(a, 70, 4), { tiers: TIERS, all: false })), 3, 'a promotion: the next statement has the new quota');
  await setTier(pool, a, 'free', 'test');
  const over = await commitServices(pool, items(a, 80, 1), { tiers: TIERS, all: false });
  t.same((over[0] as { refused: unknown }).refused, { quota: 5, used: 8, asked: 1, written: 0 }, 'a demotion below the count: no room, nothing removed');
  await pool.query("UPDATE sandboxes SET tier = 'gone' WHERE uuid = $1", [b]);
  t.ok(isRefusal((await commitServices(pool, items(b, 90, 1), { tiers: TIERS, all: false }))[0]!), 'a tier no longer configured has no room');
});

t.test('concurrent statements never pass the quota together', async (t) => {
  const { pool } = await freshPool(t, 8);
  const quota = { free: 23 };
  // batches of 4 (all or nothing): exactly floor(23 / 4) = 5 of 12 pass, whatever the interleaving
  const a = await sandbox(pool);
  const batches = await Promise.all(Array.from({ length: 12 }, (_, i) => commitServices(pool, items(a, i * 10, 4), { tiers: quota, all: true })));
  t.equal(batches.filter((b) => b.every((c) => !isRefusal(c))).length, 5, 'five batches written whole');
  t.ok(batches.every((b) => b.every(isRefusal) || !b.some(isRefusal)), 'each batch all or nothing');
  t.same(await counted(pool, a), [20, 20]);
  // single registrations: exactly 23 of 40 pass
  const b = await sandbox(pool);
  const singles = await Promise.all(Array.from({ length: 40 }, (_, i) => commitServices(pool, items(b, 500 + i, 1), { tiers: quota, all: false })));
  t.equal(singles.filter((s) => !isRefusal(s[0]!)).length, 23, 'exactly the quota');
  t.same(await counted(pool, b), [23, 23]);
  // deletions concurrent with registrations: the count never passes the quota, and stays the rows'
  const ids = (await pool.query<{ id: string }>('SELECT id FROM services WHERE ns = $1', [b])).rows.map((r) => r.id);
  const mixed = await Promise.all([
    ...ids.slice(0, 10).map((id, i) => (i % 2 ? deleteService(pool, b, id).then(() => null) : deleteServices(pool, [{ ns: b, id }]).then(() => null))),
    ...Array.from({ length: 20 }, (_, i) => commitServices(pool, items(b, 700 + i, 1), { tiers: quota, all: false })),
  ]);
  const added = mixed.filter((m) => m !== null && !isRefusal(m[0]!)).length;
  t.ok(added >= 0 && added <= 10, `at most the room the deletions made (${added})`);
  const [c, n] = await counted(pool, b);
  t.equal(c, n, 'the count is the rows');
  t.ok(n <= 23, `never past the quota (${n})`);
});

t.test('the group committer refuses alone what has no room', async (t) => {
  const { pool } = await freshPool(t, 4);
  const a = await sandbox(pool);
  const gc = new GroupCommitter(pool, { windowMs: 200, maxBatch: 100, concurrency: 2, quotas: { free: 3 } });
  const out = await Promise.allSettled([...items(a, 0, 5), ...items(PRODUCTION, 10, 2)].map((it) => gc.create(it)));
  t.same(
    out.map((o) => o.status),
    ['fulfilled', 'fulfilled', 'fulfilled', 'rejected', 'rejected', 'fulfilled', 'fulfilled'],
    'the first three of the sandbox and production commit; the rest are refused',
  );
  const err = (out[3] as PromiseRejectedResult).reason as { status: number; code: string; message: string };
  t.same([err.status, err.code, err.message], [409, 'QUOTA_EXCEEDED', 'sandbox quota of 3 services reached: 3 registered']);
  t.equal(gc.stats.isolated, 0, 'no write-by-write retry: the statement left them out');
});

t.test('migration 0010 counts the services already there', async (t) => {
  const { pool } = await freshPool(t, 2, 9);
  const a = (await pool.query<{ uuid: string }>("INSERT INTO sandboxes (uuid, name, prefix, key_hash, tier) VALUES (gen_random_uuid(), 'Old', 'old', '\\x01', 'free') RETURNING uuid")).rows[0]!.uuid;
  await pool.query("INSERT INTO services (id, ns, endpoint) SELECT 'old-' || g, $1, 'https://old.example/' FROM generate_series(1, 7) g", [a]);
  await pool.query("INSERT INTO services (id, ns, endpoint) VALUES ('prod-1', 'production', 'https://prod.example/')");
  await migrate(pool);
  t.same(await counted(pool, a), [7, 7]);
});
