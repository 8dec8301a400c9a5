// The migrator's TypeScript step: every row's stored index text (services.idx_doc,
// idx_members, idx_hdr) is indexText() of its state under today's member rule
// (domain/dimensions.ts). The text must be computed by indexText(), not by SQL: one rule,
// written once. Run by migrate() after the SQL migrations, under its lock, on every start:
// with nothing to do it is one read of index_text_rule and one probe of a partial index.
import { MEMBER_RULE } from '../domain/dimensions.js';
import type { Client, Pool } from '../pg/pool.js';
import { indexText, loadStatesWhere } from '../registry/index.js';

/**
 * Fill the rows without index text; when the member rule the stored text was computed under
 * (index_text_rule, migration 0005) is not today's, recompute every row's text first and
 * record today's rule. Returns the rows written.
 */
export async function ensureIndexText(c: Client, log: (msg: string) => void = () => undefined): Promise<number> {
  const stored = (await c.query<{ rule: string }>('SELECT rule FROM index_text_rule')).rows[0]?.rule;
  let n = 0;
  if (stored !== MEMBER_RULE) {
    log(`index text: the member rule changed (${stored ?? 'none'} -> ${MEMBER_RULE}); recomputing every row's`);
    n += await backfillIndexText(c, 2000, () => undefined, true);
    await c.query('DELETE FROM index_text_rule');
    await c.query('INSERT INTO index_text_rule (rule) VALUES ($1)', [MEMBER_RULE]);
  }
  const missing = await c.query('SELECT 1 FROM services WHERE idx_doc IS NULL LIMIT 1');
  if (missing.rowCount) n += await backfillIndexText(c, 2000);
  if (n) log(`index text: ${n} rows written`);
  return n;
}

/**
 * Store the index text (indexText()) of rows that have none — written before migration 0004,
 * or straight into the tables — or, with `all`, of every row (the member rule changed:
 * index-text.ts), in seq order, a page of `n` per statement pair. A row is written only while
 * it is still at the version its state was read at (a write meanwhile stored its own text).
 * Returns the rows written.
 */
export async function backfillIndexText(pool: Client | Pool, n = 2000, progress: (seen: number, filled: number) => void = () => undefined, all = false): Promise<number> {
  let after = 0;
  let seen = 0;
  let filled = 0;
  for (;;) {
    const page = await loadStatesWhere(pool, `WHERE s.seq > $1 ${all ? '' : 'AND s.idx_doc IS NULL'} ORDER BY s.seq LIMIT $2`, [after, n]);
    if (!page.length) return filled;
    after = page[page.length - 1]!.seq;
    seen += page.length;
    const texts = page.map(indexText);
    const r = await pool.query(
      `UPDATE services s SET idx_doc = t.d, idx_members = t.m, idx_hdr = t.h
         FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[]) AS t(id, v, d, m, h)
        WHERE s.id = t.id AND s.version = t.v`,
      [page.map((x) => x.id), page.map((x) => x.version), texts.map((x) => x.doc), texts.map((x) => x.members), texts.map((x) => x.hdr)],
    );
    filled += r.rowCount ?? 0;
    progress(seen, filled);
  }
}
