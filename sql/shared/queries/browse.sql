-- name: episodes_list
SELECT u.id, u.conversation, u.title, u.text, u.occurred_start, u.occurred_end, u.stage,
       (SELECT count(*) FROM unit_sources AS s WHERE s.unit_id = u.id)
FROM units AS u WHERE u.ns = :ns AND u.kind = 'episode'
ORDER BY u.occurred_start, u.id LIMIT :limit;

-- name: facts_list
-- Facts, optionally of one entity (by alias) and within [:from, :to] (occurred time).
SELECT u.id, u.subject, u.predicate, u.object, u.text, u.occurred_start, u.occurred_end,
       u.time_precision, u.mentioned_at
FROM units AS u
WHERE u.ns = :ns AND u.kind = 'fact'
  AND (:entity IS NULL OR EXISTS (
        SELECT 1 FROM mentions AS m JOIN entity_aliases AS a ON a.entity_id = m.entity_id
        WHERE m.unit_id = u.id AND a.norm_alias = :entity))
  AND (:from IS NULL OR coalesce(u.occurred_end, u.mentioned_at) >= :from)
  AND (:to IS NULL OR coalesce(u.occurred_start, u.mentioned_at) <= :to)
ORDER BY coalesce(u.occurred_start, u.mentioned_at), u.id LIMIT :limit;

-- name: unit_get
SELECT id, ns, kind, conversation, episode_id, title, text, subject, predicate, object, aspect,
       occurred_start, occurred_end, time_precision, mentioned_at, stage, prompt_version, model_id
FROM units WHERE id = :id;

-- name: unit_sources_full
SELECT m.id, m.external_id, m.conversation, m.session, m.speaker, m.sent_at, m.text
FROM unit_sources AS s JOIN messages AS m ON m.id = s.message_id
WHERE s.unit_id = :id ORDER BY m.seq;

-- name: unit_entities
SELECT e.id, e.name, e.type, m.role, m.tag FROM mentions AS m JOIN entities AS e ON e.id = m.entity_id
WHERE m.unit_id = :id ORDER BY e.name;

-- name: unit_links
SELECT l.type, l.weight, 'out', u.id, u.kind, u.text FROM links AS l JOIN units AS u ON u.id = l.dst_id
WHERE l.src_id = :id
UNION ALL
SELECT l.type, l.weight, 'in', u.id, u.kind, u.text FROM links AS l JOIN units AS u ON u.id = l.src_id
WHERE l.dst_id = :id
ORDER BY 2 DESC LIMIT 50;

-- name: message_get
SELECT m.id, m.ns, m.conversation, m.session, m.seq, m.external_id, m.speaker, m.role, m.text,
       m.sent_at, m.attachments, m.meta, m.replaces,
       (SELECT max(r.id) FROM messages AS r WHERE r.replaces = m.id),
       s.id, s.kind, s.uri
FROM messages AS m JOIN sources AS s ON s.id = m.source_id
WHERE m.id = :id AND m.ns = :ns;

-- name: message_units
-- The units resting on message :id.
SELECT u.id, u.kind, coalesce(u.title || ': ', '') || u.text
FROM unit_sources AS us JOIN units AS u ON u.id = us.unit_id
WHERE us.message_id = :id ORDER BY u.id;

-- name: period_conversations
-- The conversations with messages said in [:start, :end): how many, when, the first one's id.
SELECT conversation, count(*), min(sent_at), max(sent_at), min(id)
FROM messages WHERE ns = :ns AND sent_at >= :start AND sent_at < :end
GROUP BY conversation ORDER BY min(sent_at) LIMIT :limit;

-- name: period_episodes
-- The episodes that started in [:start, :end).
SELECT u.id, u.conversation, u.title, u.text, u.occurred_start, u.occurred_end,
       (SELECT count(*) FROM unit_sources AS s WHERE s.unit_id = u.id)
