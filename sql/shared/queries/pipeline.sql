-- name: pending_conversations
-- Conversations with messages not yet in any episode.
SELECT DISTINCT m.conversation FROM messages AS m
WHERE m.ns = :ns AND NOT EXISTS (
    SELECT 1 FROM unit_sources AS us JOIN units AS u ON u.id = us.unit_id
    WHERE us.message_id = m.id AND u.kind = 'episode')
ORDER BY m.conversation;

-- name: pending_messages
SELECT m.id, m.session, m.seq, m.speaker, m.text, m.sent_at, m.attachments FROM messages AS m
WHERE m.ns = :ns AND m.conversation = :conversation AND NOT EXISTS (
    SELECT 1 FROM unit_sources AS us JOIN units AS u ON u.id = us.unit_id
    WHERE us.message_id = m.id AND u.kind = 'episode')
ORDER BY m.seq;

-- name: episodes_at_stage
SELECT id, conversation FROM units WHERE ns = :ns AND kind = 'episode' AND stage = :stage ORDER BY id;

-- name: episode_messages
SELECT m.id, m.speaker, m.text, m.sent_at, m.attachments, m.external_id
FROM unit_sources AS us JOIN messages AS m ON m.id = us.message_id
WHERE us.unit_id = :episode_id ORDER BY m.seq;

-- name: episode_update
UPDATE units SET title = :title, text = :text, stage = :stage, prompt_version = :prompt_version,
                 model_id = :model_id
WHERE id = :id;

-- name: episode_set_stage
UPDATE units SET stage = :stage WHERE id = :id;

-- name: derived_units_delete
-- Units an earlier, interrupted attempt at this episode left behind (its knowledge too:
-- consolidation runs again on the new extraction).
DELETE FROM units WHERE episode_id = :episode_id;
DELETE FROM consolidations WHERE episode_id = :episode_id;

-- name: entity_by_alias
SELECT DISTINCT e.id, e.name, e.type FROM entity_aliases AS a JOIN entities AS e ON e.id = a.entity_id
WHERE e.ns = :ns AND a.norm_alias = :alias ORDER BY e.id;

-- name: person_by_first_name_prefix
-- People whose normalised first name starts with :prefix ("mel" -> "melanie").
SELECT e.id, e.name, e.type FROM entities AS e
WHERE e.ns = :ns AND e.type = 'person' AND e.norm_name NOT LIKE '%''s %'
  AND substr(e.norm_name, 1, length(:prefix)) = :prefix
  AND e.norm_name != :prefix
ORDER BY e.id;

-- name: previous_episode
SELECT id FROM units
WHERE ns = :ns AND kind = 'episode' AND conversation = :conversation AND id < :id
  AND stage IN ('extracted', 'done')
ORDER BY id DESC LIMIT 1;

-- name: person_short_names_of
-- Known one-word people whose name is a prefix (>= 3 letters) of :name ("mel" for "melanie").
SELECT e.id, e.name, e.type FROM entities AS e
WHERE e.ns = :ns AND e.type = 'person' AND instr(e.norm_name, ' ') = 0
  AND length(e.norm_name) >= 3 AND e.norm_name != :name
  AND substr(:name, 1, length(e.norm_name)) = e.norm_name
ORDER BY e.id;

-- name: entity_rename
UPDATE entities SET name = :name, norm_name = :norm_name WHERE id = :id;
