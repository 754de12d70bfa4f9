-- PgStore's own reads (store/pg.py): size, doctor's facts, a grant's report.

-- name: database_size
SELECT pg_database_size(current_database());

-- name: server_versions
SELECT current_setting('server_version'), (SELECT extversion FROM pg_extension WHERE extname = 'vector');

-- name: role_namespaces
SELECT ns FROM namespace_roles WHERE role = :r ORDER BY ns;

-- name: server_version_num
SELECT current_setting('server_version_num')::int;
