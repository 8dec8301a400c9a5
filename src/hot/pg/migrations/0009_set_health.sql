-- 0009: a lease's status change (a heartbeat that reports passing or critical: store/
-- leases.ts setHealth) in one round trip (issue 22), as the writes of 0008: the row lock,
-- the status, a new version, the stored index text, the outbox row and the change event,
-- one prepared call of a server-side function that returns the state the index and the
-- lease in Redis need (nothing is read after COMMIT). Before, six statements and BEGIN/
-- COMMIT, and the projector read the state again.
--
-- The index text is patched, not rebuilt (the expiry's way, leases.ts expireMany): only the
-- document's health and the health-dependent member lines change with the status. The
-- pieces come from the caller (liveness/health-patch.ts derives them from serializeService()
-- and the table of dimensions, one rule written once): p_pass and p_crit, the document's
-- tail from the health field on for each status, without the ttl and the closing "}}";
-- p_sets, the member lines a passing service has and a critical one has not (they are the
-- last lines of a passing service's member text: health-patch.ts checks that at load).
--
-- Returns no row when there is nothing to write (no such service in p_ns, no lease, the
-- status is already that one); a row with o_row NULL when the stored text cannot be patched
-- (none stored, or not ending as the rule says): the caller writes the general way then.
CREATE FUNCTION registry_set_health(p_id text, p_ns text, p_status text, p_now bigint, p_pass text, p_crit text, p_sets text[], p_lock bigint)
RETURNS TABLE (o_row bigint, o_id text, o_ns text, o_version bigint, o_state json, o_doc text, o_members text, o_hdr text)
LANGUAGE plpgsql AS $$
DECLARE
  cur record;
  was text;
  doc text;
  mem text;
  ob bigint;
BEGIN
  SELECT s.health_status AS hs, s.ttl, s.idx_doc AS d, s.idx_members AS m INTO cur
    FROM services s WHERE s.id = p_id AND s.ns = p_ns FOR UPDATE;
  IF NOT FOUND OR cur.ttl IS NULL OR cur.hs = p_status THEN
    RETURN;
  END IF;
  -- the tail of the document as it stands, and what it becomes
  was := CASE WHEN p_status = 'critical' THEN p_pass ELSE p_crit END || cur.ttl || '}}';
  IF cur.d IS NULL OR right(cur.d, length(was)) IS DISTINCT FROM was OR cur.hs NOT IN ('passing', 'critical') THEN
    RETURN QUERY SELECT NULL::bigint, p_id, p_ns, NULL::bigint, NULL::json, NULL::text, NULL::text, NULL::text;
    RETURN;
  END IF;
  doc := left(cur.d, -length(was)) || CASE WHEN p_status = 'critical' THEN p_crit ELSE p_pass END || cur.ttl || '}}';
  IF p_status = 'critical' THEN
    mem := array_to_string(ARRAY(SELECT x.m FROM unnest(string_to_array(cur.m, E'\n')) WITH ORDINALITY AS x(m, i) WHERE x.m <> ALL(p_sets) ORDER BY x.i), E'\n');
  ELSE
    mem := array_to_string(string_to_array(cur.m, E'\n') || p_sets, E'\n');
  END IF;
  UPDATE services s
     SET health_status = p_status, critical_since = CASE WHEN p_status = 'critical' THEN p_now END, updated_at = now(),
         version = nextval('service_version_seq'), idx_doc = doc, idx_members = mem
   WHERE s.id = p_id;
  INSERT INTO outbox AS o (ns, service_id) VALUES (p_ns, p_id) RETURNING o.id INTO ob;
  RETURN QUERY SELECT ob, st.id, st.ns, st.version, to_json(st), doc, mem, s.idx_hdr
    FROM service_state st JOIN services s ON s.id = st.id WHERE st.id = p_id;
  -- last: the change feed's lock is held from the id draw to COMMIT (registry/events.ts)
  PERFORM pg_advisory_xact_lock(p_lock);
  INSERT INTO change_events (id, ns, service_id, type, data)
    VALUES (nextval('change_events_id_seq'), p_ns, p_id, 'service.updated', doc);
END $$;
