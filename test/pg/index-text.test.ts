// The index text stored with each state (services.idx_doc, idx_members, idx_hdr; migration
// 0004) is what the write path sends to Redis for that state. fast-check runs sequences of
// every write kind of the store — register, patch, replacement, delete, import upserts and
// import replacement lists — with hostile strings, and after each sequence compares every
// live service's stored text with the projector's serialisers (serializeService,
// memberSuffixes, headerData) applied to the committed state as the projector reads it
// (loadIndexStates), and with the rebuild's page row of that service. bin/registry
// backfill-index-text fills rows written without it (before migration 0004) with the same,
// and so does the migrator on every start (reindex/index-text.ts), which also recomputes every
// row's text when the member rule of the search dimensions changed.
import t from 'tap';
import fc from 'fast-check';
import { memberSuffixes, PRODUCTION } from '../../src/hot/domain/keys.js';
import { headerData, serializeService } from '../../src/hot/domain/service.js';
import { ApiError } from '../../src/hot/domain/errors.js';
import { parseServiceCreate, parseServicePatch } from '../../src/hot/domain/validation.js';
import { bulkReplacements, bulkUpsert } from '../../src/hot/writes/bulk.js';
import type { Pool } from '../../src/hot/pg/pool.js';
import { patchService } from '../../src/hot/writes/patches.js';
import { createService } from '../../src/hot/writes/register.js';
import { migrate } from '../../src/hot/migrate.js';
import { migrateApart } from '../../src/hot/migrate-apart.js';
import { threadId } from 'node:worker_threads';
import { MEMBER_RULE } from '../../src/hot/domain/dimensions.js';
import { loadIndexStates, newServiceId } from '../../src/hot/registry/state.js';
import { addReplacement, deleteService } from '../../src/hot/registry/write-functions.js';
import { loadIndexPage } from '../../src/hot/registry/index-pages.js';
import { backfillIndexText } from '../../src/hot/reindex/index-text.js';
import { seedServices } from '../helpers/test-data.js';
// the same hostile bodies as test/pg/rebuild-bytes.test.ts
import { serviceBody as body, servicePatch as patch } from '../helpers/arbitraries.js';
import { freshPool } from '../helpers/database.js';

const op = fc.oneof(
  fc.record({ k: fc.constant('create' as const), body }),
  fc.record({ k: fc.constant('patch' as const), i: fc.nat(), body: patch }),
  fc.record({ k: fc.constant('replace' as const), i: fc.nat(), j: fc.nat() }),
  fc.record({ k: fc.constant('delete' as const), i: fc.nat() }),
  // import upserts: an existing id (i) or a new one (null)
  fc.record({ k: fc.constant('import' as const), rows: fc.array(fc.tuple(fc.option(fc.nat(), { nil: null }), body), { minLength: 1, maxLength: 4 }) }),
  fc.record({ k: fc.constant('importReplacements' as const), i: fc.nat(), js: fc.array(fc.nat(), { maxLength: 3 }) }),
);

/**
 * Compare the stored index text of every id (each must be a live service) with the write
 * path's serialisers over its committed state, and with its rebuild page row; the number
 * compared.
 */
