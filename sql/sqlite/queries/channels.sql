-- The channels queries whose text differs by engine, as SQLite runs them;
-- each name is also in sql/postgres/queries/channels.sql (PostgreSQL). The portable ones are in
-- sql/shared/queries/channels.sql.

-- name: graph_walk
-- Spreading activation, best-first: the queue is ordered by activation (SQLite processes a
-- recursive CTE's queue in ORDER BY order), each hop multiplies by the edge weight and the
-- decay, edges below :min_weight and activations below :min_activation are never followed,
-- and the walk stops after :max_rows queue rows. Edges: links in both directions, and
-- shared entities weighted 1/sqrt(mentions) so that hubs (the speakers) spread nothing.
-- :seeds is a JSON array of [unit id, activation].
WITH RECURSIVE
  walk(node, act, depth) AS (
    SELECT value ->> 0, value ->> 1, 0 FROM json_each(:seeds)
    UNION ALL
    SELECT l.dst_id, walk.act * l.weight * :decay, walk.depth + 1
    FROM walk JOIN links AS l ON l.src_id = walk.node
    WHERE walk.depth < :depth AND l.weight >= :min_weight
      AND walk.act * l.weight * :decay >= :min_activation
    UNION ALL
    SELECT l.src_id, walk.act * l.weight * :decay, walk.depth + 1
    FROM walk JOIN links AS l ON l.dst_id = walk.node
    WHERE walk.depth < :depth AND l.weight >= :min_weight
      AND walk.act * l.weight * :decay >= :min_activation
    UNION ALL
    SELECT b.unit_id, walk.act * :decay / sqrt(e.mention_count), walk.depth + 1
    FROM walk JOIN mentions AS a ON a.unit_id = walk.node
    JOIN entities AS e ON e.id = a.entity_id AND e.ns = :ns
    JOIN mentions AS b ON b.entity_id = a.entity_id AND b.unit_id != walk.node
    WHERE walk.depth < :depth AND 1.0 / sqrt(e.mention_count) >= :min_weight
      AND walk.act * :decay / sqrt(e.mention_count) >= :min_activation
    ORDER BY 2 DESC
    LIMIT :max_rows
  )
SELECT w.node, max(w.act) AS activation
FROM walk AS w JOIN units AS u ON u.id = w.node AND u.text != ''
GROUP BY w.node ORDER BY activation DESC, w.node LIMIT :budget;

-- name: temporal_neighbours
-- Temporal links touching the units of :ids (JSON array): (from in :ids, to, weight).
SELECT l.src_id, l.dst_id, l.weight FROM links AS l
WHERE l.type = 'temporal' AND l.src_id IN (SELECT value FROM json_each(:ids))
UNION ALL
SELECT l.dst_id, l.src_id, l.weight FROM links AS l
WHERE l.type = 'temporal' AND l.dst_id IN (SELECT value FROM json_each(:ids));

-- name: entities_named
-- Entities whose alias is one of :names (JSON array of normalised names), with their weight.
-- CROSS JOIN keeps the names as the outer loop: the planner would otherwise scan every
-- entity of the namespace (20K in the 1M bench, ~30 ms) and probe each one's aliases.
SELECT e.id, a.norm_alias, 1.0 / sqrt(max(1, e.mention_count))
FROM json_each(:names) AS n
CROSS JOIN entity_aliases AS a ON a.norm_alias = n.value
JOIN entities AS e ON e.id = a.entity_id
WHERE e.ns = :ns;

-- name: units_of_entities
-- Units mentioning the entities of :weights (JSON object id -> weight); a mention whose tag
-- shares a word with the query (:words, JSON array) counts double (MRAgent cue -> tag -> unit).
-- Each entity contributes its :per_entity most recent mentions (units by id).
SELECT m.unit_id,
       sum(CAST(w.value AS REAL) * (1 + EXISTS (
             SELECT 1 FROM json_each(:words) AS q WHERE instr(' ' || lower(coalesce(m.tag, '')) || ' ',
                                                             ' ' || q.value || ' ') > 0))) AS score
FROM json_each(:weights) AS w
JOIN mentions AS m ON m.entity_id = CAST(w.key AS INTEGER)
 AND m.unit_id >= coalesce((SELECT r.unit_id FROM mentions AS r WHERE r.entity_id = CAST(w.key AS INTEGER)
                            ORDER BY r.unit_id DESC LIMIT 1 OFFSET :per_entity - 1), 0)
JOIN units AS u ON u.id = m.unit_id AND u.text != ''
GROUP BY m.unit_id ORDER BY score DESC, m.unit_id DESC LIMIT :limit;

-- name: episode_fits
-- Whether an episode mentions one of :entities (JSON array of ids; an empty array means any)
-- and overlaps [:start, :end] (NULL bounds mean any time).
SELECT EXISTS (
  SELECT 1 FROM units AS e
  WHERE e.id = :id
    AND (json_array_length(:entities) = 0 OR EXISTS (
         SELECT 1 FROM mentions AS m JOIN units AS u ON u.id = m.unit_id
         WHERE (u.id = e.id OR u.episode_id = e.id)
           AND m.entity_id IN (SELECT value FROM json_each(:entities))))
    AND (:start IS NULL OR (e.occurred_start <= :end || 'T99'
                            AND coalesce(e.occurred_end, e.occurred_start) >= :start))
);

-- name: links_among
-- Links of :type whose both ends are among :ids (JSON array) and weigh at least :min_weight.
SELECT src_id, dst_id, weight FROM links
WHERE type = :type AND weight >= :min_weight
  AND src_id IN (SELECT value FROM json_each(:ids)) AND dst_id IN (SELECT value FROM json_each(:ids));

-- name: supersession_of
-- Supersedes links touching :ids (JSON array): (newer unit, older unit).
SELECT src_id, dst_id FROM links
WHERE type = 'supersedes'
  AND (src_id IN (SELECT value FROM json_each(:ids)) OR dst_id IN (SELECT value FROM json_each(:ids)));

-- name: entity_episode_shares
-- The share of the namespace's episodes that mention each entity of :ids (a JSON array).
SELECT e.id, CAST(e.episode_count AS REAL)
       / max(1, (SELECT count(*) FROM units WHERE ns = :ns AND kind = 'episode'))
FROM json_each(:ids) AS j CROSS JOIN entities AS e ON e.id = j.value;
