-- Level with SQLite migration 0013.
-- Full text tokenized and stemmed as FTS5's 'porter unicode61 remove_diacritics 2' does it on
-- the SQLite store (issue 46: the same ranking on both engines). Until now the English index
-- used snowball English (Porter's later "Porter2": "generously" -> "generous", FTS5 "gener")
-- over PostgreSQL's parser, which keeps "e-mail", "3.5", "alice@x.com" or a URL as tokens
-- of their own (besides their parts) where unicode61 sees only runs of letters and digits.
--
-- localmem_en_tsvector: Latin diacritics folded (localmem_fold_accents, migration 0003), every
-- run of characters that are not letters or digits made a space (unicode61's separators:
-- punctuation, symbols, "_"), then PostgreSQL's snowball "porter" stemmer (Martin Porter's
-- original algorithm, the one FTS5's porter tokenizer implements) over every word. Rows
-- already stored are indexed anew below (their statistics and postings follow by trigger).
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_ts_dict WHERE dictname = 'localmem_porter') THEN
    CREATE TEXT SEARCH DICTIONARY localmem_porter (TEMPLATE = snowball, Language = porter);
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = 'localmem_porter') THEN
    CREATE TEXT SEARCH CONFIGURATION localmem_porter (COPY = simple);
    ALTER TEXT SEARCH CONFIGURATION localmem_porter
      ALTER MAPPING FOR asciiword, word, numword, asciihword, hword, numhword, hword_asciipart, hword_part,
                        hword_numpart WITH localmem_porter;
  END IF;
END $$;

CREATE FUNCTION localmem_en_tsvector(t TEXT) RETURNS TSVECTOR LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT to_tsvector('localmem_porter', regexp_replace(localmem_fold_accents(t), '[^[:alnum:]]+', ' ', 'g'))
$$;

-- As in migration 0003, with the English index's words as localmem_en_tsvector makes them.
CREATE OR REPLACE FUNCTION localmem_reindex_message(mid BIGINT) RETURNS VOID LANGUAGE plpgsql AS $$
DECLARE
    m messages%ROWTYPE;
    ctx TEXT;
    body TEXT;
    cv TSVECTOR;
    bv TSVECTOR;
BEGIN
    SELECT * INTO m FROM messages WHERE id = mid;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT p.speaker || ': ' || p.text INTO ctx FROM messages AS p
    WHERE p.ns = m.ns AND p.conversation = m.conversation AND p.session = m.session AND p.seq < m.seq
    ORDER BY p.seq DESC LIMIT 1;
    body := m.speaker || ': ' || m.text || coalesce(' ' || (
        SELECT string_agg(a ->> 'caption', ' ') FROM jsonb_array_elements(
            CASE WHEN jsonb_typeof(m.attachments::jsonb) = 'array' THEN m.attachments::jsonb ELSE '[]'::jsonb END) AS a
        WHERE a ->> 'caption' IS NOT NULL), '');
    IF m.lang IS NULL OR m.lang IN ('en', 'und') THEN
        cv := localmem_en_tsvector(coalesce(ctx, ''));
        bv := localmem_en_tsvector(body);
        INSERT INTO messages_fts (id, ns, doc, tokens)
        VALUES (m.id, m.ns, setweight(cv, 'B') || setweight(bv, 'A'), localmem_tokens(cv) + localmem_tokens(bv))
        ON CONFLICT (id) DO UPDATE SET doc = excluded.doc, tokens = excluded.tokens;
    ELSE
        cv := localmem_intl_tsvector(coalesce(ctx, ''));
        bv := localmem_intl_tsvector(body);
        INSERT INTO messages_fts_intl (id, ns, doc, tokens)
        VALUES (m.id, m.ns, setweight(cv, 'B') || setweight(bv, 'A'), localmem_tokens(cv) + localmem_tokens(bv))
        ON CONFLICT (id) DO UPDATE SET doc = excluded.doc, tokens = excluded.tokens;
    END IF;
END $$;

CREATE OR REPLACE FUNCTION localmem_unit_fts() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    v TSVECTOR;
BEGIN
    v := localmem_en_tsvector(coalesce(NEW.title || '. ', '') || NEW.text);
    INSERT INTO units_fts (id, ns, doc, tokens) VALUES (NEW.id, NEW.ns, v, localmem_tokens(v))
    ON CONFLICT (id) DO UPDATE SET doc = excluded.doc, tokens = excluded.tokens;
    RETURN NULL;
END $$;

SELECT localmem_reindex_message(id) FROM messages WHERE lang IS NULL OR lang IN ('en', 'und');
UPDATE units_fts AS f SET doc = u.v, tokens = localmem_tokens(u.v)
FROM (SELECT id, localmem_en_tsvector(coalesce(title || '. ', '') || text) AS v FROM units) AS u
WHERE u.id = f.id;
