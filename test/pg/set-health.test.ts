// A lease's status change (liveness/store.ts setHealth, migration 0009) is one round trip:
// one durable write with exactly one change event and one outbox row, whose patched index
// text is what indexText() makes of the state committed, and whose returned state is that
// state; nothing to do writes nothing; a transition that fails writes nothing (real
// PostgreSQL, a fresh database).
import t, { type Test } from 'tap';
import { PRODUCTION } from '../../src/hot/domain/keys.js';
import { parseServiceCreate } from '../../src/hot/domain/validation.js';
import { setHealth } from '../../src/hot/liveness/store.js';
import type { Pool } from '../../src/hot/pg/pool.js';
import { indexText, loadIndexStates } from '../../src/hot/registry/state.js';
import { createService } from '../../src/hot/writes/register.js';
import { freshPool } from '../helpers/database.js';

const leased = (i: number, ttl: number | null = 30) =>
  parseServiceCreate({
    endpoint: `https://h${i}.example.com/`,
    capabilities: ['beat', `n${i}`],
    properties: { i: String(i), zone: 'a' },
    iot: { deviceClasses: ['sensor'], protocols: ['mqtt'] },
    ...(ttl === null ? {} : { ttl, deregisterAfter: 600 }),
  });

type Row = { version: string; hs: string; crit: string | null; idx_doc: string; idx_members: string; idx_hdr: string };
const row = async (pool: Pool, id: string) =>
  (await pool.query<Row>('SELECT version::text, health_status AS hs, critical_since::text AS crit, idx_doc, idx_members, idx_hdr FROM services WHERE id = $1', [id])).rows[0]!;
