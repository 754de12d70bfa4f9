-- A namespace's users and what would make their restriction hollow (store/pgroles.py).

-- name: role_exists
SELECT 1 FROM pg_roles WHERE rolname = :r;

-- name: role_namespace_add
INSERT INTO namespace_roles (role, ns) VALUES (:r, :ns) ON CONFLICT DO NOTHING;

-- name: grant_role
SELECT localmem_grant_role(:r);

-- name: store_schema
SELECT n.nspname
FROM pg_namespace AS n
    JOIN pg_class AS c ON c.relnamespace = n.oid
WHERE c.oid = 'meta'::regclass;

-- name: may_create_in_schema
SELECT has_schema_privilege(:r, :s, 'CREATE');

-- name: trust_rules
SELECT line_number, type, coalesce(address, '')
FROM pg_hba_file_rules
WHERE auth_method = 'trust'
    AND error IS NULL
    AND ('all' = ANY (user_name) OR :r = ANY (user_name))
    AND ('all' = ANY (database) OR current_database() = ANY (database))
ORDER BY line_number;

-- name: unauthenticated_connection
SELECT current_setting('server_version_num')::int >= 160000 AND system_user IS NULL;

-- name: unbound_role
-- Why a role would see every namespace whatever the policies say (checked in this order).
SELECT CASE
    WHEN r.rolname LIKE 'pg\_%' THEN 'is one of PostgreSQL''s built-in roles'
    WHEN r.rolsuper THEN 'is a superuser'
    WHEN r.rolbypassrls THEN 'has BYPASSRLS'
    WHEN pg_has_role(r.oid, (SELECT relowner FROM pg_class WHERE oid = 'meta'::regclass), 'MEMBER')
        THEN 'owns the store (or is a member of its owner)'
    WHEN pg_has_role(r.oid, (SELECT n.nspowner FROM pg_namespace AS n JOIN pg_class AS c ON c.relnamespace = n.oid
                             WHERE c.oid = 'meta'::regclass), 'MEMBER')
        THEN 'owns the store''s schema (it may drop its tables)'
    WHEN pg_has_role(r.oid, (SELECT datdba FROM pg_database WHERE datname = current_database()), 'MEMBER')
        THEN 'owns the database'
    WHEN EXISTS (SELECT 1 FROM pg_roles AS x WHERE (x.rolsuper OR x.rolbypassrls) AND pg_has_role(r.oid, x.oid, 'MEMBER'))
        THEN 'is a member of a superuser or BYPASSRLS role'
END FROM pg_roles AS r WHERE r.rolname = :r;
