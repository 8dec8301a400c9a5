-- 0011: reads from PostgreSQL while the Redis index is away (issue 45; contract,
-- "Availability"; src/hot/fallback/). A search selects the services of one namespace whose
-- stored member lines (services.idx_members: documentMembers() of the state, written with it
-- by every write and recomputed by the migrator when the table of dimensions changes) hold
-- every set the query names (filterSuffixes()): the very lines the Redis sets are built from.
-- No SQL here knows a dimension.
--
-- registry_member_keys(ns, members): each member line prefixed by its namespace and a tab
-- (a tab never occurs in a namespace or a member: tokens and property values exclude control
-- characters), so that one GIN index answers "namespace N, sets A and B" without a scan of
-- the other namespaces. src/hot/fallback/statements.ts memberKeys() builds the same keys for
-- a query (test/fallback/member-keys.test.ts holds the two together).
CREATE FUNCTION registry_member_keys(p_ns text, p_members text) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
AS $$ SELECT string_to_array(p_ns || E'\t' || replace(p_members, E'\n', E'\n' || p_ns || E'\t'), E'\n') $$;

-- fastupdate off: a registration inserts its ~12 keys into the posting trees at once rather
-- than into a pending list that some later write (or autovacuum) must merge — the merge, a
-- few MB at a time, landed on one registration's latency (bench/README.md, "Writes against
-- pgbench")
CREATE INDEX services_member_keys ON services USING gin (registry_member_keys(ns, idx_members)) WITH (fastupdate = off);

-- the planner chooses between this index (rare sets) and services_ns_seq (common ones) by the
-- expression's statistics: gather them now rather than at the next autovacuum
ANALYZE services;
