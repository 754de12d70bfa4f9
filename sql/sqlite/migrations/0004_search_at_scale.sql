-- Document frequencies of the full-text terms, read by search to leave very common words
-- out of a BM25 query: on a 1M-unit store a speaker's name matches 100K rows, every one
-- of which FTS5 must score, while its IDF makes it count for almost nothing.
CREATE VIRTUAL TABLE messages_fts_vocab USING fts5vocab(messages_fts, 'row');
CREATE VIRTUAL TABLE units_fts_vocab USING fts5vocab(units_fts, 'row');

-- An entity's most recent mentions first: the entity channel reads at most a few hundred
-- mentions per named entity instead of all of a speaker's hundred thousand.
CREATE INDEX mentions_by_entity_unit ON mentions (entity_id, unit_id);
