// The rebuild's reads of PostgreSQL: every service in seq order, a page per statement,
// already as index-page-1.lua's arguments (the index text each write stored), and the
// tombstones of deleted services and of capabilities left. Used by reindex/rebuild.ts.
import { indexText, loadStatesWhere } from './state.js';
import type { Client, Pool } from '../pg/pool.js';

/**
 * One service of a rebuild page, already in index-page.lua's terms (its ARGV, plus ns):
 * [id, ns, version, seq, doc, members, hdr, repl]. doc, members and hdr are the index text
 * the write stored with the state (indexText()); repl, the candidate seqs joined by ",", is
 * aggregated per page. The rebuilding process only passes strings on.
 * test/pg/rebuild-bytes.test.ts holds them byte-identical to the write path's.
 */
export type IndexPageRow = [id: string, ns: string, version: string, seq: string, doc: string, members: string, hdr: string, repl: string];

// Every row has its index text: every write stores it, and the migrator fills the rows
// written without it (before migration 0004, or straight into the tables) and recomputes it
// when the member rule changed (index-text.ts). A row found without it all the same (written
// by hand since) gets it from indexText() over its state, read at this page's version: the
// member rule is written once (domain/dimensions.ts), never again in SQL. The replacement
// lists come from the page's seq range of replacements, with their candidates' seqs
// (migration 0016): no look-up of each id.
const INDEX_PAGE = `
WITH s AS MATERIALIZED (
  SELECT id, ns, seq, version, idx_doc, idx_members, idx_hdr
    FROM services WHERE seq > $1 ORDER BY seq LIMIT $2),
r AS (
  SELECT x.service_seq, string_agg(x.candidate_seq::text, ',' ORDER BY x.rank) AS l
    FROM replacements x
   WHERE x.service_seq > $1 AND x.service_seq <= (SELECT max(seq) FROM s) GROUP BY x.service_seq)
SELECT s.id, s.ns, s.version::text, s.seq::text, s.idx_doc, s.idx_members, s.idx_hdr, coalesce(r.l, '')
  FROM s LEFT JOIN r ON r.service_seq = s.seq
 ORDER BY s.seq`;

/**
 * Page through every service in seq order (rebuild), as index-page.lua's arguments: one
 * statement per page, rows as arrays of text (no row objects, no Date or array parsing), so
 * the rebuilding process builds nothing per service (docs/decisions/rebuild.md).
 */
export async function loadIndexPage(pool: Client | Pool, afterSeq: number, n: number): Promise<IndexPageRow[]> {
  // named: prepared once per connection, not parsed and planned for every page
  const r = await pool.query<(string | null)[]>({ name: 'rebuild-index-page', text: INDEX_PAGE, values: [afterSeq, n], rowMode: 'array' });
  const rows = r.rows;
  const bare = rows.filter((x) => x[4] === null || x[5] === null || x[6] === null);
  if (bare.length) {
    // read with the version: a row written since this page was read is read again
    const states = await loadStatesWhere(pool, 'WHERE s.id = ANY($1)', [bare.map((x) => x[0])]);
    const byId = new Map(states.map((st) => [st.id, st]));
    for (const x of bare) {
      const st = byId.get(x[0]!);
      if (!st) continue; // deleted since: its tombstone is indexed
      const t = indexText(st);
      x[2] = String(st.version);
      x[4] = t.doc;
      x[5] = t.members;
      x[6] = t.hdr;
    }
  }
  return rows.filter((x) => x[4] !== null) as IndexPageRow[];
}

/** Page through the tombstones of deleted services in id order (rebuild). */
export async function loadTombstonePage(c: Client | Pool, afterId: string, n: number): Promise<{ id: string; ns: string; version: number }[]> {
  const r = await c.query<{ id: string; ns: string; version: string }>('SELECT id, ns, version FROM service_tombstones WHERE id > $1 ORDER BY id LIMIT $2', [afterId, n]);
  return r.rows.map((x) => ({ id: x.id, ns: x.ns, version: Number(x.version) }));
}

/** Who left a capability of a namespace, at the service's revision now (rebuild: capability-tombstones-1.lua). */
export interface CapabilityTombstone {
  ns: string;
  capability: string;
  id: string;
  version: string;
}

// the service's version now (or its tombstone's, once deleted): at least the revision its
// leaving was applied at; rows whose service holds the capability in that namespace again
// are not needed (docs/decisions/consul-index.md). One text for the rebuild (all of them,
// paged) and for the fallback's catalog (one namespace's: fallback/statements.ts), so that
// PostgreSQL's X-Consul-Index is the one a rebuild gives.
const TOMBSTONE_ROWS = `
SELECT ct.ns, ct.capability, ct.service_id AS id, coalesce(s.version, t.version)::text AS version
  FROM capability_tombstones ct
  LEFT JOIN services s ON s.id = ct.service_id
  LEFT JOIN service_tombstones t ON t.id = ct.service_id
 WHERE coalesce(s.version, t.version) IS NOT NULL
   AND NOT EXISTS (SELECT 1 FROM service_capabilities c WHERE c.service_id = ct.service_id AND c.capability = ct.capability AND s.ns = ct.ns)`;

const CAPABILITY_TOMBSTONES = `${TOMBSTONE_ROWS}
   AND (ct.ns, ct.capability, ct.service_id) > ($1, $2, $3)
 ORDER BY ct.ns, ct.capability, ct.service_id LIMIT $4`;

/**
 * The capability tombstones of namespace $1 as the rebuild writes them (ns, capability, id,
 * version): of capability $2, or of every capability when $2 is ''.
 */
export const NAMESPACE_CAPABILITY_TOMBSTONES = `${TOMBSTONE_ROWS}
   AND ct.ns = $1 AND ($2 = '' OR ct.capability = $2)`;

/** Page through the capability tombstones in (ns, capability, id) order, after `after` (rebuild). */
export async function loadCapabilityTombstonePage(c: Client | Pool, after: readonly [string, string, string], n: number): Promise<CapabilityTombstone[]> {
  return (await c.query<CapabilityTombstone>(CAPABILITY_TOMBSTONES, [...after, n])).rows;
}
