-- name: source_find
SELECT id, status FROM sources WHERE ns = :ns AND sha256 = :sha256;

-- name: source_finish
UPDATE sources SET status = 'loaded', finished_at = :finished_at WHERE id = :id;

-- name: message_languages
-- How many messages of the store are in each language (migration 0013; NULL: stored before it).
SELECT lang, count(*) FROM messages GROUP BY lang;

-- name: message_find
SELECT id FROM messages WHERE ns = :ns AND conversation = :conversation AND external_id = :external_id;

-- name: conversation_next_seq
SELECT coalesce(max(seq), -1) + 1 FROM messages WHERE ns = :ns AND conversation = :conversation;

-- name: message_current
-- The newest version of message :id in :ns (itself, or the last correction of a correction of it):
-- (id, source_id, conversation, session, seq, external_id, speaker, role, sent_at, meta).
WITH RECURSIVE chain (id, depth) AS (
    SELECT id, 0 FROM messages WHERE id = :id AND ns = :ns
    UNION ALL
    SELECT m.id, c.depth + 1 FROM messages AS m JOIN chain AS c ON m.replaces = c.id
)
SELECT m.id, m.source_id, m.conversation, m.session, m.seq, m.external_id, m.speaker, m.role,
       m.sent_at, m.meta
FROM chain JOIN messages AS m ON m.id = chain.id
ORDER BY chain.depth DESC, m.id DESC LIMIT 1;
