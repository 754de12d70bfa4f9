-- Search on PostgreSQL. Full text is ranked by BM25 computed here as FTS5's bm25() computes it
-- (fts5_aux.c): k1 = 1.2, b = 0.75; idf = ln((N - n + 0.5) / (n + 0.5)), 1e-6 where not
-- positive; a term's frequency weighted per column, the document's length its token count in
-- every column; N, n and the mean length over the whole table; each phrase of the query (a
-- word; one stemmed twice counts twice) adds idf * (f * (k1 + 1)) / (f + k1 * (1 - b + b *
-- len / avgdl)) in the query's order, in double precision, so the scores equal FTS5's to the
-- last bit and ties fall alike; negated as bm25() is, so that ORDER BY score takes the best
-- first. The statistics (fts_stats, fts_terms) and each
-- lexeme's postings with its weighted frequency (fts_postings) are kept by triggers as rows
-- change (migration 0004): a search reads its lexemes' rows by index and counts nothing.
-- :match is the sanitised expression of retrieval/search.py (quoted words joined by OR); its
-- words are split and stemmed by localmem_en_tsvector (FTS5's porter unicode61, migration
-- 0005) as the rows were.

-- name: fts_messages
WITH phrases AS MATERIALIZED (
    SELECT p.n, v.lexeme
    FROM unnest(string_to_array(:match, '" OR "')) WITH ORDINALITY AS p(phrase, n)
    CROSS JOIN LATERAL unnest(localmem_en_tsvector(p.phrase)) AS v
),
terms AS MATERIALIZED (SELECT array_agg(DISTINCT lexeme) AS lexemes FROM phrases),
stats AS MATERIALIZED (SELECT n_rows, avgdl FROM localmem_fts_size('messages_fts')),
idf AS MATERIALIZED (
    SELECT d.lexeme, CASE WHEN x.idf <= 0 THEN 1e-6::float8 ELSE x.idf END AS idf
    FROM terms AS t CROSS JOIN stats AS s CROSS JOIN LATERAL localmem_fts_docs('messages_fts', t.lexemes) AS d
    CROSS JOIN LATERAL (SELECT ln((s.n_rows - d.ndoc + 0.5) / (d.ndoc + 0.5)) AS idf) AS x
),
hits AS (
    SELECT p.id, p.tokens, p.lexeme, p.tf::float8 AS tf
    FROM terms AS t JOIN fts_postings AS p ON p.tbl = 'messages_fts' AND p.lexeme = ANY (t.lexemes) AND p.ns = :ns
)
SELECT h.id,
       -sum(i.idf * ((h.tf * (1.2::float8 + 1.0::float8))
                     / (h.tf + 1.2::float8 * (1.0::float8 - 0.75::float8 + 0.75::float8 * h.tokens / s.avgdl)))
            ORDER BY ph.n) AS score
FROM hits AS h JOIN phrases AS ph ON ph.lexeme = h.lexeme JOIN idf AS i ON i.lexeme = h.lexeme CROSS JOIN stats AS s
GROUP BY h.id
ORDER BY score, h.id
LIMIT :k;

-- name: fts_messages_intl
-- fts_messages over the messages not in English (migration 0003): the query's words as that
-- index holds them (not stemmed, Latin diacritics folded, CJK runs as bigrams).
WITH phrases AS MATERIALIZED (
    SELECT p.n, v.lexeme
    FROM unnest(string_to_array(:match, '" OR "')) WITH ORDINALITY AS p(phrase, n)
    CROSS JOIN LATERAL unnest(localmem_intl_tsvector(p.phrase)) AS v
),
terms AS MATERIALIZED (SELECT array_agg(DISTINCT lexeme) AS lexemes FROM phrases),
stats AS MATERIALIZED (SELECT n_rows, avgdl FROM localmem_fts_size('messages_fts_intl')),
idf AS MATERIALIZED (
    SELECT d.lexeme, CASE WHEN x.idf <= 0 THEN 1e-6::float8 ELSE x.idf END AS idf
    FROM terms AS t CROSS JOIN stats AS s CROSS JOIN LATERAL localmem_fts_docs('messages_fts_intl', t.lexemes) AS d
    CROSS JOIN LATERAL (SELECT ln((s.n_rows - d.ndoc + 0.5) / (d.ndoc + 0.5)) AS idf) AS x
),
hits AS (
    SELECT p.id, p.tokens, p.lexeme, p.tf::float8 AS tf
    FROM terms AS t JOIN fts_postings AS p ON p.tbl = 'messages_fts_intl' AND p.lexeme = ANY (t.lexemes) AND p.ns = :ns
)
SELECT h.id,
       -sum(i.idf * ((h.tf * (1.2::float8 + 1.0::float8))
                     / (h.tf + 1.2::float8 * (1.0::float8 - 0.75::float8 + 0.75::float8 * h.tokens / s.avgdl)))
            ORDER BY ph.n) AS score
