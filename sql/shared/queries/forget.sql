-- Forgetting (store/forget.py): choose what goes with a target and what rests only on it, and
-- the deletion purge.purge runs. :messages and :units are JSON arrays of ids; :ns the namespace
-- worked in.

-- name: forget_messages_of_conversation
SELECT id FROM messages WHERE ns = :ns AND conversation = :conversation ORDER BY id;

-- name: forget_messages_before
-- Messages said before :before (ISO text); messages without a time are never selected.
SELECT id FROM messages WHERE ns = :ns AND sent_at < :before ORDER BY id;

-- name: forget_messages_matching
-- :folded is the text searched for, case-folded like localmem_fold (registered by store/db.py).
SELECT id FROM messages WHERE ns = :ns AND instr(localmem_fold(text), :folded) > 0 ORDER BY id;

-- name: forget_messages_of_source
SELECT id FROM messages WHERE source_id = :id ORDER BY id;

-- name: forget_namespace_ids
-- Everything of namespace :ns, by kind: ('m' | 'u' | 's' | 'e', id).
SELECT 's', id FROM sources WHERE ns = :ns
UNION ALL SELECT 'm', id FROM messages WHERE ns = :ns
UNION ALL SELECT 'u', id FROM units WHERE ns = :ns
UNION ALL SELECT 'e', id FROM entities WHERE ns = :ns
ORDER BY 1, 2;

-- name: forget_namespace
-- The deletion of a whole namespace (run by purge.purge, like forget_delete); its messages go
-- with its sources, and its logged model calls, those of no episode too, and who its owner is.
DELETE FROM llm_calls WHERE ns = :ns;
DELETE FROM owner_names WHERE ns = :ns;
DELETE FROM units WHERE ns = :ns;
DELETE FROM entities WHERE ns = :ns;
DELETE FROM sources WHERE ns = :ns;

-- name: source_get
SELECT id FROM sources WHERE id = :id AND ns = :ns;
