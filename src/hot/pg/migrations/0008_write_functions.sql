-- Writes in one round trip (issue 22): a deletion, a new replacement candidate and a new
-- heartbeat token each run as one server-side function — the whole transaction in one
-- statement of the client, prepared (registry/write-functions.ts) — that returns the states the
-- index needs, so nothing is read after COMMIT.
--
-- Why functions and not one SQL statement, as a registration is (writes.ts): these writes
-- lock rows that already exist and then read what else is committed about them. One
-- statement reads everything in the snapshot it started with; a row lock it waited for may
-- guard rows committed after that snapshot (a replacement listing the service being
-- deleted, inserted by a transaction that held the candidate's key-share lock until it
-- committed). PL/pgSQL takes a new snapshot for each statement (READ COMMITTED), so every
-- read after a lock sees what was committed before the lock was granted: the same reads as
-- the multi-statement transactions these replace.
--
-- service_state: the state of a service as the index wants it (toRecord() in services.ts
-- reads these columns); services.ts's SELECT_STATE selects from it, so the functions and
-- the TypeScript reads cannot disagree. idx_doc rides along for the backfill's filter.
CREATE VIEW service_state AS
  SELECT s.id, s.ns, s.seq, s.version, s.endpoint, s.deprecated, floor(extract(epoch FROM s.deprecated_at))::bigint AS dep_at,
         s.locked, to_char(s.sunset_date, 'YYYY-MM-DD') AS sunset,
         (SELECT array_agg(capability ORDER BY ord) FROM service_capabilities WHERE service_id = s.id) AS caps,
         (SELECT json_object_agg(key, value) FROM service_properties WHERE service_id = s.id) AS props,
         i.device_classes AS dcs, i.protocols AS protos,
         (SELECT array_agg(c.seq ORDER BY r.rank) FROM replacements r JOIN services c ON c.id = r.candidate_id
           WHERE r.service_id = s.id) AS repl,
         s.ttl, s.deregister_after AS dereg, s.health_status AS hs, s.critical_since AS crit, encode(s.hb_token_hash, 'hex') AS tok,
         s.idx_doc
    FROM services s LEFT JOIN iot_profiles i ON i.service_id = s.id;

-- Errors the functions raise, mapped to the contract's errors in write-functions.ts:
--   RG404 no such service in this namespace
--   RG400 the candidate is the service itself
--   RG422 the candidate is not a service of this namespace
--   RG409 the candidate is already listed / the service holds no lease
-- Each returns rows (o_row: the outbox row, NULL for rows that are not writes; o_id, o_ns,
-- o_version: the revision; o_state: the service_state row as JSON, NULL for a deletion).

-- DELETE: the service (a tombstone keeps its revision) and, re-indexed, every service that
-- listed it as a candidate. Rows are locked in id order; a listing service that appears
-- between the first read and the lock is locked afterwards, out of order (a deadlock this
-- may cause is retried by the caller). p_data: the change event's data ({"id"}).
CREATE FUNCTION registry_delete_service(p_id text, p_ns text, p_lock bigint, p_data text)
RETURNS TABLE (o_row bigint, o_id text, o_ns text, o_version bigint, o_state json)
LANGUAGE plpgsql AS $$
DECLARE
  first text[];
  listers text[];
  hit boolean;
  tomb bigint;
  ob bigint;
BEGIN
  first := ARRAY(SELECT r.service_id FROM replacements r WHERE r.candidate_id = p_id);
  SELECT coalesce(bool_or(l.id = p_id AND l.ns = p_ns), false) INTO hit
    FROM (SELECT s.id, s.ns FROM services s WHERE s.id = p_id OR s.id = ANY(first) ORDER BY s.id FOR UPDATE) l;
  IF NOT hit THEN
    RAISE EXCEPTION 'no such service' USING ERRCODE = 'RG404';
  END IF;
  -- with the candidate's row locked no new listing can be inserted (its foreign key check
  -- waits for this transaction), and this statement's snapshot is newer than the lock:
  -- this list is final
  listers := ARRAY(SELECT r.service_id FROM replacements r WHERE r.candidate_id = p_id ORDER BY r.service_id);
  PERFORM 1 FROM services s WHERE s.id = ANY(listers) AND NOT s.id = ANY(first) ORDER BY s.id FOR UPDATE;
  INSERT INTO service_tombstones AS t (id, ns, version) VALUES (p_id, p_ns, nextval('service_version_seq'))
    ON CONFLICT (id) DO UPDATE SET ns = EXCLUDED.ns, version = EXCLUDED.version
    RETURNING t.version INTO tomb;
  DELETE FROM services s WHERE s.id = p_id;
  -- the listing services' documents lose a candidate: new versions, drawn holding their locks
  UPDATE services s SET version = nextval('service_version_seq') WHERE s.id = ANY(listers);
  INSERT INTO outbox AS o (ns, service_id) VALUES (p_ns, p_id) RETURNING o.id INTO ob;
  RETURN QUERY SELECT ob, p_id, p_ns, tomb, NULL::json;
  RETURN QUERY
    WITH o AS (INSERT INTO outbox AS x (ns, service_id) SELECT p_ns, u FROM unnest(listers) u RETURNING x.id, x.service_id)
    SELECT o.id, st.id, st.ns, st.version, to_json(st) FROM o JOIN service_state st ON st.id = o.service_id;
  -- last: the change feed's lock is held from the id draw to COMMIT (registry/events.ts)
  PERFORM pg_advisory_xact_lock(p_lock);
  INSERT INTO change_events (id, ns, service_id, type, data)
    VALUES (nextval('change_events_id_seq'), p_ns, p_id, 'service.deleted', p_data);
