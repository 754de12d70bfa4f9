-- The forget queries whose text differs by engine, as SQLite runs them;
-- each name is also in sql/postgres/queries/forget.sql (PostgreSQL). The portable ones are in
-- sql/shared/queries/forget.sql.

-- name: forget_messages_by_ids
SELECT m.id FROM json_each(:ids) AS j JOIN messages AS m ON m.id = j.value WHERE m.ns = :ns;

-- name: forget_units_by_ids
SELECT u.id FROM json_each(:ids) AS j JOIN units AS u ON u.id = j.value WHERE u.ns = :ns;

-- name: forget_units_matching
SELECT id FROM units
WHERE ns = :ns AND instr(localmem_fold(coalesce(title, '') || char(10) || text), :folded) > 0
ORDER BY id;

-- name: forget_units_resting_on
-- Units with a source among :messages: (unit, whether every one of its sources is among them).
SELECT us.unit_id,
       count(*) = (SELECT count(*) FROM unit_sources AS c WHERE c.unit_id = us.unit_id)
FROM unit_sources AS us
WHERE us.message_id IN (SELECT value FROM json_each(:messages))
GROUP BY us.unit_id
ORDER BY us.unit_id;

-- name: forget_children
-- Units derived from :units (an episode's gists, facts and knowledge), with whether they also
-- rest on a message outside :messages.
SELECT u.id, u.episode_id,
       EXISTS (SELECT 1 FROM unit_sources AS s WHERE s.unit_id = u.id
               AND s.message_id NOT IN (SELECT value FROM json_each(:messages)))
FROM units AS u
WHERE u.episode_id IN (SELECT value FROM json_each(:units))
ORDER BY u.id;

-- name: forget_entities_of
-- Entities mentioned by :units.
SELECT DISTINCT entity_id FROM mentions WHERE unit_id IN (SELECT value FROM json_each(:units));

-- name: forget_orphan_entities
-- Of :entities, those no unit outside :units mentions (they go with them).
SELECT e.value FROM json_each(:entities) AS e
WHERE NOT EXISTS (SELECT 1 FROM mentions AS m WHERE m.entity_id = e.value
                  AND m.unit_id NOT IN (SELECT value FROM json_each(:units)))
ORDER BY e.value;

-- name: forget_emptied_sources
-- Finished sources all of whose messages are among :messages (a source still loading is left
-- to its ingest).
SELECT s.id FROM sources AS s
WHERE s.status = 'loaded'
  AND s.id IN (SELECT m.source_id FROM messages AS m WHERE m.id IN (SELECT value FROM json_each(:messages)))
  AND NOT EXISTS (SELECT 1 FROM messages AS m WHERE m.source_id = s.id
                  AND m.id NOT IN (SELECT value FROM json_each(:messages)))
ORDER BY s.id;

-- name: forget_delete
-- The deletion of every kind of forget but a namespace's (run by purge.purge, which does the
-- rest: see store/purge.py). Derived units kept because they rest on other messages lose a
-- parent that goes; then the units, the messages (their parts, vectors and full-text rows go by
-- cascade and triggers), the entities nothing mentions any more and the sources left empty.
-- With --match (:folded, case-folded like localmem_fold), logged model replies holding the text
-- lose it (their counts and timings stay).
UPDATE units SET episode_id = NULL
WHERE episode_id IN (SELECT value FROM json_each(:units))
  AND id NOT IN (SELECT value FROM json_each(:units));
DELETE FROM units WHERE id IN (SELECT value FROM json_each(:units));
DELETE FROM messages WHERE id IN (SELECT value FROM json_each(:messages));
DELETE FROM entities WHERE id IN (SELECT value FROM json_each(:entities));
DELETE FROM sources WHERE id IN (SELECT value FROM json_each(:sources));
UPDATE llm_calls SET raw = NULL, error = NULL
WHERE :folded IS NOT NULL AND ns = :ns
  AND instr(localmem_fold(coalesce(raw, '') || char(10) || coalesce(error, '')), :folded) > 0;
