-- name: parts_delete_all
-- Before re-embedding: every part is cut and embedded again.
DELETE FROM message_parts;

-- name: messages_for_reembed
-- Each message with the turn before it in its session (NULLs: none), for its context part: the
-- turn right before it in its conversation when that one is in the same session (one index seek
-- each; sessions are runs of a conversation: a search of the session back would read every
-- earlier message for the first turn of each session).
SELECT m.id, m.ns, m.speaker, m.text, m.attachments, p.speaker, p.text, p.attachments
FROM messages AS m
LEFT JOIN messages AS p ON p.id = (
    SELECT b.id FROM messages AS b
    WHERE b.ns = m.ns AND b.conversation = m.conversation AND b.seq < m.seq
    ORDER BY b.seq DESC, b.id DESC LIMIT 1) AND p.session = m.session AND m.session != ''
ORDER BY m.id;

-- name: units_for_reembed
-- Episodes not extracted yet have no text and no vector.
SELECT id, ns, kind, coalesce(title || '. ', '') || text AS text, occurred_start FROM units
WHERE text != '' ORDER BY id;

-- name: messages_without_context
-- Messages that should have a context part (a turn before them in their session, some text;
-- with :questions 1, a turn that asks something) and have none: stored before migration 0012
-- (or under another context_parts), until `localmem reembed`.
SELECT count(*) FROM messages AS m
JOIN messages AS p ON p.id = (
    SELECT b.id FROM messages AS b
    WHERE b.ns = m.ns AND b.conversation = m.conversation AND b.seq < m.seq
    ORDER BY b.seq DESC, b.id DESC LIMIT 1) AND p.session = m.session AND m.session != ''
WHERE m.text != '' AND (:questions = 0 OR instr(p.text, '?') > 0)
  AND NOT EXISTS (SELECT 1 FROM message_parts AS c WHERE c.message_id = m.id AND c.context = 1);

-- name: reembed_staging_clear
DELETE FROM reembed_staging;

-- name: reembed_staged_ids
SELECT kind, id FROM reembed_staging;

-- name: reembed_staged
SELECT kind, id, data FROM reembed_staging;

-- name: reembed_staging_drop
DROP TABLE IF EXISTS reembed_staging;
