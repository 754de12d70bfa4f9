-- The search queries whose text differs by engine, as SQLite runs them;
-- each name is also in sql/postgres/queries/search.sql (PostgreSQL). The portable ones are in
-- sql/shared/queries/search.sql.

-- name: fts_messages
-- :match is a sanitised FTS5 expression (quoted terms joined by OR), never raw user text.
-- Column weights: the previous turn (context) counts half as much as the message itself.
SELECT m.id, bm25(messages_fts, 0.5, 1.0) AS score
FROM messages_fts
JOIN messages AS m ON m.id = messages_fts.rowid
WHERE messages_fts MATCH :match AND m.ns = :ns
ORDER BY score
LIMIT :k;

-- name: fts_messages_intl
-- fts_messages over the messages in other languages than English (migration 0013): :match is
-- built from the query by the same rules (search.intl_fts_query).
SELECT m.id, bm25(messages_fts_intl, 0.5, 1.0) AS score
FROM messages_fts_intl
JOIN messages AS m ON m.id = messages_fts_intl.rowid
WHERE messages_fts_intl MATCH :match AND m.ns = :ns
ORDER BY score
LIMIT :k;

-- name: messages_intl_any
-- Whether any message is in the index of messages not in English (an English store's is empty:
-- its two full-text statements are then not sent). Of every namespace here: FTS5 keeps no
-- namespace, and a table with rows only in others finds nothing in :ns anyway.
SELECT EXISTS (SELECT 1 FROM messages_fts_intl);

-- name: fts_messages_intl_among
SELECT m.id, bm25(messages_fts_intl, 0.5, 1.0) AS score
FROM messages_fts_intl
JOIN messages AS m ON m.id = messages_fts_intl.rowid
WHERE messages_fts_intl MATCH :match AND m.ns = :ns AND m.id IN (SELECT value FROM json_each(:among))
ORDER BY score
LIMIT :k;

-- name: messages_intl_terms_docs
-- Each of the terms in :terms (a JSON array) held by any row: (term, rows holding it).
SELECT term, doc FROM messages_fts_intl_vocab WHERE term IN (SELECT value FROM json_each(:terms));

-- name: fts_units
SELECT u.id, bm25(units_fts) AS score
FROM units_fts
JOIN units AS u ON u.id = units_fts.rowid
WHERE units_fts MATCH :match AND u.ns = :ns
ORDER BY score
LIMIT :k;

-- name: messages_by_ids
SELECT m.id, m.external_id, m.conversation, m.session, m.speaker, m.role, m.text, m.sent_at,
       m.attachments
FROM json_each(:ids) AS j
JOIN messages AS m ON m.id = j.value;

-- name: units_by_ids
SELECT u.id, u.kind, u.title, u.text, coalesce(u.occurred_start, u.mentioned_at) AS time
FROM json_each(:ids) AS j
JOIN units AS u ON u.id = j.value;

-- name: unit_sources_by_ids
SELECT us.unit_id, m.id, m.external_id, m.conversation, m.session, m.speaker, m.sent_at
FROM json_each(:ids) AS j
JOIN unit_sources AS us ON us.unit_id = j.value
JOIN messages AS m ON m.id = us.message_id
ORDER BY us.unit_id, m.seq;

-- name: narrow_unit_sources
-- For the gists and facts among :ids (JSON array) resting on at most :max messages: (unit, message).
SELECT us.unit_id, us.message_id
FROM json_each(:ids) AS j
JOIN units AS u ON u.id = j.value AND u.kind IN ('gist', 'fact')
JOIN unit_sources AS us ON us.unit_id = u.id
WHERE (SELECT count(*) FROM unit_sources AS c WHERE c.unit_id = u.id) <= :max;

-- name: messages_terms_docs
-- Each of the terms in :terms (a JSON array) held by any row: (term, rows holding it).
SELECT term, doc FROM messages_fts_vocab WHERE term IN (SELECT value FROM json_each(:terms));

-- name: units_terms_docs
SELECT term, doc FROM units_fts_vocab WHERE term IN (SELECT value FROM json_each(:terms));

-- name: parts_with_codes
-- The sentence parts of the messages :ids (a JSON array), with their int8 vectors (for excerpts).
SELECT p.message_id, p.start, p."end", c.q8
FROM json_each(:ids) AS j
JOIN message_parts AS p ON p.message_id = j.value
JOIN vec_part_codes AS c ON c.id = p.id
WHERE c.q8 IS NOT NULL AND p.context = 0
ORDER BY p.message_id, p.start;

