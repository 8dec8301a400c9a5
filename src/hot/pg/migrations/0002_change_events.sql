-- 0002: the change feed (GET /services/changes). One row per service write, inserted in the
-- same transaction as the write, so the feed is exactly as durable as the registry.
-- Writers take a transaction-scoped advisory lock right before inserting their row and keep
-- it until COMMIT (src/hot/registry/events.ts): ids are therefore handed out in commit order,
-- and a reader that sees id N has already been able to see every smaller id that will ever
-- exist. That is what makes `Last-Event-ID` resumption gap-free with a plain `id > last`.
CREATE TABLE change_events (
  id          bigserial PRIMARY KEY,
  ns          text NOT NULL,                       -- 'production' or a sandbox uuid
  service_id  text NOT NULL,
  type        text NOT NULL CHECK (type IN ('service.created', 'service.updated', 'service.deprecated', 'service.deleted')),
  data        text NOT NULL,                       -- the service object as JSON ({"id"} when deleted)
  created_at  timestamptz NOT NULL DEFAULT now()
);
-- streams read one namespace after an id
CREATE INDEX change_events_ns_id ON change_events (ns, id);
-- retention pruning
CREATE INDEX change_events_created ON change_events (created_at);
