-- 0006: leases and heartbeats (issue 23; contract "Liveness: leases and heartbeats").
-- The lease's terms and its durable status live on the service row: a status change is a
-- write like any other (version, outbox, change event). Deadlines do not: a heartbeat that
-- changes nothing renews a deadline in Redis only (src/hot/liveness/,
-- docs/decisions/leases.md). critical_since is in ms of the serving node's clock (injectable in tests).
ALTER TABLE services
  ADD COLUMN ttl integer CHECK (ttl BETWEEN 5 AND 86400),
  ADD COLUMN deregister_after integer CHECK (deregister_after BETWEEN 60 AND 604800),
  ADD COLUMN health_status text NOT NULL DEFAULT 'unknown' CHECK (health_status IN ('unknown', 'passing', 'critical')),
  ADD COLUMN critical_since bigint,
  ADD COLUMN hb_token_hash bytea;
-- the stored index text of existing rows gains the new field and the "healthy" set (every
-- existing service is "unknown", hence healthy): the document ends with "health", so the
-- text is extended, not rebuilt
UPDATE services SET idx_doc = left(idx_doc, -1) || ',"health":{"status":"unknown","ttl":null}}',
                    idx_members = idx_members || E'\nh'
 WHERE idx_doc IS NOT NULL;
-- the sweeper's durable side: leased services by status (dashboard counts, reseed after a loss of Redis)
CREATE INDEX services_leased ON services (ns) WHERE ttl IS NOT NULL;
