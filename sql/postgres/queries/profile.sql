-- The profile queries whose text differs by engine, as PostgreSQL runs them;
-- each name is also in sql/sqlite/queries/profile.sql (SQLite). The portable ones are in
-- sql/shared/queries/profile.sql.

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
