-- name: profile_entity
-- Entities of :ns that :norm (a normalised name) is an alias of; people first, then the most mentioned.
SELECT e.id, e.name, e.type
FROM entity_aliases AS a JOIN entities AS e ON e.id = a.entity_id
WHERE e.ns = :ns AND a.norm_alias = :norm
ORDER BY e.type = 'person' DESC, e.mention_count DESC, e.id;

-- name: profile_people
-- The namespace's most mentioned people (for "no one called X" errors).
SELECT name FROM entities WHERE ns = :ns AND type = 'person' ORDER BY mention_count DESC, id LIMIT :limit;

-- name: profile_aliases
SELECT alias FROM entity_aliases WHERE entity_id = :id ORDER BY alias;

-- name: profile_episodes
-- The episodes :id is in, in time order, with its role ('main' when it speaks, sorting first).
SELECT u.id, u.title, u.occurred_start, min(m.role)
FROM mentions AS m JOIN units AS u ON u.id = m.unit_id
WHERE m.entity_id = :id AND u.kind = 'episode' AND m.role IN ('main', 'supporting')
GROUP BY u.id
ORDER BY u.occurred_start, u.id;

-- name: entity_summary
SELECT summary, summary_at, data FROM entities WHERE id = :id;
