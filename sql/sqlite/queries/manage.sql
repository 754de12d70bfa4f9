-- The manage queries whose text differs by engine, as SQLite runs them;
-- each name is also in sql/postgres/queries/manage.sql (PostgreSQL). The portable ones are in
-- sql/shared/queries/manage.sql.

-- name: stats_messages
SELECT count(*), count(DISTINCT conversation), count(DISTINCT conversation || char(31) || session),
       min(sent_at), max(sent_at)
FROM messages WHERE ns = :ns;

-- name: stats_vector_rows
-- Vectors of :ns per index (what decides exact search or binary codes; see vector_index.py).
SELECT (SELECT count(*) FROM vec_message_codes WHERE ns = :ns),
       (SELECT count(*) FROM vec_unit_codes WHERE ns = :ns),
       (SELECT count(*) FROM vec_part_codes WHERE ns = :ns);
