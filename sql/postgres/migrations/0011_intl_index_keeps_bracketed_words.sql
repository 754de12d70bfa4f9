-- Level with SQLite migration 0015.
-- The non-English index read "<Media Markt hat am Sonntag zu>" as one XML tag and "&amp;" as an
-- entity, and PostgreSQL's parser drops both: the words inside were never indexed, where FTS5's
-- unicode61 on the SQLite store indexes them like any other. '<', '>' and '&' are made spaces
-- before the parser sees them (the English index already turns every separator into a space,
-- migration 0005). Stored messages of the non-English index are indexed anew (their statistics
-- and postings follow by trigger).
CREATE OR REPLACE FUNCTION localmem_intl_tsvector(t TEXT) RETURNS TSVECTOR LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT to_tsvector('simple', localmem_fold_accents(localmem_fts_text(translate(t, '<>&', '   '))))
$$;

SELECT localmem_reindex_message(id) FROM messages_fts_intl;
