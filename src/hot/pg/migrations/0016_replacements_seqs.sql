-- 0016: each replacement row carries the seqs of its service and of its candidate (issue 46).
-- A rebuild reads services a seq range at a time; it found their replacement lists by
-- looking up every id of the page in replacements_pkey (2,000 index descents for a few dozen
-- rows), then each candidate's seq in services_pkey: most of PostgreSQL's time in a rebuild at
-- 10,000,000 services (docs/decisions/rebuild.md). With the seqs it reads a range of
-- replacements_service_seq and nothing else. A service's seq never changes, and a row goes
-- with either service (ON DELETE CASCADE), so the trigger sets both once, for every writer
-- (the write functions, registry import, hand-written SQL); the foreign keys still decide
-- whether the services exist (a NULL here is refused by them).
ALTER TABLE replacements ADD COLUMN service_seq bigint, ADD COLUMN candidate_seq bigint;
UPDATE replacements x SET service_seq = s.seq, candidate_seq = c.seq
  FROM services s, services c WHERE s.id = x.service_id AND c.id = x.candidate_id;
CREATE INDEX replacements_service_seq ON replacements (service_seq);
CREATE FUNCTION replacements_seqs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.service_seq := (SELECT s.seq FROM services s WHERE s.id = NEW.service_id);
  NEW.candidate_seq := (SELECT s.seq FROM services s WHERE s.id = NEW.candidate_id);
  RETURN NEW;
END $$;
CREATE TRIGGER replacements_seqs BEFORE INSERT OR UPDATE OF service_id, candidate_id ON replacements
  FOR EACH ROW EXECUTE FUNCTION replacements_seqs();
