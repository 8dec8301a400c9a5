-- 0017: one outbox row for many services (issue 46). `registry import` wrote a row per service
-- it wrote (1,000,000 rows for a million-line file), each inserted with the chunk, then deleted
-- one by one by the rebuild that covered it. A row with service_ids stands for each of those
-- ids as a row of its own would (kind 'service'; service_id is then ''): the sweeper applies
-- them together and deletes the row once every one is applied (registry/projector.ts); a rebuild
-- drops it as it drops any index-only row it covered (reindex/covered.ts). Single writes keep
-- their row per service.
ALTER TABLE outbox ADD COLUMN service_ids text[];
ALTER TABLE outbox ADD CONSTRAINT outbox_service_ids_kind CHECK (service_ids IS NULL OR (kind = 'service' AND service_id = ''));
