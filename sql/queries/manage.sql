-- name: stats_messages
SELECT count(*), count(DISTINCT conversation), count(DISTINCT conversation || char(31) || session),
       min(sent_at), max(sent_at)
FROM messages WHERE ns = :ns;

-- name: stats_units
SELECT kind, count(*) FROM units WHERE ns = :ns GROUP BY kind ORDER BY kind;

-- name: stats_other
SELECT (SELECT count(*) FROM sources WHERE ns = :ns),
       (SELECT count(*) FROM sources WHERE ns = :ns AND status = 'loading'),
       (SELECT count(*) FROM entities WHERE ns = :ns),
       (SELECT count(*) FROM links AS l JOIN units AS u ON u.id = l.src_id WHERE u.ns = :ns);

-- name: namespaces
SELECT n.ns,
       (SELECT count(*) FROM messages AS m WHERE m.ns = n.ns),
       (SELECT count(DISTINCT conversation) FROM messages AS m WHERE m.ns = n.ns),
       (SELECT count(*) FROM units AS u WHERE u.ns = n.ns),
       (SELECT min(sent_at) FROM messages AS m WHERE m.ns = n.ns),
       (SELECT max(sent_at) FROM messages AS m WHERE m.ns = n.ns)
FROM (SELECT ns FROM sources UNION SELECT ns FROM units UNION SELECT ns FROM entities) AS n
ORDER BY n.ns;

-- name: sources_list
SELECT s.id, s.kind, s.uri, s.sha256, s.status, s.created_at, s.finished_at,
       (SELECT count(*) FROM messages AS m WHERE m.source_id = s.id)
FROM sources AS s WHERE s.ns = :ns ORDER BY s.id;

-- name: source_get
SELECT id, ns FROM sources WHERE id = :id;

-- name: forget_namespace_count
SELECT (SELECT count(*) FROM sources WHERE ns = :ns),
       (SELECT count(*) FROM messages WHERE ns = :ns),
       (SELECT count(*) FROM units WHERE ns = :ns),
       (SELECT count(*) FROM entities WHERE ns = :ns);

-- name: forget_namespace
-- (run by purge.purge, which finishes the job: see store/purge.py)
DELETE FROM llm_calls WHERE ns = :ns;
DELETE FROM units WHERE ns = :ns;
DELETE FROM entities WHERE ns = :ns;
DELETE FROM sources WHERE ns = :ns;

-- name: forget_source_count
SELECT 1,
       (SELECT count(*) FROM messages WHERE source_id = :id),
       (SELECT count(DISTINCT us.unit_id) FROM unit_sources AS us
          JOIN messages AS m ON m.id = us.message_id WHERE m.source_id = :id),
       0;

-- name: forget_source
-- (run by purge.purge, which finishes the job: see store/purge.py)
-- Units derived from any of the source's messages go too (they may repeat its content);
-- then entities no unit mentions any more.
DELETE FROM units WHERE id IN (
    SELECT us.unit_id FROM unit_sources AS us
    JOIN messages AS m ON m.id = us.message_id WHERE m.source_id = :id);
DELETE FROM sources WHERE id = :id;
DELETE FROM entities WHERE ns = :ns
  AND NOT EXISTS (SELECT 1 FROM mentions WHERE mentions.entity_id = entities.id);

-- name: stats_vector_rows
-- Vectors of :ns per index (what decides exact search or binary codes; see vector_index.py).
SELECT (SELECT count(*) FROM vec_message_codes WHERE ns = :ns),
       (SELECT count(*) FROM vec_unit_codes WHERE ns = :ns),
       (SELECT count(*) FROM vec_part_codes WHERE ns = :ns);
