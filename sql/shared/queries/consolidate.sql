-- name: episodes_to_consolidate
-- Extracted episodes of :ns not consolidated yet, oldest first (knowledge builds up in order).
SELECT u.id FROM units AS u
WHERE u.ns = :ns AND u.kind = 'episode' AND u.stage = 'done'
  AND NOT EXISTS (SELECT 1 FROM consolidations AS c WHERE c.episode_id = u.id)
ORDER BY u.occurred_start, u.id;

-- name: consolidate_episode
SELECT id, conversation, title, text, coalesce(occurred_start, mentioned_at) FROM units WHERE id = :id;

-- name: episode_people
-- The people of an episode (its main and supporting persons) under every alias.
SELECT DISTINCT a.norm_alias, e.id
FROM mentions AS m
JOIN entities AS e ON e.id = m.entity_id
JOIN entity_aliases AS a ON a.entity_id = e.id
WHERE m.unit_id = :id AND m.role IN ('main', 'supporting') AND e.type = 'person';

-- name: consolidation_totals
SELECT count(*), coalesce(sum(added), 0), coalesce(sum(reinforced), 0), coalesce(sum(superseded), 0)
FROM consolidations AS c JOIN units AS u ON u.id = c.episode_id WHERE u.ns = :ns;