-- name: filter_messages
-- Messages of :ns that pass every filter given (NULL: not filtered): speaker (any case),
-- conversation, said at or after :since and before :until (ISO text; messages without a time
-- fail a time filter), and :meta, a JSON object every key of which the message's metadata
-- holds with an equal value (compared as JSON, or as text: "5" finds 5).
SELECT id FROM messages
WHERE ns = :ns
  AND (:speaker IS NULL OR speaker = :speaker COLLATE NOCASE)
  AND (:conversation IS NULL OR conversation = :conversation)
  AND (:since IS NULL OR sent_at >= :since)
  AND (:until IS NULL OR sent_at < :until)
  AND (:meta IS NULL OR NOT EXISTS (
        SELECT 1 FROM json_each(:meta) AS f
        WHERE messages.meta IS NULL
           OR NOT (json_extract(messages.meta, '$."' || f.key || '"') IS f.value
                   OR CAST(json_extract(messages.meta, '$."' || f.key || '"') AS TEXT) = CAST(f.value AS TEXT))));

-- name: filter_units
-- Units every source of which is among :messages (a JSON array): what rests only on messages
-- that pass the filters.
SELECT us.unit_id FROM unit_sources AS us
WHERE us.message_id IN (SELECT value FROM json_each(:messages))
GROUP BY us.unit_id
HAVING count(*) = (SELECT count(*) FROM unit_sources AS c WHERE c.unit_id = us.unit_id);

-- name: filter_parts
-- The sentence parts of :messages (a JSON array).
SELECT p.id FROM json_each(:messages) AS j JOIN message_parts AS p ON p.message_id = j.value;

-- name: fts_messages_among
-- fts_messages restricted to :among (a JSON array of message ids).
SELECT m.id, bm25(messages_fts, 0.5, 1.0) AS score
FROM messages_fts
JOIN messages AS m ON m.id = messages_fts.rowid
WHERE messages_fts MATCH :match AND m.ns = :ns AND m.id IN (SELECT value FROM json_each(:among))
ORDER BY score
LIMIT :k;

-- name: fts_units_among
SELECT u.id, bm25(units_fts) AS score
FROM units_fts
JOIN units AS u ON u.id = units_fts.rowid
WHERE units_fts MATCH :match AND u.ns = :ns AND u.id IN (SELECT value FROM json_each(:among))
ORDER BY score
LIMIT :k;

-- name: messages_replaced
-- Of :ids (a JSON array of message ids), those a newer message replaces: (id, the newest
-- direct correction).
SELECT r.replaces, max(r.id) FROM messages AS r
WHERE r.replaces IN (SELECT value FROM json_each(:ids))
GROUP BY r.replaces;

-- name: data_version
-- Moves whenever another connection has committed a change to the store (not this one's own).
PRAGMA data_version;

-- name: messages_said_between
-- Those of :ids (a JSON array of message ids) said from :start to :end (dates, inclusive).
SELECT m.id FROM json_each(:ids) AS j
JOIN messages AS m ON m.id = j.value
WHERE m.sent_at IS NOT NULL AND m.sent_at >= :start AND m.sent_at <= :end || 'T99';

-- name: message_rows
-- What a search reads of the messages :ids (a JSON array of message ids) and of the turn right
-- after each in its session, in one statement (a round trip each costs on a server store):
-- each one's fields as a hit shows them, the id of the turn right after it in its session
-- (NULL when it is the last, or has no session), and the newest message that directly
-- corrects it (NULL when none does).
WITH asked AS (SELECT j.value AS id FROM json_each(:ids) AS j),
wanted AS (
    SELECT id FROM asked
    UNION
    SELECT n.id FROM asked AS a
    JOIN messages AS m ON m.id = a.id
    JOIN messages AS n ON n.ns = m.ns AND n.conversation = m.conversation AND n.seq = m.seq + 1
                      AND n.session = m.session AND m.session != ''
)
SELECT m.id, m.external_id, m.conversation, m.session, m.speaker, m.role, m.text, m.sent_at,
       m.attachments,
       (SELECT n.id FROM messages AS n
        WHERE n.ns = m.ns AND n.conversation = m.conversation AND n.seq = m.seq + 1
          AND n.session = m.session AND m.session != '') AS next_id,
       (SELECT max(r.id) FROM messages AS r WHERE r.replaces = m.id) AS replaced_by
FROM wanted AS w
JOIN messages AS m ON m.id = w.id;
