-- 0005: the member rule the stored index text (services.idx_members, 0004) was computed
-- under: the fingerprint of the table of search dimensions (MEMBER_RULE, src/hot/domain/
-- dimensions.ts). After the SQL migrations the migrator runs ensureIndexText()
-- (reindex/index-text.ts): when the fingerprint differs from today's it recomputes every row's
-- text with indexText(), and it fills the rows that have none (the rebuild no longer builds
-- them in SQL). The text of 0004 was computed under the rule the table states today: e858dd14.
CREATE TABLE index_text_rule (rule text NOT NULL);
INSERT INTO index_text_rule (rule) VALUES ('e858dd14');
-- finds the rows without index text at once (normally none)
CREATE INDEX services_idx_text_missing ON services (seq) WHERE idx_doc IS NULL;
