// Migration 0016: replacement rows carry their service's and their candidate's seqs, which the
// rebuild's page statement reads instead of looking up every id (registry/index-pages.ts).
// Rows written before it get them from the migration; rows written after, by any writer
// (here hand-written SQL), from its trigger; and the pages list the candidates as before.
import t from 'tap';
import { PRODUCTION } from '../../src/hot/domain/keys.js';
import { migrate } from '../../src/hot/migrate.js';
import { loadIndexPage } from '../../src/hot/registry/index-pages.js';
import { createService } from '../../src/hot/writes/register.js';
import { freshPool } from '../helpers/database.js';

const input = (n: number) => ({ endpoint: `https://r${n}.example.com/`, capabilities: ['a'], properties: {}, iot: null, deprecated: false, locked: false, sunsetDate: null });

t.test('0016: replacement rows get their seqs, old and new, and the rebuild pages list the candidates by them', async (t) => {
  const { pool } = await freshPool(t, 2, 15);
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) ids.push((await createService(pool, PRODUCTION, input(i))).id);
  const [a, b, c, d, e] = ids as [string, string, string, string, string];
  const seq = new Map((await pool.query<{ id: string; seq: string }>('SELECT id, seq::text FROM services')).rows.map((r) => [r.id, r.seq]));
  // rows written before 0016, ranked out of insertion order
  const add = (s: string, cand: string, rank: number) => pool.query('INSERT INTO replacements (service_id, candidate_id, rank) VALUES ($1, $2, $3)', [s, cand, rank]);
  await add(a, c, 2);
  await add(a, b, 1);
  await add(d, a, 1);

  t.same(await migrate(pool, undefined, { upTo: 16 }), ['0016_replacements_seqs.sql']);
  await migrate(pool); // the ones after it
  const rows = async () => (await pool.query<{ s: string; c: string; ss: string | null; cs: string | null }>('SELECT service_id AS s, candidate_id AS c, service_seq::text AS ss, candidate_seq::text AS cs FROM replacements ORDER BY 1, 2')).rows;
  for (const r of await rows()) t.same([r.ss, r.cs], [seq.get(r.s), seq.get(r.c)], `${r.s} -> ${r.c}: the migration wrote both seqs`);

  // written after it, by hand: the trigger fills them in
  await add(e, d, 1);
  await add(a, e, 3);
  for (const r of await rows()) t.same([r.ss, r.cs], [seq.get(r.s), seq.get(r.c)], `${r.s} -> ${r.c}: seqs as the services have them`);

  const lists = async (after = 0, n = 100) => new Map((await loadIndexPage(pool, after, n)).map((r) => [r[0], r[7]]));
  const want = (...cands: string[]) => cands.map((x) => seq.get(x)).join(',');
  let got = await lists();
  t.equal(got.get(a), want(b, c, e), 'a service lists its candidates by rank');
  t.equal(got.get(d), want(a));
  t.equal(got.get(e), want(d));
  t.equal(got.get(b), '', 'a service without candidates lists none');
  // pages that cut the range: each service's list comes with its own row
  const paged = new Map<string, string>();
  for (let after = 0; ; ) {
    const page = await loadIndexPage(pool, after, 2);
    if (!page.length) break;
    for (const r of page) paged.set(r[0], r[7]);
    after = Number(page[page.length - 1]![3]);
  }
  t.same(paged, got, 'pages of two list the same');

  // a candidate deleted goes from the lists with its rows (ON DELETE CASCADE)
  await pool.query('DELETE FROM services WHERE id = $1', [b]);
  got = await lists();
  t.equal(got.get(a), want(c, e));
  // a service's seq is needed: a row whose service does not exist is refused by the foreign key
  await t.rejects(add('no-such-service', c, 1), /foreign key/);
});
