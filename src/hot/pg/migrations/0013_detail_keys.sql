-- 0013: the details of a service (capabilities, properties, IoT profile) hold to their
-- service by statement triggers instead of foreign keys (issue 46: `registry import` of
-- 1,000,000 services). A foreign key checks every inserted row with a query of its own that
-- locks the service row (a WAL record): ~5.5 checks a service, 20-38 µs of PostgreSQL CPU
-- a service in an import, a fifth to a third of its PostgreSQL time
-- (docs/decisions/import.md). One statement-level check a table and statement does the same
-- work set-based, and locks only the services another transaction wrote.
--
-- What the foreign keys guaranteed, each kept here:
-- - no detail row without its service: a statement that inserts detail rows locks their
--   services FOR KEY SHARE (as the key's check does: a concurrent deletion waits for this
--   transaction, or this statement for it and then finds the service gone) and fails with
--   23503 (foreign_key_violation) when one is missing;
-- - ON DELETE CASCADE: the deletion of services deletes their details in the same statement
--   (the triggers of the detail tables, capability_left, see them go as before) and TRUNCATE
--   empties them;
-- - a detail's service_id and a service's id never change (no writer changes either).
ALTER TABLE service_capabilities DROP CONSTRAINT service_capabilities_service_id_fkey;
ALTER TABLE service_properties DROP CONSTRAINT service_properties_service_id_fkey;
ALTER TABLE iot_profiles DROP CONSTRAINT iot_profiles_service_id_fkey;

CREATE FUNCTION registry_details_have_service() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  mine xid := xid(pg_current_xact_id());
  missing text;
  theirs text[];
BEGIN
  -- one join: the services missing, and those this transaction did not write (xmin). The ones
  -- it wrote need no lock: no other can delete them before it commits (an import, a
  -- registration and a patch write the service, then its details), and a lock costs a WAL
  -- record a row
  SELECT min(n.service_id) FILTER (WHERE s.id IS NULL), array_agg(s.id ORDER BY s.id) FILTER (WHERE s.xmin <> mine)
    INTO missing, theirs
    FROM (SELECT DISTINCT service_id FROM new_rows) n LEFT JOIN services s ON s.id = n.service_id;
  IF missing IS NULL AND theirs IS NOT NULL THEN
    -- locked in id order (two statements locking overlapping sets cannot deadlock on them);
    -- one deleted meanwhile is not returned (READ COMMITTED: the deletion waited for, then seen)
    SELECT min(t.id) INTO missing FROM unnest(theirs) AS t(id)
     WHERE t.id NOT IN (SELECT s.id FROM services s WHERE s.id = ANY(theirs) ORDER BY s.id FOR KEY SHARE);
  END IF;
  IF missing IS NOT NULL THEN
    RAISE EXCEPTION 'insert on table "%" violates the service of its details', TG_TABLE_NAME
      USING ERRCODE = 'foreign_key_violation', DETAIL = format('Key (service_id)=(%s) is not present in table "services".', missing);
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER service_capabilities_have_service AFTER INSERT ON service_capabilities
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION registry_details_have_service();
CREATE TRIGGER service_properties_have_service AFTER INSERT ON service_properties
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION registry_details_have_service();
CREATE TRIGGER iot_profiles_have_service AFTER INSERT ON iot_profiles
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION registry_details_have_service();

CREATE FUNCTION registry_key_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'the % of a row of "%" cannot change', TG_ARGV[0], TG_TABLE_NAME USING ERRCODE = 'RG400';
END $$;
CREATE TRIGGER services_id_fixed BEFORE UPDATE OF id ON services
  FOR EACH ROW WHEN (OLD.id IS DISTINCT FROM NEW.id) EXECUTE FUNCTION registry_key_fixed('id');
CREATE TRIGGER service_capabilities_key_fixed BEFORE UPDATE OF service_id ON service_capabilities
  FOR EACH ROW WHEN (OLD.service_id IS DISTINCT FROM NEW.service_id) EXECUTE FUNCTION registry_key_fixed('service_id');
CREATE TRIGGER service_properties_key_fixed BEFORE UPDATE OF service_id ON service_properties
  FOR EACH ROW WHEN (OLD.service_id IS DISTINCT FROM NEW.service_id) EXECUTE FUNCTION registry_key_fixed('service_id');
CREATE TRIGGER iot_profiles_key_fixed BEFORE UPDATE OF service_id ON iot_profiles
  FOR EACH ROW WHEN (OLD.service_id IS DISTINCT FROM NEW.service_id) EXECUTE FUNCTION registry_key_fixed('service_id');

-- the cascade: once per deleting statement, by id (each detail table's service_id leads its
-- primary key)
CREATE FUNCTION registry_delete_details() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    TRUNCATE service_capabilities, service_properties, iot_profiles;
    RETURN NULL;
  END IF;
  DELETE FROM service_capabilities WHERE service_id IN (SELECT o.id FROM old_rows o);
  DELETE FROM service_properties WHERE service_id IN (SELECT o.id FROM old_rows o);
  DELETE FROM iot_profiles WHERE service_id IN (SELECT o.id FROM old_rows o);
  RETURN NULL;
END $$;
CREATE TRIGGER services_details_deleted AFTER DELETE ON services
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION registry_delete_details();
CREATE TRIGGER services_details_truncated AFTER TRUNCATE ON services
  FOR EACH STATEMENT EXECUTE FUNCTION registry_delete_details();
