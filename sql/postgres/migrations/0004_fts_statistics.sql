-- Level with SQLite migration 0013.
-- BM25's statistics and postings kept as rows change, as FTS5 keeps them (issue 46: search at
-- 10,000 messages took 0.25 s, most of it counting them at query time over the whole index).
--
-- For each full-text table (messages_fts, messages_fts_intl, units_fts) and namespace: its row
-- count and total token count (fts_stats), and for each lexeme the rows that hold it
-- (fts_terms). Search sums them over the namespaces the role sees: the store's owner every
-- namespace (FTS5's statistics are the whole file's), a namespace role its own (row-level
-- security), which is what counting the visible rows at query time gave, so BM25 is unchanged.
--
-- Writers never update a shared row: a trigger on each full-text table appends its change
-- (+1 or -1) to the *_delta tables, so concurrent writers take no lock on the statistics.
-- Search adds the deltas to the folded rows. Every 256th change, the writer that has the
-- statistics' advisory lock (others skip; it is held to the end of that transaction) folds
-- the deltas into fts_stats / fts_terms (deleting what it folds: a concurrent fold skips the
-- rows already taken) and drops lexemes no row holds any more, so a forgotten message's words
-- do not stay in the statistics (forget folds at once, then vacuums these tables too).
CREATE TABLE fts_stats (
    tbl          TEXT NOT NULL,
    ns           TEXT NOT NULL,
    n_rows       BIGINT NOT NULL,
    total_tokens BIGINT NOT NULL,
    PRIMARY KEY (tbl, ns)
);
CREATE TABLE fts_stats_delta (
    tbl          TEXT NOT NULL,
    ns           TEXT NOT NULL,
    n_rows       BIGINT NOT NULL,
    total_tokens BIGINT NOT NULL
);
CREATE INDEX fts_stats_delta_by_tbl ON fts_stats_delta (tbl);
CREATE TABLE fts_terms (
    tbl    TEXT NOT NULL,
    lexeme TEXT NOT NULL,
    ns     TEXT NOT NULL,
    ndoc   BIGINT NOT NULL,
    PRIMARY KEY (tbl, lexeme, ns)
);
CREATE TABLE fts_terms_delta (
    tbl    TEXT NOT NULL,
    lexeme TEXT NOT NULL,
    ns     TEXT NOT NULL,
    ndoc   BIGINT NOT NULL
);
CREATE INDEX fts_terms_delta_by_lexeme ON fts_terms_delta (tbl, lexeme);
-- The postings: for each lexeme, the rows that hold it with its weighted frequency there (a
-- message's body counts 1, its context 0.5, as bm25(messages_fts, 0.5, 1.0); a unit's every
-- occurrence 1) and the row's token count. BM25 reads the query's lexemes' postings by this
-- index instead of unnesting every matching tsvector (0.2 s for a common word at 10,000 rows).
CREATE TABLE fts_postings (
    tbl    TEXT NOT NULL,
    lexeme TEXT NOT NULL,
    ns     TEXT NOT NULL,
    id     BIGINT NOT NULL,
    tf     REAL NOT NULL,
    tokens INTEGER NOT NULL,
    PRIMARY KEY (tbl, lexeme, ns, id)
);
SELECT localmem_protect(t) FROM unnest(ARRAY['fts_stats', 'fts_stats_delta', 'fts_terms', 'fts_terms_delta', 'fts_postings']) AS t;

-- A row's postings (its lexemes, their frequency in it as BM25 weighs them).
CREATE FUNCTION localmem_postings(tbl TEXT, doc TSVECTOR) RETURNS TABLE (lexeme TEXT, tf REAL)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT u.lexeme,
           CASE WHEN tbl = 'units_fts' THEN coalesce(array_length(u.positions, 1), 1)::real
                ELSE (SELECT sum(CASE w WHEN 'A' THEN 1.0 ELSE 0.5 END) FROM unnest(u.weights) AS w)::real END
    FROM unnest(doc) AS u
$$;

