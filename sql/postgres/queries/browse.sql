-- The browse queries whose text differs by engine, as PostgreSQL runs them;
-- each name is also in sql/sqlite/queries/browse.sql (SQLite). The portable ones are in
-- sql/shared/queries/browse.sql.

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
