-- The ingest queries whose text differs by engine, as PostgreSQL runs them;
-- each name is also in sql/sqlite/queries/ingest.sql (SQLite). The portable ones are in
-- sql/shared/queries/ingest.sql.

-- name: source_insert
INSERT INTO sources (id, ns, kind, uri, sha256, status, created_at)
VALUES (localmem_next_id('sources'),
        :ns, :kind, :uri, :sha256, :status, :created_at)
RETURNING id;

-- name: messages_existing
-- Which of the (conversation, external_id) pairs in :keys (a JSON list of pairs) are stored.
SELECT m.conversation, m.external_id, m.text
FROM jsonb_array_elements(CAST(:keys AS jsonb)) AS k(value)
JOIN messages AS m
  ON m.ns = :ns
 AND m.conversation = k.value ->> 0
 AND m.external_id = k.value ->> 1;

-- name: message_insert
-- lang: the text's language (migration 0013), which decides the full-text index it goes to.
INSERT INTO messages (id, ns, source_id, conversation, session, seq, external_id, speaker, role,
                      text, sent_at, attachments, raw, meta, replaces, lang)
VALUES (localmem_next_id('messages'),
        :ns, :source_id, :conversation, :session, :seq, :external_id, :speaker, :role,
        :text, :sent_at, :attachments, :raw, :meta, :replaces, :lang)
ON CONFLICT (ns, conversation, external_id) DO NOTHING
RETURNING id;

-- name: conversation_lock
-- Writers of one conversation wait for each other until their transactions end: each reads the
-- conversation's next position, and its API source, only after the one before it committed
-- (READ COMMITTED: two adds at once read the same position, and the second lost its message to
-- the first's id). Two conversations that hash alike only wait for each other.
SELECT pg_advisory_xact_lock(hashtext(:ns), hashtext(:conversation));
