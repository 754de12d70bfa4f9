-- Search on PostgreSQL. Full text is ranked by BM25 computed here with FTS5's formula and
-- constants (k1 = 1.2, b = 0.75; idf = ln((N - n + 0.5) / (n + 0.5)), at least 1e-6; a term's
-- frequency weighted per column, the document's length its token count in every column; N,
-- n and the mean length over the whole table, as FTS5 counts them), negated as bm25() is, so
-- that ORDER BY score takes the best first. :match is the sanitised expression of
-- retrieval/search.py (quoted words joined by OR); its words are stemmed by the 'localmem'
-- text search configuration (snowball English, no stop words) as the rows were.

-- name: fts_messages
WITH terms AS (
    SELECT DISTINCT lexeme, quote_literal(lexeme)::tsquery AS tq
    FROM unnest(to_tsvector('localmem', replace(:match, '" OR "', ' ')))
),
query AS (SELECT string_agg(quote_literal(lexeme), ' | ')::tsquery AS tq FROM terms),
stats AS (SELECT count(*)::float8 AS n_rows, greatest(avg(tokens), 1)::float8 AS avgdl FROM messages_fts),
idf AS (
    SELECT t.lexeme,
           greatest(ln((s.n_rows - d.n + 0.5) / (d.n + 0.5)), 1e-6) AS idf
    FROM terms AS t CROSS JOIN stats AS s
    CROSS JOIN LATERAL (SELECT count(*)::float8 AS n FROM messages_fts AS f WHERE f.doc @@ t.tq) AS d
),
hits AS (
    SELECT f.id, f.tokens, u.lexeme,
           (SELECT sum(CASE w WHEN 'A' THEN 1.0 ELSE 0.5 END) FROM unnest(u.weights) AS w) AS tf
    FROM messages_fts AS f CROSS JOIN query AS qq
    CROSS JOIN LATERAL unnest(f.doc) AS u
    WHERE f.doc @@ qq.tq AND f.ns = :ns AND u.lexeme IN (SELECT lexeme FROM terms)
)
SELECT h.id, -sum(i.idf * h.tf * 2.2 / (h.tf + 1.2 * (0.25 + 0.75 * h.tokens / s.avgdl))) AS score
FROM hits AS h JOIN idf AS i ON i.lexeme = h.lexeme CROSS JOIN stats AS s
GROUP BY h.id
ORDER BY score, h.id
LIMIT :k;

-- name: fts_units
WITH terms AS (
    SELECT DISTINCT lexeme, quote_literal(lexeme)::tsquery AS tq
    FROM unnest(to_tsvector('localmem', replace(:match, '" OR "', ' ')))
),
query AS (SELECT string_agg(quote_literal(lexeme), ' | ')::tsquery AS tq FROM terms),
stats AS (SELECT count(*)::float8 AS n_rows, greatest(avg(tokens), 1)::float8 AS avgdl FROM units_fts),
idf AS (
    SELECT t.lexeme, greatest(ln((s.n_rows - d.n + 0.5) / (d.n + 0.5)), 1e-6) AS idf
    FROM terms AS t CROSS JOIN stats AS s
    CROSS JOIN LATERAL (SELECT count(*)::float8 AS n FROM units_fts AS f WHERE f.doc @@ t.tq) AS d
),
hits AS (
    SELECT f.id, f.tokens, u.lexeme, coalesce(array_length(u.positions, 1), 1)::float8 AS tf
    FROM units_fts AS f CROSS JOIN query AS qq
    CROSS JOIN LATERAL unnest(f.doc) AS u
    WHERE f.doc @@ qq.tq AND f.ns = :ns AND u.lexeme IN (SELECT lexeme FROM terms)
)
SELECT h.id, -sum(i.idf * h.tf * 2.2 / (h.tf + 1.2 * (0.25 + 0.75 * h.tokens / s.avgdl))) AS score
FROM hits AS h JOIN idf AS i ON i.lexeme = h.lexeme CROSS JOIN stats AS s
GROUP BY h.id
ORDER BY score, h.id
LIMIT :k;