FROM hits AS h JOIN phrases AS ph ON ph.lexeme = h.lexeme JOIN idf AS i ON i.lexeme = h.lexeme CROSS JOIN stats AS s
GROUP BY h.id
ORDER BY score, h.id
LIMIT :k;

-- name: messages_intl_any
SELECT EXISTS (SELECT 1 FROM messages_fts_intl WHERE ns = :ns);

-- name: fts_messages_intl_among
WITH phrases AS MATERIALIZED (
    SELECT p.n, v.lexeme
    FROM unnest(string_to_array(:match, '" OR "')) WITH ORDINALITY AS p(phrase, n)
    CROSS JOIN LATERAL unnest(localmem_intl_tsvector(p.phrase)) AS v
),
terms AS MATERIALIZED (SELECT array_agg(DISTINCT lexeme) AS lexemes FROM phrases),
stats AS MATERIALIZED (SELECT n_rows, avgdl FROM localmem_fts_size('messages_fts_intl')),
idf AS MATERIALIZED (
    SELECT d.lexeme, CASE WHEN x.idf <= 0 THEN 1e-6::float8 ELSE x.idf END AS idf
    FROM terms AS t CROSS JOIN stats AS s CROSS JOIN LATERAL localmem_fts_docs('messages_fts_intl', t.lexemes) AS d
    CROSS JOIN LATERAL (SELECT ln((s.n_rows - d.ndoc + 0.5) / (d.ndoc + 0.5)) AS idf) AS x
),
hits AS (
    SELECT p.id, p.tokens, p.lexeme, p.tf::float8 AS tf
    FROM terms AS t JOIN fts_postings AS p ON p.tbl = 'messages_fts_intl' AND p.lexeme = ANY (t.lexemes) AND p.ns = :ns
    WHERE p.id IN (SELECT value FROM localmem_ids(:among))
)
SELECT h.id,
       -sum(i.idf * ((h.tf * (1.2::float8 + 1.0::float8))
                     / (h.tf + 1.2::float8 * (1.0::float8 - 0.75::float8 + 0.75::float8 * h.tokens / s.avgdl)))
            ORDER BY ph.n) AS score
FROM hits AS h JOIN phrases AS ph ON ph.lexeme = h.lexeme JOIN idf AS i ON i.lexeme = h.lexeme CROSS JOIN stats AS s
GROUP BY h.id
ORDER BY score, h.id
LIMIT :k;

-- name: messages_intl_terms_docs
SELECT t.value, CASE WHEN cardinality(t.lexemes) = 1 THEN coalesce(d.ndoc, 0)
                     ELSE (SELECT count(*) FROM messages_fts_intl WHERE doc @@ plainto_tsquery('simple', localmem_fold_accents(t.value))) END
FROM (SELECT j.value, ARRAY(SELECT lexeme FROM unnest(to_tsvector('simple', localmem_fold_accents(j.value)))) AS lexemes
      FROM jsonb_array_elements_text(CAST(:terms AS jsonb)) AS j(value)) AS t
LEFT JOIN LATERAL (SELECT sum(ndoc) AS ndoc FROM localmem_fts_docs('messages_fts_intl', t.lexemes)) AS d ON true;

