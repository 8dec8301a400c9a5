// A fallback page of sets (fallback/reads.ts page()): a bounded walk, then the GIN index for
// the few matches past it, else the planner's walk. Against real PostgreSQL, on services
// whose sets are common, rare, clustered at one end or held by none, every page for
// generated filters, cursors and sizes must equal what one unbounded statement in seq order
// gives, with bounds small enough that every one of the three reads is taken.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import fc from 'fast-check';
import { cli } from '../helpers/cli.js';
import { freshDatabase } from '../helpers/database.js';
import { noFilters } from '../../src/hot/domain/dimensions.js';
import { PRODUCTION } from '../../src/hot/domain/keys.js';
import { memberKeys, PAGE_SETS } from '../../src/hot/fallback/statements.js';
import { PgReads, type PageBounds } from '../../src/hot/fallback/reads.js';
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

t.test('every page equals the unbounded statement, for bounds that take each read', async (t) => {
  for (const bounds of [{ walk: 7, few: 3 }, { walk: 40, few: 25 }, { walk: 1, few: 1 }] satisfies PageBounds[]) {
    const reads = new PgReads(pool, 4, bounds);
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
  const reads = new PgReads(pool, 4, { walk: 5, few: 4 });
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
