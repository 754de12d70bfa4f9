-- The browse queries whose text differs by engine, as SQLite runs them;
-- each name is also in sql/postgres/queries/browse.sql (PostgreSQL). The portable ones are in
-- sql/shared/queries/browse.sql.

-- name: entities_list
SELECT e.id, e.name, e.type,
       (SELECT count(DISTINCT m.unit_id) FROM mentions AS m WHERE m.entity_id = e.id),
       (SELECT group_concat(a.alias, ', ') FROM entity_aliases AS a WHERE a.entity_id = e.id)
FROM entities AS e WHERE e.ns = :ns
ORDER BY 4 DESC, e.name LIMIT :limit;

-- name: timeline_messages
-- Messages per period (:period 'week': weeks starting on Monday; else months), oldest first.
SELECT CASE :period WHEN 'week' THEN date(sent_at, '-6 days', 'weekday 1') ELSE date(sent_at, 'start of month') END
         AS period,
       count(*)
FROM messages WHERE ns = :ns AND sent_at IS NOT NULL AND (:speaker IS NULL OR speaker = :speaker)
GROUP BY period ORDER BY period;

-- name: timeline_episodes
-- Episodes per period, by when they started (as timeline_messages); with :speaker, those with
-- a message of theirs.
SELECT CASE :period WHEN 'week' THEN date(occurred_start, '-6 days', 'weekday 1')
                    ELSE date(occurred_start, 'start of month') END AS period,
       count(*)
FROM units WHERE ns = :ns AND kind = 'episode' AND occurred_start IS NOT NULL
  AND (:speaker IS NULL OR EXISTS (
        SELECT 1 FROM unit_sources AS us JOIN messages AS m ON m.id = us.message_id
        WHERE us.unit_id = units.id AND m.speaker = :speaker))
GROUP BY period ORDER BY period;
