-- The consolidate queries whose text differs by engine, as PostgreSQL runs them;
-- each name is also in sql/sqlite/queries/consolidate.sql (SQLite). The portable ones are in
-- sql/shared/queries/consolidate.sql.

-- name: knowledge_current
-- Of the knowledge units :ids (JSON array), those no newer unit supersedes: text, aspect, person.
SELECT u.id, u.text, coalesce(u.aspect, 'other'),
       (SELECT m.entity_id FROM mentions AS m WHERE m.unit_id = u.id AND m.role = 'subject' LIMIT 1)
FROM localmem_ids(:ids) AS j JOIN units AS u ON u.id = j.value
WHERE u.kind = 'knowledge'
  AND NOT EXISTS (SELECT 1 FROM links AS l WHERE l.dst_id = u.id AND l.type = 'supersedes');

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

-- name: knowledge_insert
INSERT INTO units (id, ns, kind, conversation, episode_id, text, subject, aspect, occurred_start,
                   time_precision, mentioned_at, prompt_version, model_id, content_hash, created_at)
VALUES (localmem_next_id('units'),
        :ns, 'knowledge', :conversation, :episode_id, :text, :subject, :aspect, :occurred_start,
        'day', :mentioned_at, :prompt_version, :model_id, :content_hash, :created_at)
RETURNING id;
