-- 0015: the fallback reads' GIN index takes new keys into its pending list (issue 46). With
-- fastupdate off (0011) every row inserted its ~8 keys into the posting trees one by one, the
-- largest cost of `registry import` (docs/decisions/import.md). The pending list is merged
-- into the trees in bulk once it outgrows the session's gin_pending_list_limit (no limit is
-- set on the index, so that each session chooses): the project's pools ask for the smallest
-- (src/hot/pg/pool.ts), so that a registration's share of a merge stays small; the import's
-- transactions raise it for themselves and merge what is left when done
-- (src/hot/writes/bulk.ts). docs/decisions/fallback-reads.md.
ALTER INDEX services_member_keys SET (fastupdate = on);
