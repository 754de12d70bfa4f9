-- Level with SQLite migration 0013.
-- The fold of BM25's statistics (migration 0004) now drops the lexemes no row holds any more.
--
-- Its DELETE of the lexemes whose count reached 0 was the main statement of the one that
-- updated those counts (a data-modifying WITH): every part of such a statement reads one
-- snapshot, so the DELETE met each row as it was before the update, and PostgreSQL skips
-- deleting a row the same statement has already updated. Every lexeme a forget or an edit took
-- from the last row holding it stayed in fts_terms with ndoc 0, and with it the forgotten
-- word's text in the table's pages (tests/store/test_forget_targets.py found a unit's
-- hand-edited word so after forget --match). The delete is now a statement of its own, over
-- the lexemes the fold brought to 0.
CREATE OR REPLACE FUNCTION localmem_fts_fold() RETURNS VOID LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT AS $$
DECLARE
    zero_tbl TEXT[];
    zero_lexeme TEXT[];
    zero_ns TEXT[];
BEGIN
    WITH gone AS (DELETE FROM fts_stats_delta RETURNING tbl, ns, n_rows, total_tokens)
    INSERT INTO fts_stats (tbl, ns, n_rows, total_tokens)
    SELECT tbl, ns, sum(n_rows), sum(total_tokens) FROM gone GROUP BY tbl, ns ORDER BY tbl, ns
    ON CONFLICT (tbl, ns) DO UPDATE SET n_rows = fts_stats.n_rows + excluded.n_rows,
                                        total_tokens = fts_stats.total_tokens + excluded.total_tokens;
    DELETE FROM fts_stats WHERE n_rows = 0;
    WITH gone AS (DELETE FROM fts_terms_delta RETURNING tbl, lexeme, ns, ndoc),
    sums AS (SELECT tbl, lexeme, ns, sum(ndoc) AS ndoc FROM gone GROUP BY tbl, lexeme, ns),
    folded AS (
        INSERT INTO fts_terms (tbl, lexeme, ns, ndoc)
        SELECT tbl, lexeme, ns, ndoc FROM sums WHERE ndoc <> 0 ORDER BY tbl, lexeme, ns
        ON CONFLICT (tbl, lexeme, ns) DO UPDATE SET ndoc = fts_terms.ndoc + excluded.ndoc
        RETURNING tbl, lexeme, ns, ndoc
    )
    SELECT array_agg(f.tbl), array_agg(f.lexeme), array_agg(f.ns) INTO zero_tbl, zero_lexeme, zero_ns
    FROM folded AS f WHERE f.ndoc = 0;
    IF zero_tbl IS NOT NULL THEN
        DELETE FROM fts_terms AS t USING unnest(zero_tbl, zero_lexeme, zero_ns) AS z(tbl, lexeme, ns)
        WHERE t.tbl = z.tbl AND t.lexeme = z.lexeme AND t.ns = z.ns AND t.ndoc = 0;
    END IF;
END $$;

-- What the old fold left.
DELETE FROM fts_terms WHERE ndoc = 0;
