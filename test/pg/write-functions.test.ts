// DELETE, POST .../replacements and POST .../heartbeat-token in one round trip (issue 22,
// registry/write-functions.ts): one statement each, no transaction opened by the client, the
// states the index needs returned by it (equal to what a read after COMMIT finds), errors
// that write nothing, and the race a single SQL statement would lose: a listing of the
// service being deleted committed while the delete waited for its lock.
import t from 'tap';
import pg from 'pg';
import { PRODUCTION } from '../../src/hot/domain/keys.js';
import { parseServiceCreate } from '../../src/hot/domain/validation.js';
import type { Pool } from '../../src/hot/pg/pool.js';
import { loadIndexStates, loadReplacements } from '../../src/hot/registry/state.js';
import { addReplacement, deleteService, rotateToken } from '../../src/hot/registry/write-functions.js';
import { createService, createServices } from '../../src/hot/writes/register.js';
import { waitFor } from '../helpers/wait.js';
import { freshPool } from '../helpers/database.js';

const input = (i: number) => parseServiceCreate({ endpoint: `https://f${i}.example.com/`, capabilities: ['fn', `n${i}`], properties: { i: String(i) } });

/**
 * Statements sent through the pool, and connections checked out: pool.query() checks one
 * out per statement, so a client-side transaction (withTx: a checkout for BEGIN ... COMMIT)
 * shows as more checkouts than statements.
 */
function counted(pool: Pool): { queries: number; connects: number } {
  const n = { queries: 0, connects: 0 };
  const q = pool.query.bind(pool);
  const c = pool.connect.bind(pool);
  pool.query = ((...a: Parameters<typeof q>) => (n.queries++, q(...a))) as typeof pool.query;
  pool.connect = ((...a: Parameters<typeof c>) => (n.connects++, c(...a))) as typeof pool.connect;
  return n;
}

async function counts(pool: Pool): Promise<string> {
  const r = await pool.query<{ s: string }>(
    `SELECT (SELECT count(*) FROM services) || '/' || (SELECT count(*) FROM replacements) || '/' || (SELECT count(*) FROM outbox) || '/' ||
            (SELECT count(*) FROM change_events) || '/' || (SELECT count(*) FROM service_tombstones) || '/' || (SELECT sum(version) FROM services) AS s`,
  );
  return r.rows[0]!.s;
}

t.test('one statement each; what it returns is what was committed', async (t) => {
  const { pool } = await freshPool(t, 4);
  const [a, b, c] = await createServices(pool, [0, 1, 2].map((i) => ({ ns: PRODUCTION, input: input(i) })));
  const n = counted(pool);

  const w = await addReplacement(pool, PRODUCTION, a!.id, b!.id);
  t.same(n, { queries: 1, connects: 1 }, 'adding a candidate: one statement, no client-side transaction');
  let states = await loadIndexStates(pool, [a!.id]);
  t.same(w.state, states.get(a!.id), 'the state returned (with its revision) is the committed one');
  t.same(w.state.record?.replacementSeqs, [b!.state.record.seq], 'and lists the candidate');
  t.same(w.candidates, await loadReplacements(pool, PRODUCTION, a!.id), 'the candidates returned are the ones a read finds');
  const ev = await pool.query<{ type: string; data: string }>('SELECT type, data FROM change_events WHERE service_id = $1 ORDER BY id DESC LIMIT 1', [a!.id]);
  t.same(ev.rows[0], { type: 'service.updated', data: a!.doc }, 'its change event carries the (unchanged) document');
  await addReplacement(pool, PRODUCTION, c!.id, b!.id);

  n.queries = n.connects = 0;
  const d = await deleteService(pool, PRODUCTION, b!.id);
  t.same(n, { queries: 1, connects: 1 }, 'a deletion: one statement');
  t.same(d.map((x) => x.id).sort(), [a!.id, b!.id, c!.id].sort(), 'the deletion and both services that listed it');
  states = await loadIndexStates(pool, [a!.id, b!.id, c!.id]);
  for (const x of d) t.same(x.state, states.get(x.id), `${x.id === b!.id ? 'the tombstone' : 'a lister'}: returned as committed`);
  t.equal(d.find((x) => x.id === b!.id)!.state.record, null, 'the deleted service has no record');
  const ob = await pool.query<{ id: string }>('SELECT id FROM outbox WHERE id = ANY($1)', [d.map((x) => x.row)]);
  t.equal(ob.rowCount, 3, 'each with its own outbox row');

  const leased = await createService(pool, PRODUCTION, parseServiceCreate({ endpoint: 'https://lease.example.com/', capabilities: ['lease'], ttl: 30 }));
  n.queries = n.connects = 0;
  const r = await rotateToken(pool, PRODUCTION, leased.id, Buffer.alloc(32, 7));
  t.same(n, { queries: 1, connects: 1 }, 'a new heartbeat token: one statement');
  states = await loadIndexStates(pool, [leased.id]);
  t.same(r.state, states.get(leased.id), 'returned as committed');
  t.equal(r.state.record?.lease?.tokenHash, Buffer.alloc(32, 7).toString('hex'), 'with the new token hash');
  t.ok(r.state.version > leased.state.version, 'at a new version');
});