-- name: fts_units
WITH phrases AS MATERIALIZED (
    SELECT p.n, v.lexeme
    FROM unnest(string_to_array(:match, '" OR "')) WITH ORDINALITY AS p(phrase, n)
    CROSS JOIN LATERAL unnest(localmem_en_tsvector(p.phrase)) AS v
),
terms AS MATERIALIZED (SELECT array_agg(DISTINCT lexeme) AS lexemes FROM phrases),
stats AS MATERIALIZED (SELECT n_rows, avgdl FROM localmem_fts_size('units_fts')),
idf AS MATERIALIZED (
    SELECT d.lexeme, CASE WHEN x.idf <= 0 THEN 1e-6::float8 ELSE x.idf END AS idf
    FROM terms AS t CROSS JOIN stats AS s CROSS JOIN LATERAL localmem_fts_docs('units_fts', t.lexemes) AS d
    CROSS JOIN LATERAL (SELECT ln((s.n_rows - d.ndoc + 0.5) / (d.ndoc + 0.5)) AS idf) AS x
),
hits AS (
    SELECT p.id, p.tokens, p.lexeme, p.tf::float8 AS tf
    FROM terms AS t JOIN fts_postings AS p ON p.tbl = 'units_fts' AND p.lexeme = ANY (t.lexemes) AND p.ns = :ns
)
SELECT h.id,
       -sum(i.idf * ((h.tf * (1.2::float8 + 1.0::float8))
                     / (h.tf + 1.2::float8 * (1.0::float8 - 0.75::float8 + 0.75::float8 * h.tokens / s.avgdl)))
            ORDER BY ph.n) AS score
FROM hits AS h JOIN phrases AS ph ON ph.lexeme = h.lexeme JOIN idf AS i ON i.lexeme = h.lexeme CROSS JOIN stats AS s
GROUP BY h.id
ORDER BY score, h.id
LIMIT :k;

-- name: messages_by_ids
SELECT m.id, m.external_id, m.conversation, m.session, m.speaker, m.role, m.text, m.sent_at,
       m.attachments
FROM localmem_ids(:ids) AS j
JOIN messages AS m ON m.id = j.value;

-- name: units_by_ids
SELECT u.id, u.kind, u.title, u.text, coalesce(u.occurred_start, u.mentioned_at) AS time
FROM localmem_ids(:ids) AS j
JOIN units AS u ON u.id = j.value;

-- name: unit_sources_by_ids
SELECT us.unit_id, m.id, m.external_id, m.conversation, m.session, m.speaker, m.sent_at
FROM localmem_ids(:ids) AS j
JOIN unit_sources AS us ON us.unit_id = j.value
JOIN messages AS m ON m.id = us.message_id
ORDER BY us.unit_id, m.seq;

-- name: narrow_unit_sources
-- For the gists and facts among :ids (JSON array) resting on at most :max messages: (unit, message).
SELECT us.unit_id, us.message_id
FROM localmem_ids(:ids) AS j
JOIN units AS u ON u.id = j.value AND u.kind IN ('gist', 'fact')
JOIN unit_sources AS us ON us.unit_id = u.id
WHERE (SELECT count(*) FROM unit_sources AS c WHERE c.unit_id = u.id) <= :max;

-- name: messages_terms_docs
-- :terms are FTS5 porter terms (retrieval prunes very common words by them): stemmed again here;
-- a term of one lexeme (nearly all) is read from the statistics, else the rows holding all of
-- its lexemes are counted (a term with none matches nothing).
SELECT t.value, CASE WHEN cardinality(t.lexemes) = 1 THEN coalesce(d.ndoc, 0)
                     ELSE (SELECT count(*) FROM messages_fts WHERE doc @@ array_to_string(ARRAY(SELECT quote_literal(l) FROM unnest(t.lexemes) AS l), ' & ')::tsquery) END
FROM (SELECT j.value, ARRAY(SELECT lexeme FROM unnest(localmem_en_tsvector(j.value))) AS lexemes
      FROM jsonb_array_elements_text(CAST(:terms AS jsonb)) AS j(value)) AS t
LEFT JOIN LATERAL (SELECT sum(ndoc) AS ndoc FROM localmem_fts_docs('messages_fts', t.lexemes)) AS d ON true;

-- name: units_terms_docs
SELECT t.value, CASE WHEN cardinality(t.lexemes) = 1 THEN coalesce(d.ndoc, 0)
                     ELSE (SELECT count(*) FROM units_fts WHERE doc @@ array_to_string(ARRAY(SELECT quote_literal(l) FROM unnest(t.lexemes) AS l), ' & ')::tsquery) END
