-- 0003: revisions that cannot go backwards (issue 15; rule in redis/README.md, "Revisions").
-- The revision the index applies is read in the same statement as the state it describes:
--  * services.version: drawn from one global sequence by every transaction that changes
--    what the service's document or index sets contain, AFTER that transaction holds the
--    service's row lock, so a later committed change always carries a larger version (one
--    sequence for all services: an id re-created by an import still outranks its tombstone);
--  * service_tombstones: the version a deletion was made at (kept: Redis keeps the
--    revisions of deleted ids too, and a rebuild writes them back);
--  * sandboxes.version: bumped under the row lock by every change of what Redis copies
--    (the tier), applied through the outbox like a service write.
CREATE SEQUENCE service_version_seq;
-- start above every revision an existing index generation may hold (they were outbox ids)
SELECT setval('service_version_seq', GREATEST((SELECT last_value FROM outbox_id_seq), 1) + 1, true);
ALTER TABLE services ADD COLUMN version bigint;
UPDATE services SET version = (SELECT last_value FROM service_version_seq);
ALTER TABLE services ALTER COLUMN version SET NOT NULL, ALTER COLUMN version SET DEFAULT nextval('service_version_seq');

CREATE TABLE service_tombstones (
  id       text PRIMARY KEY,
  ns       text NOT NULL,
  version  bigint NOT NULL
);
-- writes of services already gone whose outbox rows are still pending
INSERT INTO service_tombstones (id, ns, version)
SELECT DISTINCT ON (o.service_id) o.service_id, o.ns, (SELECT last_value FROM service_version_seq)
  FROM outbox o WHERE NOT EXISTS (SELECT 1 FROM services s WHERE s.id = o.service_id);

-- the outbox also carries sandbox metadata changes (service_id is then the sandbox uuid);
-- its id is now only the row's identity, no longer a revision
ALTER TABLE outbox ADD COLUMN kind text NOT NULL DEFAULT 'service' CHECK (kind IN ('service', 'sandbox'));

ALTER TABLE sandboxes ADD COLUMN version bigint NOT NULL DEFAULT 1;
