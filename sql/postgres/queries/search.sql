-- Search on PostgreSQL. Full text is ranked by BM25 as FTS5's bm25() ranks it, defined once in
-- the function localmem_bm25 (migration 0012: the formula, its constants and the statistics it
-- reads); the six full-text queries below name the table, the namespace, the sanitised
-- expression (:match) and, for the _among ones, the ids (:among) it ranks.

-- name: fts_messages
SELECT id, score FROM localmem_bm25('messages_fts', :ns, :match)
ORDER BY score, id
LIMIT :k;

-- name: fts_messages_intl
-- fts_messages over the messages not in English (migration 0003).
SELECT id, score FROM localmem_bm25('messages_fts_intl', :ns, :match)
ORDER BY score, id
LIMIT :k;

-- name: messages_intl_any
SELECT EXISTS (SELECT 1 FROM messages_fts_intl WHERE ns = :ns);

-- name: fts_messages_intl_among
SELECT id, score FROM localmem_bm25('messages_fts_intl', :ns, :match, :among)
ORDER BY score, id
LIMIT :k;

-- name: messages_intl_terms_docs
SELECT t.value, CASE WHEN cardinality(t.lexemes) = 1 THEN coalesce(d.ndoc, 0)
                     ELSE (SELECT count(*) FROM messages_fts_intl WHERE doc @@ plainto_tsquery('simple', localmem_fold_accents(t.value))) END
FROM (SELECT j.value, ARRAY(SELECT lexeme FROM unnest(to_tsvector('simple', localmem_fold_accents(j.value)))) AS lexemes
      FROM jsonb_array_elements_text(CAST(:terms AS jsonb)) AS j(value)) AS t
LEFT JOIN LATERAL (SELECT sum(ndoc) AS ndoc FROM localmem_fts_docs('messages_fts_intl', t.lexemes)) AS d ON true;

-- name: fts_units
SELECT id, score FROM localmem_bm25('units_fts', :ns, :match)
ORDER BY score, id
LIMIT :k;

-- name: messages_by_ids
SELECT m.id, m.external_id, m.conversation, m.session, m.speaker, m.role, m.text, m.sent_at,
       m.attachments
FROM localmem_ids(:ids) AS j
JOIN messages AS m ON m.id = j.value;

-- name: units_by_ids
SELECT u.id, u.kind, u.title, u.text, coalesce(u.occurred_start, u.mentioned_at) AS time
FROM localmem_ids(:ids) AS j
JOIN units AS u ON u.id = j.value;

-- name: unit_sources_by_ids
SELECT us.unit_id, m.id, m.external_id, m.conversation, m.session, m.speaker, m.sent_at
FROM localmem_ids(:ids) AS j
JOIN unit_sources AS us ON us.unit_id = j.value
JOIN messages AS m ON m.id = us.message_id
ORDER BY us.unit_id, m.seq;

-- name: narrow_unit_sources
-- For the gists and facts among :ids (JSON array) resting on at most :max messages: (unit, message).
SELECT us.unit_id, us.message_id
FROM localmem_ids(:ids) AS j
JOIN units AS u ON u.id = j.value AND u.kind IN ('gist', 'fact')
JOIN unit_sources AS us ON us.unit_id = u.id
WHERE (SELECT count(*) FROM unit_sources AS c WHERE c.unit_id = u.id) <= :max;

-- name: messages_terms_docs
-- :terms are FTS5 porter terms (retrieval prunes very common words by them): stemmed again here;
-- a term of one lexeme (nearly all) is read from the statistics, else the rows holding all of
-- its lexemes are counted (a term with none matches nothing).
SELECT t.value, CASE WHEN cardinality(t.lexemes) = 1 THEN coalesce(d.ndoc, 0)
                     ELSE (SELECT count(*) FROM messages_fts WHERE doc @@ array_to_string(ARRAY(SELECT quote_literal(l) FROM unnest(t.lexemes) AS l), ' & ')::tsquery) END
FROM (SELECT j.value, ARRAY(SELECT lexeme FROM unnest(localmem_en_tsvector(j.value))) AS lexemes
      FROM jsonb_array_elements_text(CAST(:terms AS jsonb)) AS j(value)) AS t
LEFT JOIN LATERAL (SELECT sum(ndoc) AS ndoc FROM localmem_fts_docs('messages_fts', t.lexemes)) AS d ON true;

-- name: units_terms_docs
SELECT t.value, CASE WHEN cardinality(t.lexemes) = 1 THEN coalesce(d.ndoc, 0)
                     ELSE (SELECT count(*) FROM units_fts WHERE doc @@ array_to_string(ARRAY(SELECT quote_literal(l) FROM unnest(t.lexemes) AS l), ' & ')::tsquery) END