FROM (SELECT j.value, ARRAY(SELECT lexeme FROM unnest(localmem_en_tsvector(j.value))) AS lexemes
      FROM jsonb_array_elements_text(CAST(:terms AS jsonb)) AS j(value)) AS t
LEFT JOIN LATERAL (SELECT sum(ndoc) AS ndoc FROM localmem_fts_docs('units_fts', t.lexemes)) AS d ON true;

-- name: parts_with_codes
SELECT p.message_id, p.start, p."end", localmem_int8(v.embedding)
FROM localmem_ids(:ids) AS j
JOIN message_parts AS p ON p.message_id = j.value
JOIN vec_message_parts AS v ON v.id = p.id
WHERE p.context = 0
ORDER BY p.message_id, p.start;

-- name: filter_messages
SELECT id FROM messages
WHERE ns = :ns
  AND (CAST(:speaker AS text) IS NULL OR lower(speaker) = lower(:speaker))
  AND (CAST(:conversation AS text) IS NULL OR conversation = :conversation)
  AND (CAST(:since AS text) IS NULL OR sent_at >= :since)
  AND (CAST(:until AS text) IS NULL OR sent_at < :until)
  AND (CAST(:meta AS text) IS NULL OR NOT EXISTS (
        SELECT 1 FROM jsonb_each(CAST(:meta AS jsonb)) AS f
        WHERE messages.meta IS NULL
           OR NOT (coalesce((messages.meta::jsonb -> f.key) = f.value, false)
                   OR (messages.meta::jsonb ->> f.key) = (jsonb_build_array(f.value) ->> 0))));

-- name: filter_units
-- Units every source of which is among :messages (a JSON array): what rests only on messages
-- that pass the filters.
SELECT us.unit_id FROM unit_sources AS us
WHERE us.message_id IN (SELECT value FROM localmem_ids(:messages))
GROUP BY us.unit_id
HAVING count(*) = (SELECT count(*) FROM unit_sources AS c WHERE c.unit_id = us.unit_id);

-- name: filter_parts
-- The sentence parts of :messages (a JSON array).
SELECT p.id FROM localmem_ids(:messages) AS j JOIN message_parts AS p ON p.message_id = j.value;

-- name: fts_messages_among
WITH phrases AS MATERIALIZED (
    SELECT p.n, v.lexeme
    FROM unnest(string_to_array(:match, '" OR "')) WITH ORDINALITY AS p(phrase, n)
    CROSS JOIN LATERAL unnest(localmem_en_tsvector(p.phrase)) AS v
),
terms AS MATERIALIZED (SELECT array_agg(DISTINCT lexeme) AS lexemes FROM phrases),
stats AS MATERIALIZED (SELECT n_rows, avgdl FROM localmem_fts_size('messages_fts')),
idf AS MATERIALIZED (
    SELECT d.lexeme, CASE WHEN x.idf <= 0 THEN 1e-6::float8 ELSE x.idf END AS idf
    FROM terms AS t CROSS JOIN stats AS s CROSS JOIN LATERAL localmem_fts_docs('messages_fts', t.lexemes) AS d
    CROSS JOIN LATERAL (SELECT ln((s.n_rows - d.ndoc + 0.5) / (d.ndoc + 0.5)) AS idf) AS x
),
hits AS (
    SELECT p.id, p.tokens, p.lexeme, p.tf::float8 AS tf
    FROM terms AS t JOIN fts_postings AS p ON p.tbl = 'messages_fts' AND p.lexeme = ANY (t.lexemes) AND p.ns = :ns
    WHERE p.id IN (SELECT value FROM localmem_ids(:among))
)
SELECT h.id,
       -sum(i.idf * ((h.tf * (1.2::float8 + 1.0::float8))
                     / (h.tf + 1.2::float8 * (1.0::float8 - 0.75::float8 + 0.75::float8 * h.tokens / s.avgdl)))
            ORDER BY ph.n) AS score
FROM hits AS h JOIN phrases AS ph ON ph.lexeme = h.lexeme JOIN idf AS i ON i.lexeme = h.lexeme CROSS JOIN stats AS s
GROUP BY h.id
ORDER BY score, h.id
LIMIT :k;

