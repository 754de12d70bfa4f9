-- The manage queries whose text differs by engine, as PostgreSQL runs them;
-- each name is also in sql/sqlite/queries/manage.sql (SQLite). The portable ones are in
-- sql/shared/queries/manage.sql.

-- name: stats_messages
SELECT count(*), count(DISTINCT conversation), count(DISTINCT conversation || chr(31) || session),
       min(sent_at), max(sent_at)
FROM messages WHERE ns = :ns;

-- name: stats_vector_rows
SELECT (SELECT count(*) FROM vec_messages WHERE ns = :ns),
       (SELECT count(*) FROM vec_units WHERE ns = :ns),
       (SELECT count(*) FROM vec_message_parts WHERE ns = :ns);
