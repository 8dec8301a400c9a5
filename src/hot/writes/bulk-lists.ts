// The import's other statements (writes/bulk.ts has its upserts): replacement lists set once
// every line is in (their outbox rows index-only: a rebuild covers them), and the pages
// of `registry export`.
import { appendChanges, bumpVersions, loadStatesWhere } from '../registry/index.js';
import { serializeService, type ServiceRecord } from '../domain/service.js';
import { retrying, withTx, type Client, type Pool } from '../pg/pool.js';
import { insertOutbox } from './bulk-copy.js';

/**
 * Set the ranked replacement candidates of services of `ns` (import's second pass, once
 * every line is in). Candidates that are not services of `ns` are dropped and reported.
 * Lists equal to the stored ones are left alone.
 */
export async function bulkReplacements(pool: Pool, ns: string, lists: Map<string, string[]>): Promise<{ changed: number; dropped: { id: string; candidate: string }[] }> {
  const ids = [...lists.keys()];
  return retrying(() =>
    withTx(pool, async (c) => {
      // the listing services' rows are locked (in id order: no deadlock between two imports)
      // before their lists are read, and their versions drawn under that lock
      const own = await c.query<{ id: string }>('SELECT id FROM services WHERE id = ANY($1) AND ns = $2 ORDER BY id FOR UPDATE', [ids, ns]);
      const mine = new Set(own.rows.map((r) => r.id));
      const allCands = [...new Set([...lists.values()].flat())];
      const candRows = await c.query<{ id: string }>('SELECT id FROM services WHERE id = ANY($1) AND ns = $2', [allCands, ns]);
      const cands = new Set(candRows.rows.map((r) => r.id));
      const cur = await c.query<{ service_id: string; list: string[] }>(
        'SELECT service_id, array_agg(candidate_id ORDER BY rank) AS list FROM replacements WHERE service_id = ANY($1) GROUP BY service_id',
        [ids],
      );
      const stored = new Map(cur.rows.map((r) => [r.service_id, r.list.join(',')]));
      const dropped: { id: string; candidate: string }[] = [];
      const change: [string, string[]][] = [];
      for (const [id, list] of lists) {
        if (!mine.has(id)) continue;
        const want = [...new Set(list)].filter((cand) => {
          const ok = cands.has(cand) && cand !== id;
          if (!ok) dropped.push({ id, candidate: cand });
          return ok;
        });
        if ((stored.get(id) ?? '') !== want.join(',')) change.push([id, want]);
      }
      if (!change.length) return { changed: 0, dropped };
      const sids = change.map(([id]) => id);
      await c.query('DELETE FROM replacements WHERE service_id = ANY($1)', [sids]);
      const flat: [string[], string[], number[]] = [[], [], []];
      for (const [id, want] of change) {
        want.forEach((cand, i) => {
          flat[0].push(id);
          flat[1].push(cand);
          flat[2].push(i + 1);
        });
      }
      if (flat[0].length) await c.query('INSERT INTO replacements (service_id, candidate_id, rank) SELECT * FROM unnest($1::text[], $2::text[], $3::int[])', flat);
      await bumpVersions(c, sids);
      await insertOutbox(c, ns, sids);
      // the documents as stored (services.idx_doc: the candidates are not part of them); a
      // row without (written by hand since the migrator filled them) from its state
      const docs = await c.query<{ id: string; d: string | null }>('SELECT id, idx_doc AS d FROM services WHERE id = ANY($1)', [sids]);
      const bare = docs.rows.filter((s) => s.d === null).map((s) => s.id);
      const built = new Map(bare.length ? (await loadStatesWhere(c, 'WHERE s.id = ANY($1)', [bare])).map((s) => [s.id, serializeService(s)]) : []);
      await appendChanges(c, docs.rows.map((s) => ({ ns, serviceId: s.id, type: 'service.updated' as const, data: s.d ?? built.get(s.id)! })));
      return { changed: change.length, dropped };
    }),
  );
}

/** Production (or any namespace's) services in seq order, with their candidate ids: export. */
export async function exportPage(c: Client | Pool, ns: string, afterSeq: number, n: number): Promise<{ s: ServiceRecord; replacements: string[] }[]> {
  const page = await loadStatesWhere(c, 'WHERE s.ns = $1 AND s.seq > $2 ORDER BY s.seq LIMIT $3', [ns, afterSeq, n]);
  if (!page.length) return [];
  const r = await c.query<{ service_id: string; list: string[] }>(
    'SELECT service_id, array_agg(candidate_id ORDER BY rank) AS list FROM replacements WHERE service_id = ANY($1) GROUP BY service_id',
    [page.map((s) => s.id)],
  );
  const lists = new Map(r.rows.map((x) => [x.service_id, x.list]));
  return page.map((s) => ({ s, replacements: lists.get(s.id) ?? [] }));
}
