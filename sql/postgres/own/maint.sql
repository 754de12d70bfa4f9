-- The PostgreSQL store's maintenance (store/pgmaint.py): what a forget and a vacuum do
-- after the rows are deleted, and the planner's statistics.

-- name: table_exists
SELECT to_regclass(:t) IS NOT NULL;

-- name: empty_tables
SELECT t
FROM unnest(CAST(:t AS text[])) AS t
    JOIN pg_class AS c ON c.oid = to_regclass(t)
WHERE c.reltuples = 0;

-- name: clear_attribute_stats
-- PostgreSQL 18's pg_clear_attribute_stats for every column of the tables :t.
SELECT pg_clear_attribute_stats(n.nspname::text, c.relname::text, a.attname::text, false)
FROM unnest(CAST(:t AS text[])) AS t
    JOIN pg_class AS c ON c.oid = to_regclass(t)
    JOIN pg_namespace AS n ON n.oid = c.relnamespace
    JOIN pg_attribute AS a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped;

-- name: is_superuser
SELECT rolsuper FROM pg_roles WHERE rolname = current_user;

-- name: delete_statistics
-- Before PostgreSQL 18, a superuser deletes the catalog's rows of the tables :t.
DELETE FROM pg_catalog.pg_statistic
WHERE starelid IN (SELECT to_regclass(t) FROM unnest(CAST(:t AS text[])) AS t);

-- name: wal_purge_facts
-- What decides whether the WAL can be moved past a forget (pgmaint.py, _purge_wal): the role's
-- rights, then what makes the server keep its old files.
SELECT
    (SELECT rolsuper FROM pg_roles WHERE rolname = current_user),
    has_function_privilege('pg_catalog.pg_switch_wal()', 'EXECUTE'),
    EXISTS (
        SELECT 1 FROM pg_roles
        WHERE rolname = 'pg_checkpoint' AND pg_has_role(current_user, oid, 'USAGE')
    ),
    current_setting('wal_recycle', true),
    current_setting('archive_mode', true),
    current_setting('wal_keep_size', true),
    current_setting('summarize_wal', true),
    (SELECT count(*) FROM pg_replication_slots),
    has_function_privilege('pg_catalog.pg_ls_waldir()', 'EXECUTE');

-- name: switch_wal
SELECT pg_walfile_name(pg_switch_wal());

-- name: checkpoint
CHECKPOINT;

-- name: wal_files_left
-- The WAL files up to :s (the one just ended) still in the directory.
SELECT count(*) FROM pg_ls_waldir() WHERE name ~ '^[0-9A-F]{24}$' AND name <= :s;

-- name: analyze
ANALYZE;

-- name: may_maintain
SELECT current_setting('server_version_num')::int >= 170000
    AND EXISTS (
        SELECT 1 FROM pg_roles
        WHERE rolname = 'pg_maintain' AND pg_has_role(current_user, oid, 'USAGE')
    );

-- name: followers
-- The turn after each of the messages :ids in its session.
SELECT DISTINCT n.id
FROM localmem_ids(:ids) AS j
    JOIN messages AS m ON m.id = j.value
    JOIN messages AS n ON n.ns = m.ns AND n.conversation = m.conversation AND n.session = m.session
        AND n.seq = (
            SELECT min(x.seq) FROM messages AS x
            WHERE x.ns = m.ns AND x.conversation = m.conversation AND x.session = m.session AND x.seq > m.seq
        );

-- name: forget_readers
SELECT DISTINCT unit_id FROM unit_sources WHERE message_id IN (SELECT value FROM localmem_ids(:messages));

-- name: forget_mentioned
SELECT DISTINCT entity_id FROM mentions WHERE unit_id IN (SELECT value FROM localmem_ids(:units));

-- name: forget_scrub_calls
UPDATE llm_calls SET raw = NULL, error = NULL
WHERE episode_id IN (SELECT value FROM localmem_ids(:episodes))
    AND (raw IS NOT NULL OR error IS NOT NULL);

-- name: forget_stale_summaries
UPDATE entities SET summary = NULL, summary_at = NULL, data = CAST(CAST(data AS jsonb) - 'summary' AS text)
WHERE id IN (SELECT value FROM localmem_ids(:entities)) AND summary IS NOT NULL;

-- name: relation_bytes
SELECT coalesce(sum(pg_total_relation_size(to_regclass(t))), 0)
FROM unnest(CAST(:t AS text[])) AS t
WHERE to_regclass(t) IS NOT NULL;

-- name: reindex_messages
SELECT localmem_reindex_message(value) FROM localmem_ids(:ids);

-- name: drop_context_parts
DELETE FROM message_parts WHERE context = 1 AND message_id IN (SELECT value FROM localmem_ids(:ids));

-- name: fold_fts_statistics
SELECT localmem_fts_maybe_fold();

-- name: vacuum_statistics
-- The catalog of statistics written anew (a superuser, or pg_maintain on PostgreSQL 17+).
VACUUM (FULL, VERBOSE) pg_catalog.pg_statistic;
