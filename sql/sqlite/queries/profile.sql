-- The profile queries whose text differs by engine, as SQLite runs them;
-- each name is also in sql/postgres/queries/profile.sql (PostgreSQL). The portable ones are in
-- sql/shared/queries/profile.sql.

-- name: profile_knowledge
-- Knowledge about :id with its aspect, time, and the supersedes links on either side.
SELECT u.id, u.text, coalesce(u.aspect, m.tag, 'other'), u.occurred_start,
       (SELECT l.src_id FROM links AS l WHERE l.dst_id = u.id AND l.type = 'supersedes' ORDER BY l.src_id DESC LIMIT 1),
       (SELECT l.valid_at FROM links AS l WHERE l.dst_id = u.id AND l.type = 'supersedes' ORDER BY l.src_id DESC LIMIT 1),
       (SELECT json_group_array(l.dst_id) FROM links AS l WHERE l.src_id = u.id AND l.type = 'supersedes')
FROM mentions AS m JOIN units AS u ON u.id = m.unit_id
WHERE m.entity_id = :id AND m.role = 'subject' AND u.kind = 'knowledge'
ORDER BY u.occurred_start, u.id;

-- name: entity_summary_update
-- The summary, when it was written, and what it rests on (:meta: basis digest, prompt, model).
UPDATE entities
SET summary = :summary, summary_at = :summary_at,
    data = json_set(coalesce(data, '{}'), '$.summary', json(:meta))
WHERE id = :id;