async function checkStored(pool: Pool, ids: string[]): Promise<number> {
  let n = 0;
  const states = await loadIndexStates(pool, ids);
  const stored = await pool.query<{ id: string; version: string; seq: string; idx_doc: string | null; idx_members: string | null; idx_hdr: string | null }>(
    'SELECT id, version, seq, idx_doc, idx_members, idx_hdr FROM services WHERE id = ANY($1)',
    [ids],
  );
  for (const row of stored.rows) {
    const st = states.get(row.id)!;
    const rec = st.record!;
    if (row.idx_doc === null || row.idx_members === null || row.idx_hdr === null) throw new Error(`service ${row.id} has no stored index text`);
    if (String(st.version) !== row.version) throw new Error('the state and the stored text were read at different versions');
    if (row.idx_doc !== serializeService(rec)) throw new Error(`doc of ${row.id}:\n  stored: ${row.idx_doc}\n  write path: ${serializeService(rec)}`);
    if (row.idx_hdr !== headerData(rec)) throw new Error(`hdr of ${row.id}: stored ${JSON.stringify(row.idx_hdr)}, write path ${JSON.stringify(headerData(rec))}`);
    // the members name sets: their order carries no meaning
    const want = [...memberSuffixes(rec)].sort().join('\n');
    const got = row.idx_members.split('\n').sort().join('\n');
    if (got !== want) throw new Error(`members of ${row.id}:\n  stored: ${got}\n  write path: ${want}`);
    // the rebuild's page hands on exactly the stored strings
    const [page] = await loadIndexPage(pool, Number(row.seq) - 1, 1);
    if (!page || page[0] !== row.id || page[4] !== row.idx_doc || page[5] !== row.idx_members || page[6] !== row.idx_hdr || page[2] !== row.version) {
      throw new Error(`the rebuild page of ${row.id} does not carry its stored text: ${JSON.stringify(page)}`);
    }
    n++;
  }
  if (stored.rows.length !== ids.length) throw new Error(`${ids.length} live ids, ${stored.rows.length} rows`);
  return n;
}

t.test('every write stores the index text of the state it commits', async (t) => {
  const { pool } = await freshPool(t, 2);
  const ids: string[] = [];
  const pick = (i: number) => ids[i % ids.length]!;
  const kinds = new Map<string, number>();
  let checked = 0;

  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 8 }), async (ops) => {
      for (const o of ops) {
        if (o.k !== 'create' && o.k !== 'import' && !ids.length) continue;
        try {
          if (o.k === 'create') ids.push((await createService(pool, PRODUCTION, parseServiceCreate(o.body))).id);
          else if (o.k === 'patch') await patchService(pool, PRODUCTION, pick(o.i), parseServicePatch(o.body));
          else if (o.k === 'replace') await addReplacement(pool, PRODUCTION, pick(o.i), pick(o.j));
          else if (o.k === 'delete') {
            const id = pick(o.i);
            await deleteService(pool, PRODUCTION, id);
            ids.splice(ids.indexOf(id), 1);
          } else if (o.k === 'import') {
            const rows = o.rows.map(([i, b]) => ({ id: i === null || !ids.length ? newServiceId() : pick(i), input: parseServiceCreate(b) }));
            await bulkUpsert(pool, PRODUCTION, rows);
            for (const r of rows) if (!ids.includes(r.id)) ids.push(r.id);
          } else await bulkReplacements(pool, PRODUCTION, new Map([[pick(o.i), o.js.map(pick)]]));
        } catch (err) {
          // refusals (409 already a candidate, a service replacing itself): not a write
          if (!(err instanceof ApiError && err.status < 500)) throw err;
          continue;
        }
        kinds.set(o.k, (kinds.get(o.k) ?? 0) + 1);
      }
      checked += await checkStored(pool, ids);
    }),
    { numRuns: 40, endOnFailure: true },
  );
  for (const k of ['create', 'patch', 'replace', 'delete', 'import', 'importReplacements']) t.ok((kinds.get(k) ?? 0) > 0, `${k}: ${kinds.get(k) ?? 0} writes ran`);
  t.ok(checked > 40, `${checked} stored states compared`);
});

