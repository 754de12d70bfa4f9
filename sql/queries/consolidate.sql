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

-- name: knowledge_current
-- Of the knowledge units :ids (JSON array), those no newer unit supersedes: text, aspect, person.
SELECT u.id, u.text, coalesce(u.aspect, 'other'),
       (SELECT m.entity_id FROM mentions AS m WHERE m.unit_id = u.id AND m.role = 'subject' LIMIT 1)
FROM json_each(:ids) AS j CROSS JOIN units AS u ON u.id = j.value
WHERE u.kind = 'knowledge'
  AND NOT EXISTS (SELECT 1 FROM links AS l WHERE l.dst_id = u.id AND l.type = 'supersedes');

-- name: knowledge_vectors_of_entity
-- The vectors of the current knowledge about :entity_id.
SELECT u.id, v.embedding
FROM mentions AS m
JOIN units AS u ON u.id = m.unit_id AND u.kind = 'knowledge' AND u.ns = :ns
JOIN vec_units AS v ON v.rowid = u.id
WHERE m.entity_id = :entity_id AND m.role = 'subject'
  AND NOT EXISTS (SELECT 1 FROM links AS l WHERE l.dst_id = u.id AND l.type = 'supersedes');

-- name: consolidation_insert
INSERT OR REPLACE INTO consolidations (episode_id, mode, prompt_version, added, reinforced, superseded, created_at)
VALUES (:episode_id, :mode, :prompt_version, :added, :reinforced, :superseded, :created_at);

-- name: consolidation_totals
SELECT count(*), coalesce(sum(added), 0), coalesce(sum(reinforced), 0), coalesce(sum(superseded), 0)
FROM consolidations AS c JOIN units AS u ON u.id = c.episode_id WHERE u.ns = :ns;

-- name: knowledge_insert
INSERT INTO units (id, ns, kind, conversation, episode_id, text, subject, aspect, occurred_start,
                   time_precision, mentioned_at, prompt_version, model_id, content_hash, created_at)
VALUES ((SELECT id FROM next_ids WHERE name = 'units'),
        :ns, 'knowledge', :conversation, :episode_id, :text, :subject, :aspect, :occurred_start,
        'day', :mentioned_at, :prompt_version, :model_id, :content_hash, :created_at)
RETURNING id;
