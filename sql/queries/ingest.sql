-- name: source_find
SELECT id, status FROM sources WHERE ns = :ns AND sha256 = :sha256;

-- name: source_insert
INSERT INTO sources (id, ns, kind, uri, sha256, status, created_at)
VALUES ((SELECT id FROM next_ids WHERE name = 'sources'),
        :ns, :kind, :uri, :sha256, :status, :created_at)
RETURNING id;

-- name: source_finish
UPDATE sources SET status = 'loaded', finished_at = :finished_at WHERE id = :id;

-- name: messages_existing
-- Which of the (conversation, external_id) pairs in :keys (a JSON list of pairs) are stored.
-- CROSS JOIN pins the loop order: one unique-index lookup per key. (A plain JOIN let the
-- planner scan the namespace for every batch: ingest went quadratic, 1757 s for 100K.)
SELECT m.conversation, m.external_id, m.text
FROM json_each(:keys) AS k
CROSS JOIN messages AS m
  ON m.ns = :ns
 AND m.conversation = json_extract(k.value, '$[0]')
 AND m.external_id = json_extract(k.value, '$[1]');

-- name: message_languages
-- How many messages of the store are in each language (migration 0013; NULL: stored before it).
SELECT lang, count(*) FROM messages GROUP BY lang;

-- name: message_insert
-- lang: the text's language (migration 0013), which decides the full-text index it goes to.
INSERT INTO messages (id, ns, source_id, conversation, session, seq, external_id, speaker, role,
                      text, sent_at, attachments, raw, meta, replaces, lang)
VALUES ((SELECT id FROM next_ids WHERE name = 'messages'),
        :ns, :source_id, :conversation, :session, :seq, :external_id, :speaker, :role,
        :text, :sent_at, :attachments, :raw, :meta, :replaces, localmem_lang(:text))
ON CONFLICT (ns, conversation, external_id) DO NOTHING
RETURNING id;

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

-- name: conversation_lock
-- Held by a writer that numbers a conversation's next message (Memory.add, correct) until its
-- transaction ends. On SQLite the IMMEDIATE transaction already holds the store's one write
-- lock, so this only reads its parameters; PostgreSQL takes an advisory lock on the
-- conversation (sql/postgres/queries/ingest.sql).
SELECT :ns IS NOT NULL AND :conversation IS NOT NULL;
