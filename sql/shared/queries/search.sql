-- name: namespace_speakers
SELECT DISTINCT speaker FROM messages WHERE ns = :ns;

-- name: namespace_speaker_roles
-- Who speaks as the user and as the assistant in :ns (a chat export), most messages first.
SELECT speaker, role FROM messages WHERE ns = :ns AND role IN ('user', 'assistant')
GROUP BY speaker, role ORDER BY count(*) DESC;

-- name: namespace_speaker_aliases
-- The aliases of each speaker of :ns that is a person entity by that name ("Mel" for "Melanie").
SELECT DISTINCT s.speaker, a.alias
FROM (SELECT DISTINCT speaker FROM messages WHERE ns = :ns) AS s
JOIN entities AS e ON e.ns = :ns AND e.type = 'person' AND e.norm_name = lower(s.speaker)
JOIN entity_aliases AS a ON a.entity_id = e.id
WHERE length(a.alias) > 1
ORDER BY s.speaker, a.alias;

-- name: namespace_messages_latest
-- The :n latest messages of :ns, newest first.
SELECT id FROM messages WHERE ns = :ns ORDER BY sent_at DESC, seq DESC, id DESC LIMIT :n;

-- name: namespace_message_languages
-- Each message of :ns with its language (retrieval.language_balance groups them).
SELECT id, lang FROM messages WHERE ns = :ns;