-- name: fts_messages_among
WITH terms AS (
    SELECT DISTINCT lexeme, quote_literal(lexeme)::tsquery AS tq
    FROM unnest(to_tsvector('localmem', replace(:match, '" OR "', ' ')))
),
query AS (SELECT string_agg(quote_literal(lexeme), ' | ')::tsquery AS tq FROM terms),
stats AS (SELECT count(*)::float8 AS n_rows, greatest(avg(tokens), 1)::float8 AS avgdl FROM messages_fts),
idf AS (
    SELECT t.lexeme, greatest(ln((s.n_rows - d.n + 0.5) / (d.n + 0.5)), 1e-6) AS idf
    FROM terms AS t CROSS JOIN stats AS s
    CROSS JOIN LATERAL (SELECT count(*)::float8 AS n FROM messages_fts AS f WHERE f.doc @@ t.tq) AS d
),
hits AS (
    SELECT f.id, f.tokens, u.lexeme,
           (SELECT sum(CASE w WHEN 'A' THEN 1.0 ELSE 0.5 END) FROM unnest(u.weights) AS w) AS tf
    FROM messages_fts AS f CROSS JOIN query AS qq
    CROSS JOIN LATERAL unnest(f.doc) AS u
    WHERE f.doc @@ qq.tq AND f.ns = :ns AND u.lexeme IN (SELECT lexeme FROM terms)
      AND f.id IN (SELECT value FROM localmem_ids(:among))
)
SELECT h.id, -sum(i.idf * h.tf * 2.2 / (h.tf + 1.2 * (0.25 + 0.75 * h.tokens / s.avgdl))) AS score
FROM hits AS h JOIN idf AS i ON i.lexeme = h.lexeme CROSS JOIN stats AS s
GROUP BY h.id
ORDER BY score, h.id
LIMIT :k;

-- name: fts_units_among
WITH terms AS (
    SELECT DISTINCT lexeme, quote_literal(lexeme)::tsquery AS tq
    FROM unnest(to_tsvector('localmem', replace(:match, '" OR "', ' ')))
),
query AS (SELECT string_agg(quote_literal(lexeme), ' | ')::tsquery AS tq FROM terms),
stats AS (SELECT count(*)::float8 AS n_rows, greatest(avg(tokens), 1)::float8 AS avgdl FROM units_fts),
idf AS (
    SELECT t.lexeme, greatest(ln((s.n_rows - d.n + 0.5) / (d.n + 0.5)), 1e-6) AS idf
    FROM terms AS t CROSS JOIN stats AS s
    CROSS JOIN LATERAL (SELECT count(*)::float8 AS n FROM units_fts AS f WHERE f.doc @@ t.tq) AS d
),
hits AS (
    SELECT f.id, f.tokens, u.lexeme, coalesce(array_length(u.positions, 1), 1)::float8 AS tf
    FROM units_fts AS f CROSS JOIN query AS qq
    CROSS JOIN LATERAL unnest(f.doc) AS u
    WHERE f.doc @@ qq.tq AND f.ns = :ns AND u.lexeme IN (SELECT lexeme FROM terms)
      AND f.id IN (SELECT value FROM localmem_ids(:among))
)
SELECT h.id, -sum(i.idf * h.tf * 2.2 / (h.tf + 1.2 * (0.25 + 0.75 * h.tokens / s.avgdl))) AS score
FROM hits AS h JOIN idf AS i ON i.lexeme = h.lexeme CROSS JOIN stats AS s
GROUP BY h.id
ORDER BY score, h.id
LIMIT :k;

-- name: messages_term_docs
-- :term is an FTS5 porter term (retrieval prunes very common words by it): stemmed again here.
SELECT count(*) FROM messages_fts WHERE doc @@ plainto_tsquery('localmem', :term);

