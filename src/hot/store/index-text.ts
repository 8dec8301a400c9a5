// The migrator's TypeScript step: every row's stored index text (services.idx_doc,
// idx_members, idx_hdr) is indexText() of its state under today's member rule
// (domain/dimensions.ts). The text must be computed by indexText(), not by SQL: one rule,
// written once. Run by migrate() after the SQL migrations, under its lock, on every start:
// with nothing to do it is one read of index_text_rule and one probe of a partial index.
import { MEMBER_RULE } from '../domain/dimensions.js';
import type { Client } from './pool.js';
import { backfillIndexText } from './services.js';

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
