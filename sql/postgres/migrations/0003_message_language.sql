-- Level with SQLite migration 0013.
-- Full text in any language (issue 45; SQLite migration 0013). Each message's language is stored
-- (an ISO 639-1 code, 'und' when too short to tell, NULL for messages stored before): the
-- application computes it (store/pg.py passes localmem.text.language.detect of the text as the
-- query's :lang), as the SQLite store's localmem_lang does.
--
-- English and undetermined text stays in messages_fts (snowball English). Every other language
-- goes to messages_fts_intl, not stemmed: the 'simple' configuration (lower case only) over the
-- text with its Latin diacritics folded by localmem_fold_accents (a translate() table made from
-- Unicode's decompositions of U+00C0..U+024F: what FTS5's unicode61 remove_diacritics 2 folds
-- there; the unaccent extension is not in every server, pgserver's included) and its Chinese,
-- Japanese, Korean and Thai runs cut into overlapping bigrams by localmem_fts_text (the same
-- character ranges as localmem.text.language.fts_text). Diacritics outside Latin (Greek
-- tonos, Vietnamese stacked marks beyond U+024F) stay: an approximation of unicode61.
ALTER TABLE messages ADD COLUMN lang TEXT;

CREATE FUNCTION localmem_fold_accents(t TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT translate(t, 'ÀÁÂÃÄÅÇÈÉÊËÌÍÎÏÑÒÓÔÕÖÙÚÛÜÝàáâãäåçèéêëìíîïñòóôõöùúûüýÿĀāĂăĄąĆćĈĉĊċČčĎďĒēĔĕĖėĘęĚěĜĝĞğĠġĢģĤĥĨĩĪīĬĭĮįİĴĵĶķĹĺĻļĽľŃńŅņŇňŌōŎŏŐőŔŕŖŗŘřŚśŜŝŞşŠšŢţŤťŨũŪūŬŭŮůŰűŲųŴŵŶŷŸŹźŻżŽžƠơƯưǍǎǏǐǑǒǓǔǕǖǗǘǙǚǛǜǞǟǦǧǨǩǪǫǬǭǰǴǵǸǹǺǻȀȁȂȃȄȅȆȇȈȉȊȋȌȍȎȏȐȑȒȓȔȕȖȗȘșȚțȞȟȦȧȨȩȪȫȬȭȮȯȰȱȲȳ', 'AAAAAACEEEEIIIINOOOOOUUUUYaaaaaaceeeeiiiinooooouuuuyyAaAaAaCcCcCcCcDdEeEeEeEeEeGgGgGgGgHhIiIiIiIiIJjKkLlLlLlNnNnNnOoOoOoRrRrRrSsSsSsSsTtTtUuUuUuUuUuUuWwYyYZzZzZzOoUuAaIiOoUuUuUuUuUuAaGgKkOoOojGgNnAaAaAaEeEeIiIiOoOoRrRrUuUuSsTtHhAaEeOoOoOoOoYy')
$$;

-- localmem.text.language.fts_text: each run of unspaced script replaced by its bigrams.
CREATE FUNCTION localmem_fts_text(t TEXT) RETURNS TEXT LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    result TEXT := '';
    rest TEXT := t;
    run TEXT;
    at INTEGER;
BEGIN
    IF t IS NULL THEN
        RETURN NULL;
    END IF;
    LOOP
        run := substring(rest FROM '[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff\u1100-\u11ff\u3130-\u318f\uac00-\ud7af\u0e00-\u0e7f]+');
        EXIT WHEN run IS NULL;
        at := strpos(rest, run);
        result := result || substr(rest, 1, at - 1) || ' ';
        IF length(run) < 2 THEN
            result := result || run;
        ELSE
            result := result || (SELECT string_agg(substr(run, i, 2), ' ' ORDER BY i)
                                 FROM generate_series(1, length(run) - 1) AS i);
        END IF;
        result := result || ' ';
        rest := substr(rest, at + length(run));
    END LOOP;
    RETURN result || rest;
END $$;

-- A text as the non-English index holds it (and as its queries are matched).
CREATE FUNCTION localmem_intl_tsvector(t TEXT) RETURNS TSVECTOR LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT to_tsvector('simple', localmem_fold_accents(localmem_fts_text(t)))
$$;

CREATE TABLE messages_fts_intl (
    id       BIGINT PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
    ns       TEXT NOT NULL,
    doc      TSVECTOR NOT NULL,      -- context weighted 'B', body 'A'
    tokens   INTEGER NOT NULL
);
CREATE INDEX messages_fts_intl_doc ON messages_fts_intl USING gin (doc);
CREATE INDEX messages_fts_intl_ns ON messages_fts_intl (ns);
SELECT localmem_protect('messages_fts_intl');

-- As in migration 0001, each message to the index of its language.
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
        cv := to_tsvector('localmem', coalesce(ctx, ''));
        bv := to_tsvector('localmem', body);
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

-- FTS5's vocabulary tables ('row': each term, the rows holding it, its occurrences), as views
-- over the tsvectors.
CREATE VIEW messages_fts_vocab AS
SELECT word AS term, ndoc AS doc, nentry AS cnt FROM ts_stat('SELECT doc FROM messages_fts');
CREATE VIEW messages_fts_intl_vocab AS
SELECT word AS term, ndoc AS doc, nentry AS cnt FROM ts_stat('SELECT doc FROM messages_fts_intl');