-- name: fts_messages_intl
-- fts_messages over the messages not in English (migration 0003): the query's words as that
-- index holds them (not stemmed, Latin diacritics folded, CJK runs as bigrams).
WITH terms AS (
    SELECT DISTINCT lexeme, quote_literal(lexeme)::tsquery AS tq
    FROM unnest(localmem_intl_tsvector(replace(:match, '" OR "', ' ')))
),
query AS (SELECT string_agg(quote_literal(lexeme), ' | ')::tsquery AS tq FROM terms),
stats AS (SELECT count(*)::float8 AS n_rows, greatest(avg(tokens), 1)::float8 AS avgdl FROM messages_fts_intl),
idf AS (
    SELECT t.lexeme,
           greatest(ln((s.n_rows - d.n + 0.5) / (d.n + 0.5)), 1e-6) AS idf
    FROM terms AS t CROSS JOIN stats AS s
    CROSS JOIN LATERAL (SELECT count(*)::float8 AS n FROM messages_fts_intl AS f WHERE f.doc @@ t.tq) AS d
),
hits AS (
    SELECT f.id, f.tokens, u.lexeme,
           (SELECT sum(CASE w WHEN 'A' THEN 1.0 ELSE 0.5 END) FROM unnest(u.weights) AS w) AS tf
    FROM messages_fts_intl AS f CROSS JOIN query AS qq
    CROSS JOIN LATERAL unnest(f.doc) AS u
    WHERE f.doc @@ qq.tq AND f.ns = :ns AND u.lexeme IN (SELECT lexeme FROM terms)
)
SELECT h.id, -sum(i.idf * h.tf * 2.2 / (h.tf + 1.2 * (0.25 + 0.75 * h.tokens / s.avgdl))) AS score
FROM hits AS h JOIN idf AS i ON i.lexeme = h.lexeme CROSS JOIN stats AS s
GROUP BY h.id
ORDER BY score, h.id
LIMIT :k;

-- name: fts_messages_intl_among
WITH terms AS (
    SELECT DISTINCT lexeme, quote_literal(lexeme)::tsquery AS tq
    FROM unnest(localmem_intl_tsvector(replace(:match, '" OR "', ' ')))
),
query AS (SELECT string_agg(quote_literal(lexeme), ' | ')::tsquery AS tq FROM terms),
stats AS (SELECT count(*)::float8 AS n_rows, greatest(avg(tokens), 1)::float8 AS avgdl FROM messages_fts_intl),
idf AS (
    SELECT t.lexeme, greatest(ln((s.n_rows - d.n + 0.5) / (d.n + 0.5)), 1e-6) AS idf
    FROM terms AS t CROSS JOIN stats AS s
    CROSS JOIN LATERAL (SELECT count(*)::float8 AS n FROM messages_fts_intl AS f WHERE f.doc @@ t.tq) AS d
),
hits AS (
    SELECT f.id, f.tokens, u.lexeme,
           (SELECT sum(CASE w WHEN 'A' THEN 1.0 ELSE 0.5 END) FROM unnest(u.weights) AS w) AS tf
    FROM messages_fts_intl AS f CROSS JOIN query AS qq
    CROSS JOIN LATERAL unnest(f.doc) AS u
    WHERE f.doc @@ qq.tq AND f.ns = :ns AND u.lexeme IN (SELECT lexeme FROM terms)
      AND f.id IN (SELECT value FROM localmem_ids(:among))
)
SELECT h.id, -sum(i.idf * h.tf * 2.2 / (h.tf + 1.2 * (0.25 + 0.75 * h.tokens / s.avgdl))) AS score
FROM hits AS h JOIN idf AS i ON i.lexeme = h.lexeme CROSS JOIN stats AS s
GROUP BY h.id
ORDER BY score, h.id
LIMIT :k;

-- name: messages_intl_term_docs
SELECT count(*) FROM messages_fts_intl WHERE doc @@ plainto_tsquery('simple', localmem_fold_accents(:term));

-- name: units_term_docs
SELECT count(*) FROM units_fts WHERE doc @@ plainto_tsquery('localmem', :term);

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

-- name: namespace_message_languages
-- Each message of :ns with its language (retrieval.language_balance groups them).
SELECT id, lang FROM messages WHERE ns = :ns;

-- name: data_version
-- Moves when any transaction has begun or ended since (a cache keyed on it is refreshed at
-- least as often as on SQLite, where only another connection's commit moves it).
SELECT pg_current_snapshot()::text;

-- name: stats_vector_rows
SELECT (SELECT count(*) FROM vec_messages WHERE ns = :ns),
       (SELECT count(*) FROM vec_units WHERE ns = :ns),
       (SELECT count(*) FROM vec_message_parts WHERE ns = :ns);
