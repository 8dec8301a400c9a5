// A fallback page of sets (fallback/reads.ts page()): for a key the planner has no statistics
// of, its few matches through the GIN index, else the planner's plan. Against real
// PostgreSQL, on services whose sets are common, rare, clustered at one end or held by none,
// every page for generated filters, cursors and sizes must equal what one statement in seq
// order gives: before ANALYZE (no key has statistics) and after (the common ones do), with
// bounds small enough that both reads are taken.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import fc from 'fast-check';
import { cli } from '../helpers/cli.js';
import { freshDatabase } from '../helpers/database.js';
import { noFilters } from '../../src/hot/domain/dimensions.js';
import { PRODUCTION } from '../../src/hot/domain/keys.js';
import { memberKeys, PAGE_SETS } from '../../src/hot/fallback/statements.js';
import { FALLBACK_SETTINGS, PgReads, type PageBounds } from '../../src/hot/fallback/reads.js';
import { createPool } from '../../src/hot/pg/pool.js';

const N = 600;
/** capabilities of service i: everywhere, one in ten, one in 97, only the last 40, only the first 15 */
function capabilities(i: number): string[] {
  const c = ['all-of-them'];
  if (i % 10 === 3) c.push('tenth');
  if (i % 97 === 5) c.push('rare');
  if (i >= N - 40) c.push('tail');
  if (i < 15) c.push('head');
  return c;
}

const db = await freshDatabase();
const pool = createPool(db.url, 2);
t.teardown(async () => {
  await pool.end();
  await db.drop();
});
// statistics only from the test's own ANALYZE (autovacuum's would come at any moment)
await pool.query('ALTER TABLE services SET (autovacuum_enabled = false)');
let lines = '';
for (let i = 0; i < N; i++) {
  const svc = { id: `fbp-${i}`, endpoint: `https://s${i}.example.net`, capabilities: capabilities(i), properties: { zone: i % 3 === 0 ? 'a' : 'b' }, deprecated: false, locked: false, sunset_date: null };
  lines += JSON.stringify(svc) + '\n';
}
const imported = await cli(['import', '-', '--no-reindex'], { DATABASE_URL: db.url, REDIS_KEY_PREFIX: 'tfbp' + randomBytes(4).toString('hex') + ':' }, lines);
if (imported.code !== 0) throw new Error(imported.err);
// a few services gone from the middle: seqs with no service
await pool.query(`DELETE FROM services WHERE id IN ('fbp-200', 'fbp-201', 'fbp-305')`);
const seqs = (await pool.query<{ seq: string }>('SELECT seq::text FROM services ORDER BY seq')).rows.map((r) => Number(r.seq));

const CAPS = ['all-of-them', 'tenth', 'rare', 'tail', 'head', 'none-has-it'];

t.test('every page equals the plain statement, for bounds that take each read, before and after ANALYZE', async (t) => {
  for (const [analyze, few] of [[false, 3], [false, 40], [true, 1], [true, 5], [true, 25]] as const) {
    if (analyze) await pool.query('ANALYZE services');
    const stats = (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stats, unnest(most_common_elems::text::text[]) WHERE tablename = 'services_member_keys'`)).rows[0]!.n;
    t.equal(stats > 0, analyze, `${stats} keys with statistics`);
    const reads = new PgReads(pool, 4, { few, statsMs: 0 } satisfies PageBounds);
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.constantFrom(...CAPS), { minLength: 1, maxLength: 2 }),
        fc.option(fc.constantFrom('a', 'b'), { nil: null }),
        fc.oneof(fc.constant(''), fc.constantFrom(...seqs).map(String), fc.integer({ min: -1, max: seqs[seqs.length - 1]! + 5 }).map(String)),
        fc.integer({ min: 1, max: 12 }),
        async (caps, zone, after, limit) => {
          const f = { ...noFilters(), capabilities: caps, properties: zone ? [{ key: 'zone', value: zone }] : [] };
          const keys = memberKeys(PRODUCTION, f);
          const want = (await pool.query<string[]>({ text: PAGE_SETS, values: [PRODUCTION, after === '' ? -1 : Number(after), limit + 1, keys], rowMode: 'array' })).rows;
          const got = await reads.page(PRODUCTION, f, after, limit);
          const more = want.length > limit;
          const page = want.slice(0, limit);
          t.same(got.seqs, page.map((r) => r[0]), `${caps} ${zone} after ${after} limit ${limit}: seqs`);
          t.same(got.docs.map(String), page.map((r) => r[1]), 'documents');
          t.equal(got.more, more, 'more');
          t.equal(got.last, page.length ? page[page.length - 1]![0] : '', 'last');
        },
      ),
      { numRuns: 150 },
    );
  }
});

t.test('a page walks the whole set in order, page after page', async (t) => {
  const reads = new PgReads(pool, 4, { few: 4, statsMs: 0 });
  for (const cap of CAPS) {
    const f = { ...noFilters(), capabilities: [cap] };
    const all = (await pool.query<{ seq: string }>('SELECT s.seq::text FROM services s JOIN service_capabilities c ON c.service_id = s.id WHERE c.capability = $1 ORDER BY s.seq', [cap])).rows.map((r) => r.seq);
    const walked: string[] = [];
    for (let after = '', n = 0; n < 1000; n++) {
      const p = await reads.page(PRODUCTION, f, after, 7);
      walked.push(...p.seqs);
      if (!p.more) break;
      after = p.last;
    }
    t.same(walked, all, `${cap}: ${all.length} services`);
  }
});

t.test("the fallback pool's connections run a statement in one process, and keep the pools' GIN pending list", async (t) => {
  const p = createPool(db.url, 1, undefined, FALLBACK_SETTINGS);
  t.teardown(() => p.end());
  const r = (await p.query<{ w: string; l: string }>("SELECT current_setting('max_parallel_workers_per_gather') AS w, current_setting('gin_pending_list_limit') AS l")).rows[0]!;
  t.same(r, { w: '0', l: '64kB' });
});
