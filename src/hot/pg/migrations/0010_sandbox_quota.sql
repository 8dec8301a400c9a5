-- 0010: services per sandbox (issue 41, the tier's quota, TIER_MAX_SERVICES). Each sandbox
-- row counts its services; a registration locks the rows of its sandboxes, reads the
-- count and inserts only what the quota leaves room for (writes/register.ts), so that
-- concurrent writes of one sandbox pass the check one after the other
-- (docs/decisions/sandbox-quota.md).
--
-- The count is kept by triggers on services, in the transaction of every statement that
-- inserts or deletes services — registrations, batches, deletions, deregistrations of
-- expired leases, imports, anything written later — so it cannot drift from the rows:
-- service_count = count(*) of services WHERE ns = uuid, always (test/pg/quota.test.ts).
-- Statement triggers with transition tables: one UPDATE per statement and sandbox, not one
-- per row (a batch of 1,000 would otherwise write the same row 1,000 times). A namespace
-- without a sandbox row (production; tests writing through the store) is counted nowhere.
--
-- Lock order, the same on every path that changes a count: sandbox rows (uuid order), then
-- service rows, then the change feed's lock (registry/events.ts) — the callers of
-- registry_delete_service lock the sandboxes first (write-functions.ts).
ALTER TABLE sandboxes ADD COLUMN service_count integer NOT NULL DEFAULT 0 CHECK (service_count >= 0);

CREATE FUNCTION registry_count_services() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  u uuid[];
  n integer[];
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    UPDATE sandboxes SET service_count = 0 WHERE service_count <> 0;
    RETURN NULL;
  END IF;
  -- per sandbox, in uuid order (the CASE: ns is a uuid's text or 'production', and the
  -- cast must never see the latter)
  IF TG_OP = 'INSERT' THEN
    SELECT array_agg(x.u ORDER BY x.u), array_agg(x.n ORDER BY x.u) INTO u, n
      FROM (SELECT CASE WHEN r.ns <> 'production' THEN r.ns::uuid END AS u, count(*)::int AS n FROM new_rows r WHERE r.ns <> 'production' GROUP BY r.ns) x;
  ELSE
    SELECT array_agg(x.u ORDER BY x.u), array_agg(-x.n ORDER BY x.u) INTO u, n
      FROM (SELECT CASE WHEN r.ns <> 'production' THEN r.ns::uuid END AS u, count(*)::int AS n FROM old_rows r WHERE r.ns <> 'production' GROUP BY r.ns) x;
  END IF;
  IF u IS NULL THEN
    RETURN NULL; -- production only: nothing to count
  END IF;
  -- locked in uuid order before the update (which locks in no particular order): the
  -- registry's writers hold these locks already; this keeps any other writer (a bulk load's
  -- concurrent INSERTs across sandboxes) free of deadlocks too
  PERFORM 1 FROM sandboxes b WHERE b.uuid = ANY(u) ORDER BY b.uuid FOR NO KEY UPDATE;
  UPDATE sandboxes b SET service_count = b.service_count + d.n FROM unnest(u, n) AS d(u, n) WHERE b.uuid = d.u;
  RETURN NULL;
END $$;

CREATE TRIGGER services_counted_insert AFTER INSERT ON services
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION registry_count_services();
CREATE TRIGGER services_counted_delete AFTER DELETE ON services
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION registry_count_services();
CREATE TRIGGER services_counted_truncate AFTER TRUNCATE ON services
  FOR EACH STATEMENT EXECUTE FUNCTION registry_count_services();

-- No writer moves a service to another namespace (an import refuses an id of another one):
-- should one try, it fails here instead of leaving two counts wrong.
CREATE FUNCTION registry_ns_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'a service cannot change its namespace' USING ERRCODE = 'RG400';
END $$;
CREATE TRIGGER services_ns_fixed BEFORE UPDATE OF ns ON services
  FOR EACH ROW WHEN (OLD.ns IS DISTINCT FROM NEW.ns) EXECUTE FUNCTION registry_ns_fixed();

-- the services already there, counted after the triggers exist: CREATE TRIGGER holds a lock
-- on services that keeps every writer out until this transaction commits
UPDATE sandboxes b SET service_count = d.n
  FROM (SELECT ns::uuid AS u, count(*)::int AS n FROM services WHERE ns <> 'production' GROUP BY ns) d
 WHERE b.uuid = d.u;
