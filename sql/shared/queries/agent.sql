-- Tools of the agentic ask loop (agent.py).

-- name: agent_entity_units
-- Units mentioning the entity named :name (an alias, normalised), optionally only those whose
-- cue tag or text contains :tag, within [:start, :end] (ISO dates or NULL), ordered by time
-- (:order 'oldest' or 'newest', else the newest first), at most :limit.
SELECT u.id, coalesce(u.occurred_start, u.mentioned_at) AS time
FROM entity_aliases AS a
JOIN entities AS e ON e.id = a.entity_id AND e.ns = :ns
JOIN mentions AS m ON m.entity_id = e.id
JOIN units AS u ON u.id = m.unit_id AND u.text != '' AND u.kind IN ('gist', 'fact', 'episode')
WHERE a.norm_alias = :name
  AND (:tag IS NULL OR instr(lower(coalesce(m.tag, '')), :tag) > 0 OR instr(lower(u.text), :tag) > 0)
  AND (:start IS NULL OR coalesce(u.occurred_end, u.occurred_start, u.mentioned_at) >= :start)
  AND (:end IS NULL OR coalesce(u.occurred_start, u.mentioned_at) <= :end || 'T99')
GROUP BY u.id
ORDER BY CASE WHEN :order = 'oldest' THEN coalesce(u.occurred_start, u.mentioned_at) END ASC,
         coalesce(u.occurred_start, u.mentioned_at) DESC, u.id DESC
LIMIT :limit;

-- name: agent_episode_of
-- The episode holding a unit (its episode_id, or itself) or a message (:kind 'u' or 'm').
SELECT CASE WHEN u.kind = 'episode' THEN u.id ELSE u.episode_id END
FROM units AS u WHERE :kind = 'u' AND u.id = :id
UNION ALL
SELECT us.unit_id FROM unit_sources AS us JOIN units AS u ON u.id = us.unit_id AND u.kind = 'episode'
WHERE :kind = 'm' AND us.message_id = :id
LIMIT 1;

-- name: agent_episode_neighbours
-- The episodes just before and after :id (next-episode links), then its messages in order.
SELECT 'u', l.src_id FROM links AS l WHERE l.type = 'next' AND l.dst_id = :id
UNION ALL SELECT 'u', l.dst_id FROM links AS l WHERE l.type = 'next' AND l.src_id = :id;

-- name: agent_episode_messages
SELECT us.message_id FROM unit_sources AS us JOIN messages AS m ON m.id = us.message_id
WHERE us.unit_id = :id ORDER BY m.sent_at, m.seq, m.id;

-- name: agent_person_aspects
-- The aspects of the consolidated knowledge about the person named :name, with counts.
SELECT coalesce(u.aspect, m.tag, 'other') AS shown, count(DISTINCT u.id)
FROM entity_aliases AS a
JOIN entities AS e ON e.id = a.entity_id AND e.ns = :ns
JOIN mentions AS m ON m.entity_id = e.id AND m.role = 'subject'
JOIN units AS u ON u.id = m.unit_id AND u.kind = 'knowledge'
WHERE a.norm_alias = :name
GROUP BY shown ORDER BY count(DISTINCT u.id) DESC, shown;

-- name: agent_person_knowledge
-- Knowledge about the person named :name (of :aspect, or all), current first, newest first.
SELECT DISTINCT u.id,
       EXISTS (SELECT 1 FROM links AS l WHERE l.dst_id = u.id AND l.type = 'supersedes') AS replaced,
       u.occurred_start
FROM entity_aliases AS a
JOIN entities AS e ON e.id = a.entity_id AND e.ns = :ns
JOIN mentions AS m ON m.entity_id = e.id AND m.role = 'subject'
JOIN units AS u ON u.id = m.unit_id AND u.kind = 'knowledge'
WHERE a.norm_alias = :name AND (:aspect IS NULL OR coalesce(u.aspect, m.tag, 'other') = :aspect)
ORDER BY replaced, u.occurred_start DESC, u.id DESC
LIMIT :limit;
