// The fallback's SQL: a page of a search, one service, a replacement list, the Consul
// catalog's members and tombstones, all from the index
// text each write stores with its state (services.idx_doc, idx_members, idx_hdr: the strings
// a rebuild sends to Redis, registry/state.ts indexText()). A search names its sets with
// filterSuffixes() and finds them in the stored member lines (migration 0011): the table of
// dimensions is read by the same two functions as for Redis, and written into no SQL.
import { filterSuffixes, type DimensionFilters } from '../domain/dimensions.js';
import { NAMESPACE_CAPABILITY_TOMBSTONES } from '../registry/index.js';

/**
 * The GIN keys of a search's sets in namespace `ns`: `<ns>\t<suffix>`, as
 * registry_member_keys() (migration 0011) makes them of a row's member lines. Empty when the
 * search names no set but `all` (every service of the namespace: no key to look up).
 */
export function memberKeys(ns: string, f: Partial<DimensionFilters>): string[] {
  const sets = filterSuffixes(f);
  if (sets.length === 1 && sets[0] === 'all') return [];
  return sets.map((s) => ns + '\t' + s);
}

// Rows whose index text is missing (written by hand into the tables since the migrator last
// filled them: reindex/index-text.ts) are left out, as documents a page could not show.
// seq::text: the cursor as the index writes it; ORDER BY s.seq, the column (a bare `seq` would
// name the text output column and sort '10' before '2').

/** Page of a namespace (no set named): $1 ns, $2 after seq, $3 rows. */
export const PAGE_ALL = `
  SELECT s.seq::text, s.idx_doc FROM services s
   WHERE s.ns = $1 AND s.seq > $2 AND s.idx_doc IS NOT NULL
   ORDER BY s.seq LIMIT $3`;

/**
 * Page of the services holding every key of $4 (memberKeys()): the planner takes the GIN index
 * for rare sets and walks services_ns_seq for common ones, by the expression's statistics (a
 * fresh plan per call: unnamed statements, never a generic plan blind to the keys).
 */
export const PAGE_SETS = `
  SELECT s.seq::text, s.idx_doc FROM services s
   WHERE s.ns = $1 AND s.seq > $2 AND registry_member_keys(s.ns, s.idx_members) @> $4::text[]
   ORDER BY s.seq LIMIT $3`;

/**
 * The services past $2 holding every key of $3, through the GIN index (run with index and
 * sequential scans off: setsPage() in reads.ts), at most $4 of them: a first row
 * ['', <how many>], then, when fewer than $4, the first $5 of them in seq order. Its cost is
 * the key's matches in the index, not the rows between them.
 */
export const PAGE_SETS_FEW = `
  WITH m AS MATERIALIZED (
    SELECT s.seq FROM services s
     WHERE s.ns = $1 AND s.seq > $2 AND registry_member_keys(s.ns, s.idx_members) @> $3::text[] AND s.idx_doc IS NOT NULL
     LIMIT $4)
  SELECT '', count(*)::text FROM m
  UNION ALL
  (SELECT s.seq::text, s.idx_doc FROM services s
    WHERE (SELECT count(*) FROM m) < $4 AND s.seq IN (SELECT seq FROM m ORDER BY seq LIMIT $5)
    ORDER BY s.seq)`;

/** One service: $1 ns, $2 id. */
export const SERVICE = `SELECT seq::text, idx_doc, coalesce(idx_hdr, '') FROM services WHERE ns = $1 AND id = $2 AND idx_doc IS NOT NULL`;

/**
 * A service's header data and its candidates' documents joined by "," in rank order
 * (replacements-1.lua joins the same documents the same way): $1 ns, $2 id.
 */
export const REPLACEMENTS = `
  SELECT coalesce(s.idx_hdr, ''),
         coalesce((SELECT string_agg(c.idx_doc, ',' ORDER BY r.rank)
                     FROM replacements r JOIN services c ON c.id = r.candidate_id
                    WHERE r.service_id = s.id AND c.ns = s.ns AND c.idx_doc IS NOT NULL), '')
    FROM services s WHERE s.ns = $1 AND s.id = $2 AND s.idx_doc IS NOT NULL`;

/**
 * The Consul catalog's read (catalog-1.lua's): the members, at most $3 of them (more: too
 * many), with their revisions — of the keys $4 (memberKeys() of a capability) or of the whole
 * namespace $1 — and the capability tombstones of capability $2 ('' for every capability) as
 * the rebuild writes them. One statement, so one snapshot: a service that joins or leaves
 * between two reads would drop out of both lists, and its term out of the index.
 * Rows: 'm', seq, document, revision | 't', capability, id, revision.
 */
const catalog = (where: string) => `
  WITH m AS (SELECT s.seq, s.idx_doc, s.version FROM services s
              WHERE s.ns = $1 AND s.idx_doc IS NOT NULL${where}
              ORDER BY s.seq LIMIT $3)
  SELECT 'm', m.seq::text, m.idx_doc, m.version::text FROM m
  UNION ALL
  SELECT 't', t.capability, t.id, t.version FROM (${NAMESPACE_CAPABILITY_TOMBSTONES}) t`;

/** Every service of namespace $1 ($4 unused: absent). */
export const CATALOG_ALL = catalog('');

/** The services of namespace $1 holding every key of $4. */
export const CATALOG_SETS = catalog(' AND registry_member_keys(s.ns, s.idx_members) @> $4::text[]');
