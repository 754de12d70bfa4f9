-- Level with SQLite migration 0014.
-- A namespace role (migration 0002) got round row-level security (issue 50, findings 1, 2, 5):
--
-- 1. The SECURITY DEFINER functions ran with the search_path of the migration's session
--    ("$user", public), and PostgreSQL searches the session's temporary schema before the path:
--    a role's TEMP TABLE namespace_roles made localmem_my_namespaces() answer with any
--    namespace. Each runs now with search_path pg_catalog, the store's schema, pg_temp last
--    (PostgreSQL's "Writing SECURITY DEFINER Functions Safely": built-ins first, the temporary
--    schema last so its tables capture no name, and functions and operators are never looked
--    up there), and the one that decides who sees what names its table with its schema.
-- 2. Every function was executable by PUBLIC: the trigger function localmem_fts_count(), run as
--    the owner, attached by a role to a TEMP table named messages_fts, read and wrote any
--    namespace's postings. EXECUTE is revoked from PUBLIC on every function of the store;
--    a namespace role is granted the ones its queries call (not the trigger functions, which
--    need no EXECUTE to fire, nor the owner's own).
-- 3. A role could write meta (schema version, embedder) and setval the id sequences to their
--    maximum, blocking every namespace. It keeps no privilege on any sequence (an identity
--    column's default takes its value without one; localmem_next_id is the owner's), may write
--    only the meta keys its own calls write, and no id it can write (directly, or through
--    id_marks which localmem_next_id moves the sequences past) exceeds 2^53 - 1, so a sequence
--    can never be pushed to its end. Message parts and model calls take their ids from
--    localmem_next_id too now (sql/postgres/queries: part_insert, llm_call_log), which skips an
--    id a role wrote ahead of the sequence where the identity's next value collided with it.
--
-- The privileges are granted by localmem_grant_role() (called by `localmem postgres grant`) and
-- applied again to every namespace role, with the PUBLIC revokes and the pinned search paths, by
-- localmem_secure() after every migration and after the vector tables are made (store/pg.py:
-- migrate, bind_embedder), so a function or table added later is covered without saying so.

-- The namespaces of the session's role: the store's own table, named with its schema.
DO $$
DECLARE
    s TEXT := (SELECT n.nspname FROM pg_catalog.pg_class AS c JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
               WHERE c.oid = 'meta'::regclass);
BEGIN
    EXECUTE format($f$
        CREATE OR REPLACE FUNCTION localmem_my_namespaces() RETURNS SETOF TEXT LANGUAGE sql STABLE SECURITY DEFINER
        SET search_path = pg_catalog, %1$I, pg_temp AS $b$
            SELECT r.ns FROM %1$I.namespace_roles AS r WHERE r.role = session_user OR r.role = current_user
        $b$ $f$, s);
END $$;

-- The id an insert takes (migration 0001), for the store's tables of ids only: it runs as the
-- owner, and any other name (a table without an identity, one of the caller's TEMP tables)
-- looped for ever or read what the caller may not.
CREATE OR REPLACE FUNCTION localmem_next_id(tbl TEXT) RETURNS BIGINT LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    seq TEXT;
    candidate BIGINT;
    floor BIGINT;
    used BOOLEAN;
BEGIN
    IF tbl IS NULL OR tbl NOT IN ('sources', 'messages', 'units', 'entities', 'llm_calls', 'message_parts') THEN
        RAISE EXCEPTION 'localmem_next_id: % is not a table of ids', tbl USING ERRCODE = 'invalid_parameter_value';
    END IF;
    seq := pg_get_serial_sequence(tbl, 'id');
    candidate := nextval(seq);
    LOOP
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I WHERE id = $1)', tbl) INTO used USING candidate;
        SELECT max(high) INTO floor FROM id_marks WHERE name = tbl;
        IF NOT used AND candidate > coalesce(floor, 0) THEN
            RETURN candidate;
        END IF;
        EXECUTE format('SELECT greatest(coalesce(max(id), 0), $1) FROM %I', tbl) INTO floor USING coalesce(floor, 0);
        PERFORM setval(seq, greatest(floor, candidate));
        candidate := nextval(seq);
    END LOOP;
END $$;

-- No id a role can write reaches the sequences' end (2^53 - 1: also the largest integer a
-- JavaScript client reads exactly). NOT VALID: rows already stored are not scanned.
ALTER TABLE sources ADD CONSTRAINT sources_id_range CHECK (id BETWEEN 1 AND 9007199254740991) NOT VALID;
ALTER TABLE messages ADD CONSTRAINT messages_id_range CHECK (id BETWEEN 1 AND 9007199254740991) NOT VALID;
ALTER TABLE units ADD CONSTRAINT units_id_range CHECK (id BETWEEN 1 AND 9007199254740991) NOT VALID;
ALTER TABLE entities ADD CONSTRAINT entities_id_range CHECK (id BETWEEN 1 AND 9007199254740991) NOT VALID;
ALTER TABLE llm_calls ADD CONSTRAINT llm_calls_id_range CHECK (id BETWEEN 1 AND 9007199254740991) NOT VALID;
ALTER TABLE message_parts ADD CONSTRAINT message_parts_id_range CHECK (id BETWEEN 1 AND 9007199254740991) NOT VALID;
ALTER TABLE id_marks ADD CONSTRAINT id_marks_high_range CHECK (high BETWEEN 0 AND 9007199254740991) NOT VALID;

