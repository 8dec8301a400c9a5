-- 0004: the index text of each service's state, stored with the state (issue 14). Every
-- write that changes what a service's document, set members or header are made of writes,
-- in the same transaction and at the same version, the exact strings the write path sends
-- to Redis: serializeService(), memberSuffixes() joined by "\n", headerData() (store/
-- services.ts, indexText()). The rebuild reads them instead of building them in SQL.
-- Nullable, no default: instant on a big table (no rewrite). A row written before this
-- migration keeps NULLs, and the rebuild builds its strings in SQL as before
-- (coalesce); `bin/registry backfill-index-text` fills them in batches when wanted.
ALTER TABLE services ADD COLUMN idx_doc text, ADD COLUMN idx_members text, ADD COLUMN idx_hdr text;
-- all three or none (NOT VALID: checked for rows written from now on, no scan of the table)
ALTER TABLE services ADD CONSTRAINT services_idx_text_all_or_none CHECK (num_nulls(idx_doc, idx_members, idx_hdr) IN (0, 3)) NOT VALID;