FROM (SELECT j.value, ARRAY(SELECT lexeme FROM unnest(localmem_en_tsvector(j.value))) AS lexemes
      FROM jsonb_array_elements_text(CAST(:terms AS jsonb)) AS j(value)) AS t
LEFT JOIN LATERAL (SELECT sum(ndoc) AS ndoc FROM localmem_fts_docs('units_fts', t.lexemes)) AS d ON true;

-- name: parts_with_codes
SELECT p.message_id, p.start, p."end", localmem_int8(v.embedding)
FROM localmem_ids(:ids) AS j
JOIN message_parts AS p ON p.message_id = j.value
JOIN vec_message_parts AS v ON v.id = p.id
WHERE p.context = 0
ORDER BY p.message_id, p.start;

-- name: filter_messages
SELECT id FROM messages
WHERE ns = :ns
  AND (CAST(:speaker AS text) IS NULL OR lower(speaker) = lower(:speaker))
  AND (CAST(:conversation AS text) IS NULL OR conversation = :conversation)
  AND (CAST(:since AS text) IS NULL OR sent_at >= :since)
  AND (CAST(:until AS text) IS NULL OR sent_at < :until)
  AND (CAST(:meta AS text) IS NULL OR NOT EXISTS (
        SELECT 1 FROM jsonb_each(CAST(:meta AS jsonb)) AS f
        WHERE messages.meta IS NULL
           OR NOT (coalesce((messages.meta::jsonb -> f.key) = f.value, false)
                   OR (messages.meta::jsonb ->> f.key) = (jsonb_build_array(f.value) ->> 0))));

-- name: filter_units
-- Units every source of which is among :messages (a JSON array): what rests only on messages
-- that pass the filters.
SELECT us.unit_id FROM unit_sources AS us
WHERE us.message_id IN (SELECT value FROM localmem_ids(:messages))
GROUP BY us.unit_id
HAVING count(*) = (SELECT count(*) FROM unit_sources AS c WHERE c.unit_id = us.unit_id);

-- name: filter_parts
-- The sentence parts of :messages (a JSON array).
SELECT p.id FROM localmem_ids(:messages) AS j JOIN message_parts AS p ON p.message_id = j.value;

-- name: fts_messages_among
SELECT id, score FROM localmem_bm25('messages_fts', :ns, :match, :among)
ORDER BY score, id
LIMIT :k;

-- name: fts_units_among
SELECT id, score FROM localmem_bm25('units_fts', :ns, :match, :among)
ORDER BY score, id
LIMIT :k;

-- name: messages_replaced
-- Of :ids (a JSON array of message ids), those a newer message replaces: (id, the newest
-- direct correction).
SELECT r.replaces, max(r.id) FROM messages AS r
WHERE r.replaces IN (SELECT value FROM localmem_ids(:ids))
GROUP BY r.replaces;

-- name: data_version
-- Moves when any transaction has begun or ended since (a cache keyed on it is refreshed at
-- least as often as on SQLite, where only another connection's commit moves it).
SELECT pg_current_snapshot()::text;

-- name: messages_said_between
-- Those of :ids (a JSON array of message ids) said from :start to :end (dates, inclusive).
SELECT m.id FROM localmem_ids(:ids) AS j
JOIN messages AS m ON m.id = j.value
WHERE m.sent_at IS NOT NULL AND m.sent_at >= :start AND m.sent_at <= :end || 'T99';

-- name: message_rows
-- What a search reads of the messages :ids (a JSON array of message ids) and of the turn right
-- after each in its session, in one statement (a round trip each costs on a server store):
-- each one's fields as a hit shows them, the id of the turn right after it in its session
-- (NULL when it is the last, or has no session), and the newest message that directly
-- corrects it (NULL when none does).
WITH asked AS (SELECT j.value AS id FROM localmem_ids(:ids) AS j),
wanted AS (
    SELECT id FROM asked
    UNION
    SELECT n.id FROM asked AS a
    JOIN messages AS m ON m.id = a.id
    JOIN messages AS n ON n.ns = m.ns AND n.conversation = m.conversation AND n.seq = m.seq + 1
                      AND n.session = m.session AND m.session != ''
)
SELECT m.id, m.external_id, m.conversation, m.session, m.speaker, m.role, m.text, m.sent_at,
       m.attachments,
       (SELECT n.id FROM messages AS n
        WHERE n.ns = m.ns AND n.conversation = m.conversation AND n.seq = m.seq + 1
          AND n.session = m.session AND m.session != '') AS next_id,
       (SELECT max(r.id) FROM messages AS r WHERE r.replaces = m.id) AS replaced_by
FROM wanted AS w
JOIN messages AS m ON m.id = w.id;
