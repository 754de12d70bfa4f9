-- The statements `localmem postgres start` runs on its own server (store/pgserver.py, through psql).

-- name: server_wal_recycle
-- A forget removes the WAL files that held what it deleted (pgmaint.py, _purge_wal): the server
-- must delete old WAL files, not rename them for reuse with their bytes in them.
SHOW wal_recycle;

-- name: server_wal_recycle_off
ALTER SYSTEM SET wal_recycle = off;

-- name: server_reload_conf
SELECT pg_reload_conf();
