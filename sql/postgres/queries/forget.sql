-- The forget queries whose text differs by engine, as PostgreSQL runs them;
-- each name is also in sql/sqlite/queries/forget.sql (SQLite). The portable ones are in
-- sql/shared/queries/forget.sql.

-- name: forget_messages_by_ids
SELECT m.id FROM localmem_ids(:ids) AS j JOIN messages AS m ON m.id = j.value WHERE m.ns = :ns;

-- name: forget_units_by_ids
SELECT u.id FROM localmem_ids(:ids) AS j JOIN units AS u ON u.id = j.value WHERE u.ns = :ns;

-- name: forget_units_matching
SELECT id FROM units
WHERE ns = :ns AND instr(localmem_fold(coalesce(title, '') || chr(10) || text), :folded) > 0
ORDER BY id;

-- name: forget_units_resting_on
-- Units with a source among :messages: (unit, whether every one of its sources is among them).
SELECT us.unit_id,
       count(*) = (SELECT count(*) FROM unit_sources AS c WHERE c.unit_id = us.unit_id)
FROM unit_sources AS us
WHERE us.message_id IN (SELECT value FROM localmem_ids(:messages))
GROUP BY us.unit_id
ORDER BY us.unit_id;

-- name: forget_children
-- Units derived from :units (an episode's gists, facts and knowledge), with whether they also
-- rest on a message outside :messages.
SELECT u.id, u.episode_id,
       EXISTS (SELECT 1 FROM unit_sources AS s WHERE s.unit_id = u.id
               AND s.message_id NOT IN (SELECT value FROM localmem_ids(:messages)))
FROM units AS u
WHERE u.episode_id IN (SELECT value FROM localmem_ids(:units))
ORDER BY u.id;

-- name: forget_entities_of
-- Entities mentioned by :units.
SELECT DISTINCT entity_id FROM mentions WHERE unit_id IN (SELECT value FROM localmem_ids(:units));

-- name: forget_orphan_entities
-- Of :entities, those no unit outside :units mentions (they go with them).
SELECT e.value FROM localmem_ids(:entities) AS e
WHERE NOT EXISTS (SELECT 1 FROM mentions AS m WHERE m.entity_id = e.value
                  AND m.unit_id NOT IN (SELECT value FROM localmem_ids(:units)))
ORDER BY e.value;

-- name: forget_emptied_sources
-- Finished sources all of whose messages are among :messages (a source still loading is left
-- to its ingest).
SELECT s.id FROM sources AS s
WHERE s.status = 'loaded'
  AND s.id IN (SELECT m.source_id FROM messages AS m WHERE m.id IN (SELECT value FROM localmem_ids(:messages)))
  AND NOT EXISTS (SELECT 1 FROM messages AS m WHERE m.source_id = s.id
                  AND m.id NOT IN (SELECT value FROM localmem_ids(:messages)))
ORDER BY s.id;

-- name: forget_delete
UPDATE units SET episode_id = NULL
WHERE episode_id IN (SELECT value FROM localmem_ids(:units))
  AND id NOT IN (SELECT value FROM localmem_ids(:units));
DELETE FROM units WHERE id IN (SELECT value FROM localmem_ids(:units));
DELETE FROM messages WHERE id IN (SELECT value FROM localmem_ids(:messages));
DELETE FROM entities WHERE id IN (SELECT value FROM localmem_ids(:entities));
DELETE FROM sources WHERE id IN (SELECT value FROM localmem_ids(:sources));
UPDATE llm_calls SET raw = NULL, error = NULL
WHERE CAST(:folded AS text) IS NOT NULL AND ns = :ns
  AND strpos(localmem_fold(coalesce(raw, '') || chr(10) || coalesce(error, '')), :folded) > 0;
