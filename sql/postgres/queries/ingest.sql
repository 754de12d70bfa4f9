-- name: messages_existing
-- Which of the (conversation, external_id) pairs in :keys (a JSON list of pairs) are stored.
SELECT m.conversation, m.external_id, m.text
FROM jsonb_array_elements(CAST(:keys AS jsonb)) AS k(value)
JOIN messages AS m
  ON m.ns = :ns
 AND m.conversation = k.value ->> 0
 AND m.external_id = k.value ->> 1;