t.test('refusals write nothing', async (t) => {
  const { pool } = await freshPool(t, 4);
  const [a, b] = await createServices(pool, [0, 1].map((i) => ({ ns: PRODUCTION, input: input(i) })));
  const other = await createService(pool, '0f6a3c52-8d1e-4b7a-9c2d-5e4f3a2b1c0d', input(9));
  await addReplacement(pool, PRODUCTION, a!.id, b!.id);
  const before = await counts(pool);
  const refused = async (name: string, p: Promise<unknown>, code: string, status: number) => {
    const err = (await p.then(
      () => null,
      (e: unknown) => e,
    )) as { code?: string; status?: number } | null;
    t.same({ code: err?.code, status: err?.status }, { code, status }, name);
  };
  await refused('deleting a service of another namespace: 404', deleteService(pool, PRODUCTION, other.id), 'NOT_FOUND', 404);
  await refused('deleting no service: 404', deleteService(pool, PRODUCTION, 'nope'), 'NOT_FOUND', 404);
  await refused('a candidate for no service: 404', addReplacement(pool, PRODUCTION, 'nope', b!.id), 'NOT_FOUND', 404);
  await refused('a service as its own candidate: 400', addReplacement(pool, PRODUCTION, a!.id, a!.id), 'VALIDATION_FAILED', 400);
  await refused('a candidate of another namespace: 400', addReplacement(pool, PRODUCTION, a!.id, other.id), 'VALIDATION_FAILED', 400);
  await refused('a candidate listed already: 409', addReplacement(pool, PRODUCTION, a!.id, b!.id), 'CONFLICT', 409);
  await refused('a token for a service without a lease: 409', rotateToken(pool, PRODUCTION, a!.id, Buffer.alloc(32)), 'CONFLICT', 409);
  await refused('a token for no service: 404', rotateToken(pool, PRODUCTION, 'nope', Buffer.alloc(32)), 'NOT_FOUND', 404);
  t.equal(await counts(pool), before, 'no row, outbox entry, change event, tombstone or version written by any of them');
});

t.test('a listing committed while the DELETE waited for its lock is re-indexed too', async (t) => {
  const { pool, url } = await freshPool(t, 4);
  const other = new pg.Client({ connectionString: url });
  await other.connect();
  t.teardown(() => other.end().catch(() => undefined));
  const [x, l] = await createServices(pool, [0, 1].map((i) => ({ ns: PRODUCTION, input: input(i) })));
  // a transaction lists X as L's candidate and holds on (its foreign key check holds a key-share lock on X)
  await other.query('BEGIN');
  await other.query("INSERT INTO replacements (service_id, candidate_id, rank) VALUES ($1, $2, 1)", [l!.id, x!.id]);
  await other.query("UPDATE services SET version = nextval('service_version_seq') WHERE id = $1", [l!.id]);
  const del = deleteService(pool, PRODUCTION, x!.id);
  await waitFor('the DELETE waits for the listing transaction', async () => {
    const r = await pool.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%registry_delete_service%'");
    return r.rowCount === 1;
  }, 20_000, 10);
  await other.query('COMMIT');
  const d = await del;
  const lw = d.find((w) => w.id === l!.id);
  t.ok(lw, 'the service listed after the DELETE started is among its writes');
  const states = await loadIndexStates(pool, [l!.id]);
  t.same(lw?.state, states.get(l!.id), 'with its state as committed (its candidate gone)');
  t.same(lw?.state.record?.replacementSeqs, [], 'an empty candidate list');
});
