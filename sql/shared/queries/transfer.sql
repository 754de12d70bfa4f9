-- Export and import queries with one text for both engines (the rest: sql/sqlite/queries/transfer.sql,
-- sql/postgres/queries/transfer.sql).

-- name: export_namespaces
SELECT ns FROM sources UNION SELECT ns FROM units UNION SELECT ns FROM entities ORDER BY 1;

-- name: ids_in_use
-- Rows, or ids a forget freed (id_marks): a restore keeps the file's ids only when all are 0.
SELECT (SELECT count(*) FROM sources), (SELECT count(*) FROM units), (SELECT count(*) FROM entities),
       (SELECT count(*) FROM id_marks);

-- name: ids_taken
-- The highest id each table gave out in namespace :ns, deleted since or not (the export's header).
SELECT 'sources', max(id) FROM sources WHERE ns = :ns
UNION ALL SELECT 'messages', max(id) FROM messages WHERE ns = :ns
UNION ALL SELECT 'units', max(id) FROM units WHERE ns = :ns
UNION ALL SELECT 'entities', max(id) FROM entities WHERE ns = :ns
UNION ALL SELECT name, high FROM id_marks WHERE ns = :ns;

-- name: import_unit_source
INSERT INTO unit_sources (unit_id, message_id) VALUES (:unit_id, :message_id);
