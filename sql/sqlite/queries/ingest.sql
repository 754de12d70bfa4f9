-- The ingest queries whose text differs by engine, as SQLite runs them;
-- each name is also in sql/postgres/queries/ingest.sql (PostgreSQL). The portable ones are in
-- sql/shared/queries/ingest.sql.

-- name: source_insert
INSERT INTO sources (id, ns, kind, uri, sha256, status, created_at)
VALUES ((SELECT id FROM next_ids WHERE name = 'sources'),
        :ns, :kind, :uri, :sha256, :status, :created_at)
RETURNING id;

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

-- name: message_insert
-- lang: the text's language (migration 0013), which decides the full-text index it goes to.
INSERT INTO messages (id, ns, source_id, conversation, session, seq, external_id, speaker, role,
                      text, sent_at, attachments, raw, meta, replaces, lang)
VALUES ((SELECT id FROM next_ids WHERE name = 'messages'),
        :ns, :source_id, :conversation, :session, :seq, :external_id, :speaker, :role,
        :text, :sent_at, :attachments, :raw, :meta, :replaces, :lang)
ON CONFLICT (ns, conversation, external_id) DO NOTHING
RETURNING id;

-- name: conversation_lock
-- Held by a writer that numbers a conversation's next message (Memory.add, correct) until its
-- transaction ends. On SQLite the IMMEDIATE transaction already holds the store's one write
-- lock, so this only reads its parameters; PostgreSQL takes an advisory lock on the
-- conversation (sql/postgres/queries/ingest.sql).
SELECT :ns IS NOT NULL AND :conversation IS NOT NULL;