t.test('backfill-index-text fills the rows written without it, with the write path\'s strings', async (t) => {
  const { pool, url } = await freshPool(t, 2);
  // rows as written before migration 0004: straight into the tables, no index text
  await seedServices(url, 2500, PRODUCTION, 'old');
  const dep = await createService(pool, PRODUCTION, parseServiceCreate({ endpoint: 'https://dep.example.com/"x"', capabilities: ['a', 'b'], properties: { '10': 'x', z: 'ü' }, iot: { deviceClasses: ['meter'], protocols: ['mqtt'] } }));
  const cand = await createService(pool, PRODUCTION, parseServiceCreate({ endpoint: 'https://cand.example.com', capabilities: ['a'] }));
  await patchService(pool, PRODUCTION, dep.id, parseServicePatch({ deprecated: true, sunset_date: '2031-02-03' }));
  await addReplacement(pool, PRODUCTION, dep.id, cand.id);
  await pool.query('UPDATE services SET idx_doc = NULL, idx_members = NULL, idx_hdr = NULL WHERE id = $1', [dep.id]);
  const ids = (await pool.query<{ id: string }>('SELECT id FROM services ORDER BY seq')).rows.map((r) => r.id);
  const before = await pool.query<{ n: string }>('SELECT count(*) AS n FROM services WHERE idx_doc IS NULL');
  t.equal(Number(before.rows[0]!.n), 2501, 'the seeded rows and the emptied one have no index text');
  const versions = await pool.query<{ id: string; version: string }>('SELECT id, version FROM services');
  const filled = await backfillIndexText(pool, 1000);
  t.equal(filled, 2501, 'every row without index text was filled (pages of 1,000)');
  t.equal(await checkStored(pool, ids), ids.length, 'every row holds the write path\'s strings for its state');
  const after = await pool.query<{ id: string; version: string }>('SELECT id, version FROM services');
  t.same(new Map(after.rows.map((r) => [r.id, r.version])), new Map(versions.rows.map((r) => [r.id, r.version])), 'no version moved: the states did not change');
  t.equal(await backfillIndexText(pool, 1000), 0, 'a second run finds nothing to do');
});

t.test('the migrator fills rows without index text, and recomputes all of it when the member rule changed', async (t) => {
  const { pool, url } = await freshPool(t, 2);
  await seedServices(url, 300, PRODUCTION, 'old');
  const a = await createService(pool, PRODUCTION, parseServiceCreate({ endpoint: 'https://a.example.com', capabilities: ['a'], properties: { k: 'v' }, iot: { deviceClasses: ['meter'], protocols: ['mqtt'] } }));
  const ids = (await pool.query<{ id: string }>('SELECT id FROM services ORDER BY seq')).rows.map((r) => r.id);
  await migrate(pool);
  t.equal(await checkStored(pool, ids), 301, 'a start fills the seeded rows with the write path\'s strings');
  // text computed under another rule: the members of a dimension that is gone
  await pool.query("UPDATE services SET idx_members = idx_members || E'\\nx:gone'");
  await pool.query("UPDATE index_text_rule SET rule = 'another'");
  await migrate(pool);
  t.equal(await checkStored(pool, ids), 301, 'a start under a new rule recomputes every row\'s text');
  t.equal((await pool.query<{ rule: string }>('SELECT rule FROM index_text_rule')).rows[0]!.rule, MEMBER_RULE, 'and records the rule');
  await pool.query("UPDATE services SET idx_members = idx_members || E'\\nx:gone' WHERE id = $1", [a.id]);
  await migrate(pool);
  await t.rejects(checkStored(pool, ids), /members of/, 'under the same rule, stored text is left as it is (one read, no rewrite)');
});

t.test('the server migrates on a thread of its own: the rows filled there, its failure reported with its message', async (t) => {
  const { pool, url } = await freshPool(t, 2);
  await seedServices(url, 120, PRODUCTION, 'apart');
  const ids = (await pool.query<{ id: string }>('SELECT id FROM services ORDER BY seq')).rows.map((r) => r.id);
  const logs: string[] = [];
  const ran = await migrateApart(url, (m) => logs.push(m));
  t.not(ran, threadId, 'not on the calling thread');
  t.equal(await checkStored(pool, ids), 120, 'the seeded rows hold the write path\'s strings');
  t.ok(logs.includes('index text: 120 rows written'), 'its log lines reach the caller');
  const bad = new URL(url);
  bad.pathname = '/registry_no_such_database';
  await t.rejects(migrateApart(bad.toString()), /registry_no_such_database/, 'a failure rejects with the migrator\'s message');
});
