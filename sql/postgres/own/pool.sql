-- Each new connection's settings, the schema's version and migrations (store/pgpool.py).

-- name: vector_type_oid
SELECT oid FROM pg_type WHERE typname = 'vector';

-- name: session_timezone
SET TimeZone = 'UTC';

-- name: session_hnsw_iterative_scan
SET hnsw.iterative_scan = strict_order;

-- name: session_hnsw_ef_search
SET hnsw.ef_search = 100;

-- name: meta_exists
SELECT to_regclass('meta') IS NOT NULL;

-- name: pg_schema_version
SELECT value FROM meta WHERE key = 'pg_schema_version';

-- name: migrate_waits_for_locks
SET LOCAL lock_timeout = 0;

-- name: set_pg_schema_version
INSERT INTO meta (key, value) VALUES ('pg_schema_version', :version)
ON CONFLICT (key) DO UPDATE SET value = excluded.value;

-- name: tables_on_search_path
SELECT table_name
FROM information_schema.tables
WHERE table_schema = ANY (current_schemas(false))
    AND table_type = 'BASE TABLE'
ORDER BY 1;

-- name: secure_exists
SELECT to_regprocedure('localmem_secure()') IS NOT NULL;

-- name: secure
SELECT localmem_secure();

-- name: vectors_exist
SELECT to_regclass('vec_messages') IS NOT NULL;

-- name: advisory_lock
-- The store's advisory lock (:key, pg.py's _MIGRATE_LOCK), held until the transaction ends.
SELECT pg_advisory_xact_lock(:key);
