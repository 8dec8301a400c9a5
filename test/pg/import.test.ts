// `registry import` in chunks (writes/bulk.ts: COPY for new services, one UPDATE for
// changed ones) against real PostgreSQL and Redis: importing a file twice leaves every row
// as the first import wrote it; a chunk the database refuses writes nothing of itself, is
// reported with its lines, and the other chunks go in; the rebuilt Redis index answers
// what PostgreSQL holds.
import { randomBytes } from 'node:crypto';
import t, { type Test } from 'tap';
import { cli } from '../helpers/cli.js';
import { demoService, prng } from '../../src/admin/seed.js';
import { serviceObject } from '../../src/hot/domain/service.js';
import { createPool, type Pool } from '../../src/hot/pg/pool.js';
import { allPages } from '../helpers/checks.js';
import { startTestServer } from '../helpers/server.js';
import { freshDatabase } from '../helpers/database.js';
import { memberKeys } from '../../src/hot/fallback/statements.js';

/** n services as JSON Lines, seeded; one in 10 deprecated, one in 7 names the two before it */
function file(n: number, seed = 3, endpointOf: (i: number) => string | null = () => null): string {
  const r = prng(seed);
  let s = '';
  for (let i = 0; i < n; i++) {
    const input = demoService(r, i);
    const obj = serviceObject({ id: `imt-${seed}-${i}`, ns: 'production', seq: 0, ...input, endpoint: endpointOf(i) ?? input.endpoint, deprecated: i % 10 === 3, deprecatedAt: null, replacementSeqs: [] });
    s += JSON.stringify({ ...obj, replacements: i % 7 === 6 ? [`imt-${seed}-${i - 1}`, `imt-${seed}-${i - 2}`] : [] }) + '\n';
  }
  return s;
}

/** Every row an import writes, in a stable order: what a second import must leave as it is. */
async function dump(pool: Pool): Promise<string> {
  const q = async (sql: string) => JSON.stringify((await pool.query(sql)).rows);
  return [
    await q('SELECT id, ns, seq, endpoint, deprecated, deprecated_at, locked, sunset_date, created_at, updated_at, version, idx_doc, idx_members, idx_hdr, ttl, health_status FROM services ORDER BY id'),
    await q('SELECT * FROM service_capabilities ORDER BY service_id, ord'),
    await q('SELECT * FROM service_properties ORDER BY service_id, key'),
    await q('SELECT * FROM iot_profiles ORDER BY service_id'),
    await q('SELECT service_id, candidate_id, rank FROM replacements ORDER BY service_id, rank'),
    await q('SELECT id, type, service_id, data FROM change_events ORDER BY id'),
  ].join('\n');
}

/** A fresh database with a pool on it, both gone when `t` ends. */
async function freshImport(t: Test): Promise<{ db: { url: string }; pool: Pool }> {
  const db = await freshDatabase();
  const pool = createPool(db.url, 2);
  t.teardown(async () => {
    await pool.end();
    await db.drop();
  });
  return { db, pool };
}

t.test('importing the same file twice leaves the same rows', async (t) => {
  const { db, pool } = await freshImport(t);
  const env = { DATABASE_URL: db.url, REDIS_KEY_PREFIX: 'timp' + randomBytes(4).toString('hex') + ':' };
  const lines = file(230);
  const first = await cli(['import', '-', '--batch', '40', '--no-reindex'], env, lines);
  t.equal(first.code, 0, first.err);
  t.match(first.err, /imported 230 lines .*230 created, 0 updated, 0 unchanged, 0 rejected; 32 replacement lists set/);
  const after = await dump(pool);
  t.equal((await pool.query('SELECT count(*)::int AS n FROM change_events')).rows[0].n, 230 + 32, 'one event per service, one per list set');
  const again = await cli(['import', '-', '--batch', '40', '--no-reindex'], env, lines);
  t.equal(again.code, 0, again.err);
  t.match(again.err, /0 created, 0 updated, 230 unchanged, 0 rejected; 0 replacement lists set/);
  t.equal(await dump(pool), after, 'every row (versions, times, change events included) as the first import left it');
  // a bigger chunk, the same file: still nothing to write
  const big = await cli(['import', '-', '--batch', '1000', '--no-reindex'], env, lines);
  t.match(big.err, /230 unchanged/);
  t.equal(await dump(pool), after);
});

