-- 0007: every stored endpoint becomes its WHATWG URL serialisation (issue 24: lower-case
-- scheme and host, IDN hosts as punycode, default port dropped; user info removed). The
-- serialisation is WHATWG's URL parser, which SQL does not have: the work is done by
-- reindex/endpoints.ts (normaliseStoredEndpoints), which the migrator runs in this same
-- transaction right after this file (migrator.ts, CODE). Rows are rewritten as a write
-- would: new version, index text, outbox row, change event.
SELECT 1;
