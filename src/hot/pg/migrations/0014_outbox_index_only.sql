-- 0014: outbox rows whose apply changes the Redis index only (issue 46). A rebuild reads every
-- service from PostgreSQL after it starts, so it covers such a row once committed; it does not
-- cover a lease already in Redis (it seeds only leases that are missing: lease-apply-2.lua).
-- `registry import` marks the rows it knows to be index-only (every row but those of a lease
-- already in Redis that the import changed); a rebuild deletes the marked rows it covered
-- (src/hot/reindex/covered.ts). Before, an import with --no-reindex left 10,188,500 rows that
-- every server's sweeper applied again after the rebuild. Unmarked rows (every other write)
-- stay for the sweeper, as before.
ALTER TABLE outbox ADD COLUMN index_only boolean NOT NULL DEFAULT false;
