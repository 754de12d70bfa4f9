-- Level with SQLite migration 0015.
-- BM25 defined once: localmem_bm25(table, ns, match[, among]) is the ranking the six full-text
-- queries of sql/postgres/queries/search.sql wrote out each in full (English and non-English
-- messages, units; all rows or only :among). It is computed as FTS5's bm25() computes it
-- (fts5_aux.c): k1 = 1.2, b = 0.75; idf = ln((N - n + 0.5) / (n + 0.5)), 1e-6 where not
-- positive; a term's frequency weighted per column, the document's length its token count in
-- every column; N, n and the mean length over the whole table; each phrase of the query (a
-- word; one stemmed twice counts twice) adds idf * (f * (k1 + 1)) / (f + k1 * (1 - b + b *
-- len / avgdl)) in the query's order, in double precision, so the scores equal FTS5's to the
-- last bit and ties fall alike; negated as bm25() is, so that ORDER BY score takes the best
-- first. The statistics (fts_stats, fts_terms) and each lexeme's postings with its weighted
-- frequency (fts_postings) are kept by triggers as rows change (migration 0004): a search
-- reads its lexemes' rows by index and counts nothing.
--
-- match is the sanitised expression of retrieval/search.py (quoted words joined by OR); its
-- words are split and made lexemes as the table's rows were: stemmed by localmem_en_tsvector
-- (FTS5's porter unicode61, migration 0005), or for messages_fts_intl by localmem_intl_tsvector
-- (not stemmed, Latin diacritics folded, CJK runs as bigrams; migrations 0003, 0011).
-- among, a JSON array of ids (NULL: every row), keeps only those rows.
--
-- A LANGUAGE sql function, STABLE, not SECURITY DEFINER and without SET clauses, whose body is
-- one SELECT: the planner inlines it into the calling query (no function scan, the caller's
-- ORDER BY and LIMIT planned with it), and it reads the tables with the caller's privileges,
-- under their row-level security, as the queries did. Its rows come in no order: callers
-- order by (score, id).
CREATE FUNCTION localmem_bm25(fts_table TEXT, in_ns TEXT, expr TEXT, among TEXT DEFAULT NULL)
RETURNS TABLE (id BIGINT, score DOUBLE PRECISION)
LANGUAGE sql STABLE AS $$
WITH phrases AS MATERIALIZED (
    SELECT p.n, v.lexeme
    FROM unnest(string_to_array(expr, '" OR "')) WITH ORDINALITY AS p(phrase, n)
    CROSS JOIN LATERAL unnest(CASE WHEN fts_table = 'messages_fts_intl' THEN localmem_intl_tsvector(p.phrase)
                                   ELSE localmem_en_tsvector(p.phrase) END) AS v
),
terms AS MATERIALIZED (SELECT array_agg(DISTINCT lexeme) AS lexemes FROM phrases),
stats AS MATERIALIZED (SELECT n_rows, avgdl FROM localmem_fts_size(fts_table)),
idf AS MATERIALIZED (
    SELECT d.lexeme, CASE WHEN x.idf <= 0 THEN 1e-6::float8 ELSE x.idf END AS idf
    FROM terms AS t CROSS JOIN stats AS s CROSS JOIN LATERAL localmem_fts_docs(fts_table, t.lexemes) AS d
    CROSS JOIN LATERAL (SELECT ln((s.n_rows - d.ndoc + 0.5) / (d.ndoc + 0.5)) AS idf) AS x
),
hits AS (
    SELECT p.id, p.tokens, p.lexeme, p.tf::float8 AS tf
    FROM terms AS t JOIN fts_postings AS p ON p.tbl = fts_table AND p.lexeme = ANY (t.lexemes) AND p.ns = in_ns
    WHERE among IS NULL OR p.id IN (SELECT value FROM localmem_ids(among))
)
SELECT h.id,
       -sum(i.idf * ((h.tf * (1.2::float8 + 1.0::float8))
                     / (h.tf + 1.2::float8 * (1.0::float8 - 0.75::float8 + 0.75::float8 * h.tokens / s.avgdl)))
            ORDER BY ph.n) AS score
FROM hits AS h JOIN phrases AS ph ON ph.lexeme = h.lexeme JOIN idf AS i ON i.lexeme = h.lexeme CROSS JOIN stats AS s
GROUP BY h.id
$$;