-- Numbers the changes (not transactional, takes no lock): every 256th folds the deltas.
CREATE SEQUENCE fts_changes;

-- Fold the deltas (the caller holds the statistics' advisory lock). SECURITY DEFINER: it
-- folds every namespace's rows, as the owner sees them.
CREATE FUNCTION localmem_fts_fold() RETURNS VOID LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT AS $$
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
    DELETE FROM fts_terms AS t USING folded AS f
    WHERE f.ndoc = 0 AND t.tbl = f.tbl AND t.lexeme = f.lexeme AND t.ns = f.ns;
END $$;

-- Fold now if no other session is folding (forget calls it; the trigger every 256th change).
CREATE FUNCTION localmem_fts_maybe_fold() RETURNS BOOLEAN LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT AS $$
BEGIN
    -- any constant: "lmfs"
    IF pg_try_advisory_xact_lock(1819108979) THEN
        PERFORM localmem_fts_fold();
        RETURN true;
    END IF;
    RETURN false;
END $$;

CREATE FUNCTION localmem_fts_count() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.ns = NEW.ns THEN
        IF OLD.doc = NEW.doc AND OLD.tokens = NEW.tokens THEN
            RETURN NULL;
        END IF;
        DELETE FROM fts_postings WHERE tbl = TG_TABLE_NAME AND lexeme = ANY (tsvector_to_array(OLD.doc))
            AND ns = OLD.ns AND id = OLD.id;
        INSERT INTO fts_postings (tbl, lexeme, ns, id, tf, tokens)
        SELECT TG_TABLE_NAME, p.lexeme, NEW.ns, NEW.id, p.tf, NEW.tokens FROM localmem_postings(TG_TABLE_NAME, NEW.doc) AS p;
        INSERT INTO fts_stats_delta VALUES (TG_TABLE_NAME, NEW.ns, 0, NEW.tokens - OLD.tokens);
        -- only the lexemes that came or went
        INSERT INTO fts_terms_delta (tbl, lexeme, ns, ndoc)
        SELECT TG_TABLE_NAME, coalesce(n.l, o.l), NEW.ns, CASE WHEN n.l IS NULL THEN -1 ELSE 1 END
        FROM unnest(tsvector_to_array(NEW.doc)) AS n(l)
        FULL JOIN unnest(tsvector_to_array(OLD.doc)) AS o(l) ON o.l = n.l
        WHERE n.l IS NULL OR o.l IS NULL;
    ELSE
        IF TG_OP IN ('UPDATE', 'DELETE') THEN
            DELETE FROM fts_postings WHERE tbl = TG_TABLE_NAME AND lexeme = ANY (tsvector_to_array(OLD.doc))
                AND ns = OLD.ns AND id = OLD.id;
            INSERT INTO fts_stats_delta VALUES (TG_TABLE_NAME, OLD.ns, -1, -OLD.tokens);
            INSERT INTO fts_terms_delta (tbl, lexeme, ns, ndoc)
            SELECT TG_TABLE_NAME, l, OLD.ns, -1 FROM unnest(tsvector_to_array(OLD.doc)) AS l;
        END IF;
        IF TG_OP IN ('UPDATE', 'INSERT') THEN
            INSERT INTO fts_postings (tbl, lexeme, ns, id, tf, tokens)
            SELECT TG_TABLE_NAME, p.lexeme, NEW.ns, NEW.id, p.tf, NEW.tokens FROM localmem_postings(TG_TABLE_NAME, NEW.doc) AS p;
            INSERT INTO fts_stats_delta VALUES (TG_TABLE_NAME, NEW.ns, 1, NEW.tokens);
            INSERT INTO fts_terms_delta (tbl, lexeme, ns, ndoc)
            SELECT TG_TABLE_NAME, l, NEW.ns, 1 FROM unnest(tsvector_to_array(NEW.doc)) AS l;
        END IF;
    END IF;
    IF nextval('fts_changes') % 256 = 0 THEN
        PERFORM localmem_fts_maybe_fold();
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER messages_fts_count AFTER INSERT OR UPDATE OR DELETE ON messages_fts
    FOR EACH ROW EXECUTE FUNCTION localmem_fts_count();
CREATE TRIGGER messages_fts_intl_count AFTER INSERT OR UPDATE OR DELETE ON messages_fts_intl
    FOR EACH ROW EXECUTE FUNCTION localmem_fts_count();
CREATE TRIGGER units_fts_count AFTER INSERT OR UPDATE OR DELETE ON units_fts
    FOR EACH ROW EXECUTE FUNCTION localmem_fts_count();

-- The term and row counts of one full-text table that search reads, as the caller's role sees
-- them (the folded rows plus the deltas not folded yet).
CREATE FUNCTION localmem_fts_docs(t TEXT, lexemes TEXT[]) RETURNS TABLE (lexeme TEXT, ndoc BIGINT)
LANGUAGE sql STABLE AS $$
    SELECT x.lexeme, sum(x.ndoc)::bigint FROM (
        SELECT f.lexeme, f.ndoc FROM fts_terms AS f WHERE f.tbl = t AND f.lexeme = ANY (lexemes)
        UNION ALL
        SELECT d.lexeme, d.ndoc FROM fts_terms_delta AS d WHERE d.tbl = t AND d.lexeme = ANY (lexemes)
    ) AS x GROUP BY x.lexeme
$$;

-- (rows, mean tokens per row) of one full-text table: BM25's N and avgdl, the mean divided in
-- double precision as FTS5 divides it (1 for an empty table, which no query matches).
CREATE FUNCTION localmem_fts_size(t TEXT) RETURNS TABLE (n_rows DOUBLE PRECISION, avgdl DOUBLE PRECISION)
LANGUAGE sql STABLE AS $$
    SELECT coalesce(sum(x.n_rows), 0)::float8,
           CASE WHEN sum(x.total_tokens) > 0 AND sum(x.n_rows) > 0
                THEN sum(x.total_tokens)::float8 / sum(x.n_rows)::float8 ELSE 1 END
    FROM (
        SELECT s.n_rows, s.total_tokens FROM fts_stats AS s WHERE s.tbl = t
        UNION ALL
        SELECT d.n_rows, d.total_tokens FROM fts_stats_delta AS d WHERE d.tbl = t
    ) AS x
$$;

-- A store made before this migration: its statistics from its rows.
INSERT INTO fts_stats (tbl, ns, n_rows, total_tokens)
SELECT 'messages_fts', ns, count(*), sum(tokens) FROM messages_fts GROUP BY ns
UNION ALL SELECT 'messages_fts_intl', ns, count(*), sum(tokens) FROM messages_fts_intl GROUP BY ns
UNION ALL SELECT 'units_fts', ns, count(*), sum(tokens) FROM units_fts GROUP BY ns;
INSERT INTO fts_terms (tbl, lexeme, ns, ndoc)
SELECT 'messages_fts', l, ns, count(*) FROM messages_fts, unnest(tsvector_to_array(doc)) AS l GROUP BY ns, l
UNION ALL SELECT 'messages_fts_intl', l, ns, count(*) FROM messages_fts_intl, unnest(tsvector_to_array(doc)) AS l GROUP BY ns, l
UNION ALL SELECT 'units_fts', l, ns, count(*) FROM units_fts, unnest(tsvector_to_array(doc)) AS l GROUP BY ns, l;
INSERT INTO fts_postings (tbl, lexeme, ns, id, tf, tokens)
SELECT 'messages_fts', p.lexeme, f.ns, f.id, p.tf, f.tokens FROM messages_fts AS f, localmem_postings('messages_fts', f.doc) AS p
UNION ALL SELECT 'messages_fts_intl', p.lexeme, f.ns, f.id, p.tf, f.tokens FROM messages_fts_intl AS f, localmem_postings('messages_fts_intl', f.doc) AS p
UNION ALL SELECT 'units_fts', p.lexeme, f.ns, f.id, p.tf, f.tokens FROM units_fts AS f, localmem_postings('units_fts', f.doc) AS p;