-- name: fts_units_among
WITH phrases AS MATERIALIZED (
    SELECT p.n, v.lexeme
    FROM unnest(string_to_array(:match, '" OR "')) WITH ORDINALITY AS p(phrase, n)
    CROSS JOIN LATERAL unnest(localmem_en_tsvector(p.phrase)) AS v
),
terms AS MATERIALIZED (SELECT array_agg(DISTINCT lexeme) AS lexemes FROM phrases),
stats AS MATERIALIZED (SELECT n_rows, avgdl FROM localmem_fts_size('units_fts')),
idf AS MATERIALIZED (
    SELECT d.lexeme, CASE WHEN x.idf <= 0 THEN 1e-6::float8 ELSE x.idf END AS idf
    FROM terms AS t CROSS JOIN stats AS s CROSS JOIN LATERAL localmem_fts_docs('units_fts', t.lexemes) AS d
    CROSS JOIN LATERAL (SELECT ln((s.n_rows - d.ndoc + 0.5) / (d.ndoc + 0.5)) AS idf) AS x
),
hits AS (
    SELECT p.id, p.tokens, p.lexeme, p.tf::float8 AS tf
    FROM terms AS t JOIN fts_postings AS p ON p.tbl = 'units_fts' AND p.lexeme = ANY (t.lexemes) AND p.ns = :ns
    WHERE p.id IN (SELECT value FROM localmem_ids(:among))
)
SELECT h.id,
       -sum(i.idf * ((h.tf * (1.2::float8 + 1.0::float8))
                     / (h.tf + 1.2::float8 * (1.0::float8 - 0.75::float8 + 0.75::float8 * h.tokens / s.avgdl)))
            ORDER BY ph.n) AS score
FROM hits AS h JOIN phrases AS ph ON ph.lexeme = h.lexeme JOIN idf AS i ON i.lexeme = h.lexeme CROSS JOIN stats AS s
GROUP BY h.id
ORDER BY score, h.id
LIMIT :k;

-- name: messages_replaced
-- Of :ids (a JSON array of message ids), those a newer message replaces: (id, the newest
-- direct correction).
SELECT r.replaces, max(r.id) FROM messages AS r
WHERE r.replaces IN (SELECT value FROM localmem_ids(:ids))
GROUP BY r.replaces;

-- name: namespace_message_languages
-- Each message of :ns with its language (retrieval.language_balance groups them).
SELECT id, lang FROM messages WHERE ns = :ns;

-- name: data_version
-- Moves when any transaction has begun or ended since (a cache keyed on it is refreshed at
-- least as often as on SQLite, where only another connection's commit moves it).
SELECT pg_current_snapshot()::text;

-- name: messages_said_between
-- Those of :ids (a JSON array of message ids) said from :start to :end (dates, inclusive).
SELECT m.id FROM localmem_ids(:ids) AS j
JOIN messages AS m ON m.id = j.value
WHERE m.sent_at IS NOT NULL AND m.sent_at >= :start AND m.sent_at <= :end || 'T99';

-- name: message_rows
-- What a search reads of the messages :ids (a JSON array of message ids) and of the turn right
-- after each in its session, in one statement (a round trip each costs on a server store):
-- each one's fields as a hit shows them, the id of the turn right after it in its session
-- (NULL when it is the last, or has no session), and the newest message that directly
-- corrects it (NULL when none does).
WITH asked AS (SELECT j.value AS id FROM localmem_ids(:ids) AS j),
wanted AS (
    SELECT id FROM asked
    UNION
    SELECT n.id FROM asked AS a
    JOIN messages AS m ON m.id = a.id
    JOIN messages AS n ON n.ns = m.ns AND n.conversation = m.conversation AND n.seq = m.seq + 1
                      AND n.session = m.session AND m.session != ''
)
SELECT m.id, m.external_id, m.conversation, m.session, m.speaker, m.role, m.text, m.sent_at,
       m.attachments,
       (SELECT n.id FROM messages AS n
        WHERE n.ns = m.ns AND n.conversation = m.conversation AND n.seq = m.seq + 1
          AND n.session = m.session AND m.session != '') AS next_id,
       (SELECT max(r.id) FROM messages AS r WHERE r.replaces = m.id) AS replaced_by
FROM wanted AS w
JOIN messages AS m ON m.id = w.id;