t.test('a chunk with a row the database refuses writes nothing of that chunk and is reported', async (t) => {
  const { db, pool } = await freshImport(t);
  // a rule validation does not know: the database refuses one endpoint (as a CHECK would)
  await pool.query(`CREATE FUNCTION refuse_bad() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN IF NEW.endpoint LIKE '%refused.example.com%' THEN RAISE EXCEPTION 'endpoint refused' USING ERRCODE = 'check_violation'; END IF; RETURN NEW; END $$`);
  await pool.query('CREATE TRIGGER refuse_bad BEFORE INSERT OR UPDATE ON services FOR EACH ROW EXECUTE FUNCTION refuse_bad()');
  const env = { DATABASE_URL: db.url, REDIS_KEY_PREFIX: 'timp' + randomBytes(4).toString('hex') + ':' };
  // chunks of 10: lines 1-10, 11-20 (line 15 refused), 21-30, ...
  const im = await cli(['import', '-', '--batch', '10', '--no-reindex'], env, file(35, 4, (i) => (i === 14 ? 'https://refused.example.com/' : null)));
  t.equal(im.code, 1, 'rejected lines: exit 1');
  t.match(im.err, /lines 11-20: not written \(10 services, one transaction\): endpoint refused/);
  t.match(im.err, /25 created, 0 updated, 0 unchanged, 10 rejected/);
  const ids = new Set((await pool.query<{ id: string }>('SELECT id FROM services')).rows.map((r) => r.id));
  for (let i = 0; i < 35; i++) t.equal(ids.has(`imt-4-${i}`), i < 10 || i >= 20, `line ${i + 1}: ${i < 10 || i >= 20 ? 'written' : 'not written'}`);
  for (const table of ['service_capabilities', 'service_properties', 'iot_profiles', 'change_events', 'outbox']) {
    const left = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE service_id = ANY($1)`, [Array.from({ length: 10 }, (_, i) => `imt-4-${10 + i}`)]);
    t.equal(left.rows[0]!.n, 0, `${table}: nothing of the refused chunk`);
  }
  // the refused chunk's replacement lists are not set; a list naming a service of it drops it
  t.match(im.err, /imt-4-20: replacement candidate imt-4-19 is not a production service; left out/);
  // once the row is fixed, importing the file again writes exactly the missing chunk
  await pool.query('DROP TRIGGER refuse_bad ON services');
  const fixed = await cli(['import', '-', '--batch', '10', '--no-reindex'], env, file(35, 4, (i) => (i === 14 ? 'https://refused.example.com/' : null)));
  t.equal(fixed.code, 0, fixed.err);
  t.match(fixed.err, /10 created, 0 updated, 25 unchanged, 0 rejected/);
});

t.test('after an import, the rebuilt Redis index answers what PostgreSQL holds', async (t) => {
  const { db, pool } = await freshImport(t);
  const prefix = 'timp' + randomBytes(4).toString('hex') + ':';
  const env = { DATABASE_URL: db.url, REDIS_KEY_PREFIX: prefix };
  const first = await cli(['import', '-', '--batch', '50', '--reindex'], env, file(180, 5));
  t.equal(first.code, 0, first.err);
  // a second file updates some services (new endpoints, other capabilities) and adds others
  const second = await cli(['import', '-', '--batch', '50', '--reindex'], env, file(220, 6).replaceAll('imt-6-', 'imt-5-'));
  t.equal(second.code, 0, second.err);
  t.match(second.err, /40 created, \d+ updated/);
  t.match(second.err, /index rebuilt: 220 services/);
  const s = await startTestServer({ databaseUrl: db.url, redisKeyPrefix: prefix });
  t.teardown(() => s.close());
  const caps = (await pool.query<{ capability: string }>('SELECT DISTINCT capability FROM service_capabilities ORDER BY 1')).rows.map((r) => r.capability);
  t.ok(caps.length > 5, `${caps.length} capabilities`);
  for (const cap of caps) {
    const want = (await pool.query<{ id: string }>('SELECT service_id AS id FROM service_capabilities WHERE capability = $1 ORDER BY 1', [cap])).rows.map((r) => r.id);
    const got = (await allPages(s, `/services?capability=${encodeURIComponent(cap)}`)).pages.flat().sort();
    t.same(got, want, `capability=${cap}: ${want.length} services`);
  }
  const region = (await pool.query<{ id: string }>("SELECT service_id AS id FROM service_properties WHERE key = 'region' AND value = 'eu-west' ORDER BY 1")).rows.map((r) => r.id);
  t.same((await allPages(s, '/services?property=region:eu-west')).pages.flat().sort(), region, 'a property');
  const docs = (await pool.query<{ id: string; d: string }>('SELECT id, idx_doc AS d FROM services ORDER BY seq')).rows;
  for (const { id, d } of docs) {
    const r = await s.req(`/services/${id}`);
    if (r.status !== 200 || (await r.text()) !== d) {
      t.fail(`${id}: the served document differs from the stored one`);
      return;
    }
  }
  t.pass(`${docs.length} documents as stored`);
});

t.test("the fallback reads' GIN index: the pools merge small pending lists, an import merges what it left", async (t) => {
  const { db, pool } = await freshImport(t);
  const env = { DATABASE_URL: db.url, REDIS_KEY_PREFIX: 'timp' + randomBytes(4).toString('hex') + ':' };
  const r = await cli(['import', '-', '--batch', '60', '--no-reindex'], env, file(230, 7));
  t.equal(r.code, 0, r.err);
  const opts = (await pool.query<{ o: string[] }>(`SELECT reloptions AS o FROM pg_class WHERE relname = 'services_member_keys'`)).rows[0]!.o;
  t.same(opts, ['fastupdate=on'], 'new keys go to the pending list; no limit on the index, so that each session sets its own');
  t.equal((await pool.query<{ l: string }>("SELECT current_setting('gin_pending_list_limit') AS l")).rows[0]!.l, '64kB', "the project's pools let it grow to 64 kB");
  const left = await pool.query<{ n: string }>(`SELECT gin_clean_pending_list('services_member_keys'::regclass) AS n`);
  t.equal(Number(left.rows[0]!.n), 0, 'the import merged its pending list when done');
  // the keys, merged, find every row: one capability, through the index
  const c = await pool.connect();
  try {
    await c.query('BEGIN');
    await c.query('SET LOCAL enable_seqscan = off');
    await c.query('SET LOCAL enable_indexscan = off');
    const cap = (await c.query<{ capability: string }>('SELECT capability FROM service_capabilities GROUP BY 1 ORDER BY count(*) DESC LIMIT 1')).rows[0]!.capability;
    const want = (await c.query<{ n: number }>('SELECT count(*)::int AS n FROM service_capabilities WHERE capability = $1', [cap])).rows[0]!.n;
    const key = memberKeys('production', { capabilities: [cap] })[0]!;
    const got = (await c.query<{ n: number }>('SELECT count(*)::int AS n FROM services WHERE registry_member_keys(ns, idx_members) @> ARRAY[$1]', [key])).rows[0]!.n;
    t.equal(got, want, `${key}: ${want} services through the index`);
    await c.query('COMMIT');
  } finally {
    c.release();
  }
});
