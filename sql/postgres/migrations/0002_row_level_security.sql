-- Level with SQLite migration 0012.
-- Many users in one database: a role bound to namespaces reads and changes only their rows,
-- enforced by PostgreSQL (row-level security), whatever SQL the client sends. The store's owner
-- (who ran the migrations) is not subject to the policies, as PostgreSQL's table owners are not;
-- `localmem postgres grant` (store/pg.py: grant_namespace) makes a role and binds it.
CREATE TABLE namespace_roles (
    role NAME NOT NULL,
    ns   TEXT NOT NULL,
    PRIMARY KEY (role, ns)
);

-- The namespaces the current role may use (SECURITY DEFINER: it reads namespace_roles, which
-- the namespace roles themselves cannot).
CREATE FUNCTION localmem_my_namespaces() RETURNS SETOF TEXT LANGUAGE sql STABLE SECURITY DEFINER
SET search_path FROM CURRENT AS $$
    SELECT ns FROM namespace_roles WHERE role = session_user OR role = current_user
$$;

-- Row ids come from the owner's view of the tables (a namespace role would see only its own
-- rows, and could pick an id another namespace holds).
ALTER FUNCTION localmem_next_id(TEXT) SECURITY DEFINER;
ALTER FUNCTION localmem_next_id(TEXT) SET search_path FROM CURRENT;

CREATE FUNCTION localmem_protect(tbl TEXT) RETURNS VOID LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', tbl);
    EXECUTE format('DROP POLICY IF EXISTS by_namespace ON %I', tbl);
    EXECUTE format('CREATE POLICY by_namespace ON %I USING (ns IN (SELECT localmem_my_namespaces())) '
                   'WITH CHECK (ns IN (SELECT localmem_my_namespaces()))', tbl);
END $$;

SELECT localmem_protect(t) FROM unnest(ARRAY['sources', 'messages', 'units', 'entities', 'llm_calls',
    'message_parts', 'messages_fts', 'units_fts', 'id_marks']) AS t;

-- Tables without a namespace column follow the row they belong to (itself filtered).
ALTER TABLE unit_sources ENABLE ROW LEVEL SECURITY;
CREATE POLICY by_namespace ON unit_sources USING (EXISTS (SELECT 1 FROM units AS u WHERE u.id = unit_id));
ALTER TABLE mentions ENABLE ROW LEVEL SECURITY;
CREATE POLICY by_namespace ON mentions USING (EXISTS (SELECT 1 FROM units AS u WHERE u.id = unit_id));
ALTER TABLE links ENABLE ROW LEVEL SECURITY;
CREATE POLICY by_namespace ON links USING (EXISTS (SELECT 1 FROM units AS u WHERE u.id = src_id));
ALTER TABLE consolidations ENABLE ROW LEVEL SECURITY;
CREATE POLICY by_namespace ON consolidations USING (EXISTS (SELECT 1 FROM units AS u WHERE u.id = episode_id));
ALTER TABLE entity_aliases ENABLE ROW LEVEL SECURITY;
CREATE POLICY by_namespace ON entity_aliases USING (EXISTS (SELECT 1 FROM entities AS e WHERE e.id = entity_id));
