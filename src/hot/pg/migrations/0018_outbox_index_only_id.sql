-- 0018: the index-only outbox rows by id (issue 46). Every OUTBOX_SWEEP_MS a server asks whether
-- `registry import` left a backlog that a rebuild covers sooner than the sweeper applies it
-- (src/hot/reindex/backlog.ts): this partial index keeps the question to those rows (a few
-- hundred a million services: one a chunk), however many other rows wait (a Redis outage).
CREATE INDEX outbox_index_only ON outbox (id) WHERE index_only;
