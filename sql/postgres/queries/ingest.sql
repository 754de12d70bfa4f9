-- name: messages_existing
-- Which of the (conversation, external_id) pairs in :keys (a JSON list of pairs) are stored.
SELECT m.conversation, m.external_id, m.text
FROM jsonb_array_elements(CAST(:keys AS jsonb)) AS k(value)
JOIN messages AS m
  ON m.ns = :ns
 AND m.conversation = k.value ->> 0
 AND m.external_id = k.value ->> 1;

-- name: conversation_lock
-- Writers of one conversation wait for each other until their transactions end: each reads the
-- conversation's next position, and its API source, only after the one before it committed
-- (READ COMMITTED: two adds at once read the same position, and the second lost its message to
-- the first's id). Two conversations that hash alike only wait for each other.
SELECT pg_advisory_xact_lock(hashtext(:ns), hashtext(:conversation));