const count = async (pool: Pool, table: 'change_events' | 'outbox', id: string) =>
  Number((await pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${table} WHERE service_id = $1`, [id])).rows[0]!.n);

const setup = async (t: Test) => (await freshPool(t, 4)).pool;

t.test('each transition: one write, one change event, one outbox row; the text and state returned are the ones committed', async (t) => {
  const pool = await setup(t);
  const svc = await createService(pool, PRODUCTION, leased(1));
  const id = svc.id;
  let events = await count(pool, 'change_events', id);
  let rows = await count(pool, 'outbox', id);
  let before = await row(pool, id);
  for (const [status, now] of [['critical', 1_000], ['passing', 2_000], ['critical', 3_000], ['passing', 4_000]] as const) {
    const w = await setHealth(pool, PRODUCTION, id, status, now);
    t.ok(w, `${status}: written`);
    const after = await row(pool, id);
    t.equal(after.hs, status, `${status}: the status`);
    t.equal(after.crit, status === 'critical' ? String(now) : null, `${status}: critical_since`);
    t.ok(Number(after.version) > Number(before.version), `${status}: a new version`);
    t.equal(await count(pool, 'change_events', id), events + 1, `${status}: exactly one change event`);
    t.equal(await count(pool, 'outbox', id), rows + 1, `${status}: exactly one outbox row`);
    const st = (await loadIndexStates(pool, [id])).get(id)!;
    t.same(w!.state, st, `${status}: the state returned is the state committed`);
    t.equal(w!.state.version, Number(after.version), `${status}: at its version`);
    const text = indexText(st.record!);
    t.strictSame({ doc: after.idx_doc, members: after.idx_members, hdr: after.idx_hdr }, text, `${status}: the stored text is indexText() of the state`);
    t.strictSame(w!.text, text, `${status}: and the text returned`);
    const ev = await pool.query<{ type: string; data: string }>('SELECT type, data FROM change_events WHERE service_id = $1 ORDER BY id DESC LIMIT 1', [id]);
    t.strictSame(ev.rows[0], { type: 'service.updated', data: text.doc }, `${status}: the event carries the new document`);
    t.equal(w!.row, Number((await pool.query<{ id: string }>('SELECT max(id)::text AS id FROM outbox WHERE service_id = $1', [id])).rows[0]!.id), `${status}: its outbox row`);
    events += 1;
    rows += 1;
    before = after;
  }
});

t.test('nothing to do writes nothing: the same status, no lease, another namespace, no such id', async (t) => {
  const pool = await setup(t);
  const svc = await createService(pool, PRODUCTION, leased(2));
  const plain = await createService(pool, PRODUCTION, leased(3, null));
  const snapshot = async () => [await row(pool, svc.id), await row(pool, plain.id), await count(pool, 'change_events', svc.id), await count(pool, 'outbox', svc.id)];
  const was = await snapshot();
  t.equal(await setHealth(pool, PRODUCTION, svc.id, 'passing', 1), null, 'already passing');
  t.equal(await setHealth(pool, PRODUCTION, plain.id, 'critical', 1), null, 'no lease');
  t.equal(await setHealth(pool, '00000000-0000-4000-8000-000000000000', svc.id, 'critical', 1), null, 'not in that namespace');
  t.equal(await setHealth(pool, PRODUCTION, 'no-such-id', 'critical', 1), null, 'no such service');
  t.strictSame(await snapshot(), was, 'no row, version, event or outbox row changed');
});

t.test('a transition that fails writes nothing', async (t) => {
  const pool = await setup(t);
  const svc = await createService(pool, PRODUCTION, leased(4));
  const events = await count(pool, 'change_events', svc.id);
  const rows = await count(pool, 'outbox', svc.id);
  const was = await row(pool, svc.id);
  // the change event, the last statement of the transition, refused
  await pool.query(`CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$`);
  await pool.query('CREATE TRIGGER refuse BEFORE INSERT ON change_events FOR EACH ROW EXECUTE FUNCTION refuse()');
  await t.rejects(setHealth(pool, PRODUCTION, svc.id, 'critical', 5), { message: 'refused' }, 'the transition fails');
  t.strictSame(await row(pool, svc.id), was, 'the row as it was: status, version, text');
  t.equal(await count(pool, 'change_events', svc.id), events, 'no change event');
  t.equal(await count(pool, 'outbox', svc.id), rows, 'no outbox row');
  await pool.query('DROP TRIGGER refuse ON change_events');
  t.ok(await setHealth(pool, PRODUCTION, svc.id, 'critical', 6), 'the same transition commits once the refusal is gone');
});

t.test('a row without stored index text goes the general way, with the same result', async (t) => {
  const pool = await setup(t);
  const svc = await createService(pool, PRODUCTION, leased(5));
  await pool.query('UPDATE services SET idx_doc = NULL, idx_members = NULL, idx_hdr = NULL WHERE id = $1', [svc.id]);
  const events = await count(pool, 'change_events', svc.id);
  const w = await setHealth(pool, PRODUCTION, svc.id, 'critical', 7);
  t.ok(w, 'written');
  const st = (await loadIndexStates(pool, [svc.id])).get(svc.id)!;
  t.same(w!.state, st, 'the state returned is the state committed');
  const after = await row(pool, svc.id);
  t.strictSame({ doc: after.idx_doc, members: after.idx_members, hdr: after.idx_hdr }, indexText(st.record!), 'its text stored');
  t.equal(await count(pool, 'change_events', svc.id), events + 1, 'one change event');
});

t.test('concurrent opposite transitions of one service: each commits whole, in some order', async (t) => {
  const pool = await setup(t);
  const svc = await createService(pool, PRODUCTION, leased(6));
  const events = await count(pool, 'change_events', svc.id);
  const rs = await Promise.all(Array.from({ length: 12 }, (_, i) => setHealth(pool, PRODUCTION, svc.id, i % 2 ? 'passing' : 'critical', 100 + i)));
  const done = rs.filter((r) => r !== null);
  t.ok(done.length >= 1, 'at least the first change committed');
  t.equal(await count(pool, 'change_events', svc.id), events + done.length, 'one change event per committed transition');
  const versions = done.map((r) => r!.state.version);
  t.equal(new Set(versions).size, versions.length, 'each at its own version');
  const last = done.reduce((a, b) => (a!.state.version > b!.state.version ? a : b))!;
  const st = (await loadIndexStates(pool, [svc.id])).get(svc.id)!;
  t.same(last.state, st, 'the newest one returned is the state that stands');
  const after = await row(pool, svc.id);
  t.strictSame({ doc: after.idx_doc, members: after.idx_members, hdr: after.idx_hdr }, indexText(st.record!), 'and its text is indexText() of it');
});