FROM units AS u WHERE u.ns = :ns AND u.kind = 'episode' AND u.occurred_start >= :start AND u.occurred_start < :end
ORDER BY u.occurred_start, u.id LIMIT :limit;

-- name: conversation_window
-- The messages of one conversation whose place (seq) is in [:from, :to], in order.
SELECT id, speaker, role, text, sent_at, seq, replaces,
       (SELECT max(r.id) FROM messages AS r WHERE r.replaces = messages.id), session
FROM messages WHERE ns = :ns AND conversation = :conversation AND seq BETWEEN :from AND :to
ORDER BY seq, id;

-- name: conversation_bounds
SELECT min(seq), max(seq) FROM messages WHERE ns = :ns AND conversation = :conversation;

-- name: speakers_list
-- Who speaks in :ns: how many messages, the first and the last; the most talkative first.
SELECT speaker, count(*), min(sent_at), max(sent_at)
FROM messages WHERE ns = :ns GROUP BY speaker ORDER BY count(*) DESC, speaker LIMIT :limit;

-- name: conversations_list
-- The conversations of :ns: how many messages, the first and the last; the largest first.
SELECT conversation, count(*), min(sent_at), max(sent_at)
FROM messages WHERE ns = :ns GROUP BY conversation ORDER BY count(*) DESC, conversation LIMIT :limit;

-- name: speaker_messages
-- What :speaker said in :ns, the latest first, a page at a time.
SELECT id, conversation, text, sent_at, attachments FROM messages WHERE ns = :ns AND speaker = :speaker
ORDER BY sent_at DESC, id DESC LIMIT :limit OFFSET :offset;

-- name: episode_opening
-- The first :n messages of episode :id, in order: what shows an episode built without the LLM
-- (no title, no narrative).
SELECT m.speaker, m.text FROM unit_sources AS us JOIN messages AS m ON m.id = us.message_id
WHERE us.unit_id = :id AND m.ns = :ns ORDER BY m.sent_at, m.seq, m.id LIMIT :n;

-- name: speaker_names
-- The speakers of :ns, the most messages first: names only, read from the (ns, speaker) index
-- alone (what the search filters offer).
SELECT speaker FROM messages WHERE ns = :ns GROUP BY speaker ORDER BY count(*) DESC, speaker LIMIT :limit;

-- name: conversation_names
-- The conversations of :ns, the most messages first: names only, from the (ns, conversation, seq)
-- index alone.
SELECT conversation FROM messages WHERE ns = :ns GROUP BY conversation ORDER BY count(*) DESC, conversation
LIMIT :limit;

-- name: conversations_by_source
-- The conversations of :ns per source (import): how many messages, the first and the last, the
-- first message's id; the latest first within a source.
SELECT source_id, conversation, count(*), min(sent_at), max(sent_at), min(id)
FROM messages WHERE ns = :ns GROUP BY source_id, conversation
ORDER BY source_id, max(sent_at) DESC, conversation LIMIT :limit;

-- name: conversation_speakers
-- Who speaks in each conversation of :ns, the most messages first.
SELECT conversation, speaker, count(*) FROM messages WHERE ns = :ns
GROUP BY conversation, speaker ORDER BY conversation, count(*) DESC, speaker;

-- name: conversation_episodes
-- The episodes built in each conversation of :ns.
SELECT conversation, count(*) FROM units WHERE ns = :ns AND kind = 'episode' GROUP BY conversation;

-- name: overview_built
-- What was built in :ns and what was not: episodes, those with a summary (written by the LLM),
-- and the messages that are in no episode yet.
SELECT (SELECT count(*) FROM units WHERE ns = :ns AND kind = 'episode'),
       (SELECT count(*) FROM units WHERE ns = :ns AND kind = 'episode' AND text <> ''),
       (SELECT count(*) FROM messages AS m WHERE m.ns = :ns AND NOT EXISTS (
            SELECT 1 FROM unit_sources AS us JOIN units AS u ON u.id = us.unit_id
            WHERE us.message_id = m.id AND u.kind = 'episode'));
