-- name: source_find
SELECT id, status FROM sources WHERE ns = :ns AND sha256 = :sha256;

-- name: source_insert
INSERT INTO sources (ns, kind, uri, sha256, status, created_at)
VALUES (:ns, :kind, :uri, :sha256, :status, :created_at)
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

-- name: message_insert
INSERT INTO messages (ns, source_id, conversation, session, seq, external_id, speaker, role,
                      text, sent_at, attachments, raw)
VALUES (:ns, :source_id, :conversation, :session, :seq, :external_id, :speaker, :role,
        :text, :sent_at, :attachments, :raw)
ON CONFLICT (ns, conversation, external_id) DO NOTHING
RETURNING id;

-- name: message_find
SELECT id FROM messages WHERE ns = :ns AND conversation = :conversation AND external_id = :external_id;

-- name: conversation_next_seq
SELECT coalesce(max(seq), -1) + 1 FROM messages WHERE ns = :ns AND conversation = :conversation;