-- meta: every role reads it (the schema's version, the embedder); a namespace role writes only
-- what its own calls write there: the once-said language advice, and a forget's removal of an
-- unfinished reembed's mark. The owner is not subject to these policies.
ALTER TABLE meta ENABLE ROW LEVEL SECURITY;
CREATE POLICY meta_read ON meta FOR SELECT USING (true);
CREATE POLICY meta_advice_insert ON meta FOR INSERT WITH CHECK (key = 'language_advice' AND length(value) <= 64);
CREATE POLICY meta_advice_update ON meta FOR UPDATE USING (key = 'language_advice')
    WITH CHECK (key = 'language_advice' AND length(value) <= 64);
CREATE POLICY meta_forget_delete ON meta FOR DELETE USING (key = 'reembed_target');

-- The full-text vocabulary views read as the role that queries them (their ts_stat already
-- did; a view over a table would read it as the view's owner, past row-level security).
DO $$ BEGIN
    IF current_setting('server_version_num')::int >= 150000 THEN
        ALTER VIEW messages_fts_vocab SET (security_invoker = true);
        ALTER VIEW messages_fts_intl_vocab SET (security_invoker = true);
    END IF;
END $$;

-- What a namespace role may do, granted to role `r` (by the owner; anything granted before
-- is taken back first): read and write the tables row-level security guards (the BM25
-- statistics and postings read only: the owner's trigger writes them), read the views,
-- write meta as its policies allow, call the store's functions but the trigger functions and
-- the owner's own, and nothing on a sequence. On PostgreSQL 17+, MAINTAIN on the tables it
-- reads, so its forget can vacuum what it deleted.
CREATE FUNCTION localmem_grant_role(r NAME) RETURNS VOID LANGUAGE plpgsql AS $$
DECLARE
    sid OID := (SELECT c.relnamespace FROM pg_catalog.pg_class AS c WHERE c.oid = 'meta'::regclass);
    store_owner OID := (SELECT c.relowner FROM pg_catalog.pg_class AS c WHERE c.oid = 'meta'::regclass);
    s NAME := (SELECT n.nspname FROM pg_catalog.pg_namespace AS n WHERE n.oid = sid);
    maintain TEXT := CASE WHEN current_setting('server_version_num')::int >= 170000 THEN ', MAINTAIN' ELSE '' END;
    t RECORD;
    f RECORD;
BEGIN
    EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA %I FROM %I', s, r);
    EXECUTE format('REVOKE ALL ON ALL SEQUENCES IN SCHEMA %I FROM %I', s, r);
    EXECUTE format('REVOKE ALL ON ALL FUNCTIONS IN SCHEMA %I FROM %I', s, r);
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', s, r);
    FOR t IN
        SELECT c.relname, c.relkind, c.relrowsecurity FROM pg_catalog.pg_class AS c
        WHERE c.relnamespace = sid AND c.relkind IN ('r', 'p', 'v')
          AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend AS d
                          WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')
    LOOP
        IF t.relkind = 'v' THEN
            EXECUTE format('GRANT SELECT ON %I.%I TO %I', s, t.relname, r);
        ELSIF t.relname = 'namespace_roles' OR NOT t.relrowsecurity THEN
            CONTINUE;  -- who may see what, and any table row-level security does not guard
        ELSIF t.relname = 'meta' OR t.relname LIKE 'fts\_%' THEN
            EXECUTE format('GRANT SELECT%s ON %I.%I TO %I', maintain, s, t.relname, r);
            IF t.relname = 'meta' THEN
                EXECUTE format('GRANT INSERT, UPDATE, DELETE ON %I.%I TO %I', s, t.relname, r);
            END IF;
        ELSE
            EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE%s ON %I.%I TO %I', maintain, s, t.relname, r);
        END IF;
    END LOOP;
    FOR f IN
        SELECT p.oid::regprocedure AS sig FROM pg_catalog.pg_proc AS p
        WHERE p.pronamespace = sid AND p.proowner = store_owner AND p.prokind = 'f'
          AND p.prorettype <> 'trigger'::regtype
          AND p.proname NOT IN ('localmem_fts_fold', 'localmem_protect', 'localmem_grant_role', 'localmem_secure')
          AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend AS d
                          WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
    LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', f.sig, r);
    END LOOP;
END $$;

-- After every migration: each SECURITY DEFINER function of the store (its schema's functions
-- that the store's owner owns, not an extension's) runs with the safe search_path, none of
-- them is PUBLIC's, and every namespace role has what
-- localmem_grant_role gives (a table or function a migration added included).
CREATE FUNCTION localmem_secure() RETURNS VOID LANGUAGE plpgsql AS $$
DECLARE
    sid OID := (SELECT c.relnamespace FROM pg_catalog.pg_class AS c WHERE c.oid = 'meta'::regclass);
    store_owner OID := (SELECT c.relowner FROM pg_catalog.pg_class AS c WHERE c.oid = 'meta'::regclass);
    s NAME := (SELECT n.nspname FROM pg_catalog.pg_namespace AS n WHERE n.oid = sid);
    f RECORD;
    r NAME;
BEGIN
    FOR f IN
        SELECT p.oid::regprocedure AS sig, p.prosecdef FROM pg_catalog.pg_proc AS p
        WHERE p.pronamespace = sid AND p.proowner = store_owner AND p.prokind IN ('f', 'p')
          AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend AS d
                          WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
    LOOP
        IF f.prosecdef THEN
            EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, %I, pg_temp', f.sig, s);
        END IF;
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f.sig);
    END LOOP;
    FOR r IN SELECT DISTINCT nr.role FROM namespace_roles AS nr
             WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_roles AS x WHERE x.rolname = nr.role) ORDER BY 1
    LOOP
        PERFORM localmem_grant_role(r);
    END LOOP;
END $$;

SELECT localmem_secure();
