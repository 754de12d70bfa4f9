-- The remaining shared queries whose SQLite text PostgreSQL cannot run (functions, upserts,
-- recursive CTE rules), each with the same meaning and the same result columns.

-- name: entities_list
SELECT e.id, e.name, e.type,
       (SELECT count(DISTINCT m.unit_id) FROM mentions AS m WHERE m.entity_id = e.id),
       (SELECT string_agg(a.alias, ', ') FROM entity_aliases AS a WHERE a.entity_id = e.id)
FROM entities AS e WHERE e.ns = :ns
ORDER BY 4 DESC, e.name LIMIT :limit;

-- name: timeline_messages
SELECT CASE :period WHEN 'week' THEN to_char(date_trunc('week', left(sent_at, 10)::date), 'YYYY-MM-DD')
                    ELSE to_char(date_trunc('month', left(sent_at, 10)::date), 'YYYY-MM-DD') END AS period,
       count(*)
FROM messages WHERE ns = :ns AND sent_at IS NOT NULL AND (CAST(:speaker AS text) IS NULL OR speaker = :speaker)
GROUP BY period ORDER BY period;

-- name: timeline_episodes
SELECT CASE :period WHEN 'week' THEN to_char(date_trunc('week', left(occurred_start, 10)::date), 'YYYY-MM-DD')
                    ELSE to_char(date_trunc('month', left(occurred_start, 10)::date), 'YYYY-MM-DD') END AS period,
       count(*)
FROM units WHERE ns = :ns AND kind = 'episode' AND occurred_start IS NOT NULL
  AND (CAST(:speaker AS text) IS NULL OR EXISTS (
        SELECT 1 FROM unit_sources AS us JOIN messages AS m ON m.id = us.message_id
        WHERE us.unit_id = units.id AND m.speaker = :speaker))
GROUP BY period ORDER BY period;

-- name: knowledge_vectors_of_entity
SELECT u.id, v.embedding
FROM mentions AS m
JOIN units AS u ON u.id = m.unit_id AND u.kind = 'knowledge' AND u.ns = :ns
JOIN vec_units AS v ON v.id = u.id
WHERE m.entity_id = :entity_id AND m.role = 'subject'
  AND NOT EXISTS (SELECT 1 FROM links AS l WHERE l.dst_id = u.id AND l.type = 'supersedes');

-- name: consolidation_insert
INSERT INTO consolidations (episode_id, mode, prompt_version, added, reinforced, superseded, created_at)
VALUES (:episode_id, :mode, :prompt_version, :added, :reinforced, :superseded, :created_at)
ON CONFLICT (episode_id) DO UPDATE SET mode = excluded.mode, prompt_version = excluded.prompt_version,
    added = excluded.added, reinforced = excluded.reinforced, superseded = excluded.superseded,
    created_at = excluded.created_at;

-- name: vec_units_knn_kind
SELECT id, embedding <=> CAST(:embedding AS vector) AS distance
FROM vec_units WHERE ns = :ns AND kind = :kind
ORDER BY embedding <=> CAST(:embedding AS vector) LIMIT :k;

-- name: units_near_in_time
SELECT id, occurred_start FROM units
WHERE ns = :ns AND kind IN ('gist', 'fact') AND id != :id AND occurred_start IS NOT NULL
  AND abs(localmem_julianday(occurred_start) - localmem_julianday(:at)) <= :days
ORDER BY abs(localmem_julianday(occurred_start) - localmem_julianday(:at))
LIMIT :limit;

-- name: entity_profile
SELECT
  (SELECT coalesce(json_agg(tag), '[]'::json) FROM (
     SELECT tag FROM mentions WHERE entity_id = :id AND tag IS NOT NULL AND tag != ''
     GROUP BY tag ORDER BY count(*) DESC LIMIT 5) AS t),
  (SELECT coalesce(json_agg(name), '[]'::json) FROM (
     SELECT e.name FROM mentions AS a JOIN mentions AS b ON b.unit_id = a.unit_id
     JOIN entities AS e ON e.id = b.entity_id
     WHERE a.entity_id = :id AND b.entity_id != :id
     GROUP BY e.id, e.name ORDER BY count(*) DESC LIMIT 5) AS n);

-- name: profile_knowledge
SELECT u.id, u.text, coalesce(u.aspect, m.tag, 'other'), u.occurred_start,
       (SELECT l.src_id FROM links AS l WHERE l.dst_id = u.id AND l.type = 'supersedes' ORDER BY l.src_id DESC LIMIT 1),
       (SELECT l.valid_at FROM links AS l WHERE l.dst_id = u.id AND l.type = 'supersedes' ORDER BY l.src_id DESC LIMIT 1),
       (SELECT coalesce(json_agg(l.dst_id), '[]'::json) FROM links AS l WHERE l.src_id = u.id AND l.type = 'supersedes')
FROM mentions AS m JOIN units AS u ON u.id = m.unit_id
WHERE m.entity_id = :id AND m.role = 'subject' AND u.kind = 'knowledge'
ORDER BY u.occurred_start, u.id;

-- name: entity_summary_update
UPDATE entities
SET summary = :summary, summary_at = :summary_at,
    data = jsonb_set(coalesce(data, '{}')::jsonb, '{summary}', CAST(:meta AS jsonb))::text
WHERE id = :id;

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

-- name: forget_delete
UPDATE units SET episode_id = NULL
WHERE episode_id IN (SELECT value FROM localmem_ids(:units))
  AND id NOT IN (SELECT value FROM localmem_ids(:units));
DELETE FROM units WHERE id IN (SELECT value FROM localmem_ids(:units));
DELETE FROM messages WHERE id IN (SELECT value FROM localmem_ids(:messages));
DELETE FROM entities WHERE id IN (SELECT value FROM localmem_ids(:entities));
DELETE FROM sources WHERE id IN (SELECT value FROM localmem_ids(:sources));
UPDATE llm_calls SET raw = NULL, error = NULL
WHERE CAST(:folded AS text) IS NOT NULL AND ns = :ns
  AND strpos(localmem_fold(coalesce(raw, '') || chr(10) || coalesce(error, '')), :folded) > 0;