END $$;

-- POST .../replacements: list p_cand as the last-ranked candidate of p_id. Returns the
-- service's new state (with its outbox row), then its candidates' states in rank order
-- (o_row NULL): the response.
CREATE FUNCTION registry_add_replacement(p_id text, p_ns text, p_cand text, p_lock bigint)
RETURNS TABLE (o_row bigint, o_id text, o_ns text, o_version bigint, o_state json)
LANGUAGE plpgsql AS $$
DECLARE
  ob bigint;
  n integer;
BEGIN
  PERFORM 1 FROM services s WHERE s.id = p_id AND s.ns = p_ns FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'no such service' USING ERRCODE = 'RG404';
  END IF;
  IF p_cand = p_id THEN
    RAISE EXCEPTION 'a service cannot replace itself' USING ERRCODE = 'RG400';
  END IF;
  PERFORM 1 FROM services s WHERE s.id = p_cand AND s.ns = p_ns;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'not a service of this namespace' USING ERRCODE = 'RG422';
  END IF;
  -- the candidate deleted after that check: its foreign key check waited for the delete
  BEGIN
    INSERT INTO replacements (service_id, candidate_id, rank)
      SELECT p_id, p_cand, coalesce(max(r.rank), 0) + 1 FROM replacements r WHERE r.service_id = p_id
      ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
  EXCEPTION WHEN foreign_key_violation THEN
    RAISE EXCEPTION 'not a service of this namespace' USING ERRCODE = 'RG422';
  END;
  IF n = 0 THEN
    RAISE EXCEPTION 'already a candidate' USING ERRCODE = 'RG409';
  END IF;
  -- the candidates are not in the document, members or header: the stored index text stays
  UPDATE services s SET version = nextval('service_version_seq') WHERE s.id = p_id;
  INSERT INTO outbox AS o (ns, service_id) VALUES (p_ns, p_id) RETURNING o.id INTO ob;
  RETURN QUERY SELECT ob, st.id, st.ns, st.version, to_json(st) FROM service_state st WHERE st.id = p_id;
  RETURN QUERY SELECT NULL::bigint, st.id, st.ns, st.version, to_json(st)
    FROM replacements r JOIN service_state st ON st.id = r.candidate_id WHERE r.service_id = p_id ORDER BY r.rank;
  PERFORM pg_advisory_xact_lock(p_lock);
  INSERT INTO change_events (id, ns, service_id, type, data)
    SELECT nextval('change_events_id_seq'), p_ns, p_id, 'service.updated', s.idx_doc FROM services s WHERE s.id = p_id;
END $$;

-- POST .../heartbeat-token: a new token hash for a leased service, with a new version (the
-- document does not change: no change event).
CREATE FUNCTION registry_rotate_token(p_id text, p_ns text, p_hash bytea)
RETURNS TABLE (o_row bigint, o_id text, o_ns text, o_version bigint, o_state json)
LANGUAGE plpgsql AS $$
DECLARE
  leased boolean;
  ob bigint;
BEGIN
  SELECT s.ttl IS NOT NULL INTO leased FROM services s WHERE s.id = p_id AND s.ns = p_ns FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'no such service' USING ERRCODE = 'RG404';
  END IF;
  IF NOT leased THEN
    RAISE EXCEPTION 'no lease' USING ERRCODE = 'RG409';
  END IF;
  UPDATE services s SET hb_token_hash = p_hash, version = nextval('service_version_seq') WHERE s.id = p_id;
  INSERT INTO outbox AS o (ns, service_id) VALUES (p_ns, p_id) RETURNING o.id INTO ob;
  RETURN QUERY SELECT ob, st.id, st.ns, st.version, to_json(st) FROM service_state st WHERE st.id = p_id;
END $$;
