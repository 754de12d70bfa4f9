-- The channels queries whose text differs by engine, as PostgreSQL runs them;
-- each name is also in sql/sqlite/queries/channels.sql (SQLite). The portable ones are in
-- sql/shared/queries/channels.sql.

-- name: graph_walk
-- Spreading activation (see the SQLite query). PostgreSQL allows one recursive reference and
-- no ORDER BY / LIMIT inside the recursion: the three kinds of edge are one UNION inside a
-- LATERAL, the walk is breadth-first to :depth, and :max_rows bounds the rows kept per level
-- (the SQLite walk is best-first over a queue of :max_rows rows; at the depths used, 2, both
-- follow every edge above the thresholds from the seeds). An entity counted as never mentioned
-- (its filter may be applied before the join) gives NULL, as SQLite's division by zero does.
WITH RECURSIVE
  walk(node, act, depth) AS (
    SELECT (value ->> 0)::bigint, (value ->> 1)::float8, 0 FROM jsonb_array_elements(CAST(:seeds AS jsonb))
    UNION ALL
    SELECT e.node, e.act, walk.depth + 1
    FROM walk CROSS JOIN LATERAL (
        SELECT l.dst_id AS node, walk.act * l.weight * :decay AS act FROM links AS l
        WHERE l.src_id = walk.node AND l.weight >= :min_weight
        UNION ALL
        SELECT l.src_id, walk.act * l.weight * :decay FROM links AS l
        WHERE l.dst_id = walk.node AND l.weight >= :min_weight
        UNION ALL
        SELECT b.unit_id, walk.act * :decay / sqrt(nullif(en.mention_count, 0))
        FROM mentions AS a JOIN entities AS en ON en.id = a.entity_id AND en.ns = :ns
        JOIN mentions AS b ON b.entity_id = a.entity_id AND b.unit_id != walk.node
        WHERE a.unit_id = walk.node AND 1.0 / sqrt(nullif(en.mention_count, 0)) >= :min_weight
    ) AS e
    WHERE walk.depth < :depth AND e.act >= :min_activation
  )
SELECT w.node, max(w.act) AS activation
FROM (SELECT * FROM walk LIMIT :max_rows) AS w JOIN units AS u ON u.id = w.node AND u.text != ''
GROUP BY w.node ORDER BY activation DESC, w.node LIMIT :budget;

-- name: temporal_neighbours
-- Temporal links touching the units of :ids (JSON array): (from in :ids, to, weight).
SELECT l.src_id, l.dst_id, l.weight FROM links AS l
WHERE l.type = 'temporal' AND l.src_id IN (SELECT value FROM localmem_ids(:ids))
UNION ALL
SELECT l.dst_id, l.src_id, l.weight FROM links AS l
WHERE l.type = 'temporal' AND l.dst_id IN (SELECT value FROM localmem_ids(:ids));

-- name: entities_named
SELECT e.id, a.norm_alias, 1.0 / sqrt(greatest(1, e.mention_count))
FROM jsonb_array_elements_text(CAST(:names AS jsonb)) AS n(value)
JOIN entity_aliases AS a ON a.norm_alias = n.value
JOIN entities AS e ON e.id = a.entity_id
WHERE e.ns = :ns;

-- name: units_of_entities
SELECT m.unit_id,
       sum(w.value::float8 * (1 + CASE WHEN EXISTS (
             SELECT 1 FROM jsonb_array_elements_text(CAST(:words AS jsonb)) AS q(value)
             WHERE strpos(' ' || lower(coalesce(m.tag, '')) || ' ', ' ' || q.value || ' ') > 0) THEN 1 ELSE 0 END)) AS score
FROM jsonb_each_text(CAST(:weights AS jsonb)) AS w(key, value)
JOIN mentions AS m ON m.entity_id = w.key::bigint
 AND m.unit_id >= coalesce((SELECT r.unit_id FROM mentions AS r WHERE r.entity_id = w.key::bigint
                            ORDER BY r.unit_id DESC LIMIT 1 OFFSET :per_entity - 1), 0)
JOIN units AS u ON u.id = m.unit_id AND u.text != ''
GROUP BY m.unit_id ORDER BY score DESC, m.unit_id DESC LIMIT :limit;

-- name: episode_fits
SELECT EXISTS (
  SELECT 1 FROM units AS e
  WHERE e.id = :id
    AND (jsonb_array_length(CAST(:entities AS jsonb)) = 0 OR EXISTS (
         SELECT 1 FROM mentions AS m JOIN units AS u ON u.id = m.unit_id
         WHERE (u.id = e.id OR u.episode_id = e.id)
           AND m.entity_id IN (SELECT value FROM localmem_ids(:entities))))
    AND (CAST(:start AS text) IS NULL OR (e.occurred_start <= :end || 'T99'
                            AND coalesce(e.occurred_end, e.occurred_start) >= :start))
);

-- name: links_among
-- Links of :type whose both ends are among :ids (JSON array) and weigh at least :min_weight.
SELECT src_id, dst_id, weight FROM links
WHERE type = :type AND weight >= :min_weight
  AND src_id IN (SELECT value FROM localmem_ids(:ids)) AND dst_id IN (SELECT value FROM localmem_ids(:ids));

-- name: supersession_of
-- Supersedes links touching :ids (JSON array): (newer unit, older unit).
SELECT src_id, dst_id FROM links
WHERE type = 'supersedes'
  AND (src_id IN (SELECT value FROM localmem_ids(:ids)) OR dst_id IN (SELECT value FROM localmem_ids(:ids)));

-- name: entity_episode_shares
-- The share of the namespace's episodes that mention each entity of :ids (a JSON array).
SELECT e.id, CAST(e.episode_count AS double precision)
       / greatest(1, (SELECT count(*) FROM units WHERE ns = :ns AND kind = 'episode'))
FROM localmem_ids(:ids) AS j JOIN entities AS e ON e.id = j.value;
