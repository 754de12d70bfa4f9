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

-- name: namespace_names
SELECT ns FROM sources UNION SELECT ns FROM units UNION SELECT ns FROM entities ORDER BY 1;
