-- 0012: which services left which capability (issue 44: the Consul-compatible catalog's
-- X-Consul-Index). A capability's index sums its members' revisions and, for every service
-- that was a member and is not one now, a revision at least as new as its leaving
-- (docs/decisions/consul-index.md). The revisions are in services.version and
-- service_tombstones.version already; the history of who left is not: one row per
-- (namespace, capability, service) that ever lost that capability row, kept like the
-- service tombstones (a row whose service holds the capability again is ignored by readers).
CREATE TABLE capability_tombstones (
  ns          text NOT NULL,
  capability  text NOT NULL,
  service_id  text NOT NULL,
  PRIMARY KEY (ns, capability, service_id)
);

-- One statement-level trigger for every way a capability row goes: a patch's replacement of
-- the list, an import's rewrite, a deletion's cascade. It records only who left (no version:
-- the rebuild reads the service's version then, which is at least the revision its leaving
-- was applied at in Redis), so it needs nothing the statement has not finished yet. The
-- namespace comes from the service, or from its tombstone when the deletion removed it.
CREATE FUNCTION registry_capability_left() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO capability_tombstones (ns, capability, service_id)
  SELECT DISTINCT coalesce(s.ns, t.ns), g.capability, g.service_id
    FROM gone g LEFT JOIN services s ON s.id = g.service_id LEFT JOIN service_tombstones t ON t.id = g.service_id
   WHERE coalesce(s.ns, t.ns) IS NOT NULL
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;

CREATE TRIGGER capability_left AFTER DELETE ON service_capabilities
  REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION registry_capability_left();
