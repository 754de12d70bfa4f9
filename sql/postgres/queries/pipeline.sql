-- The shared queries of extraction and consolidation whose SQLite text PostgreSQL
-- cannot run (two-argument max, a boolean summed), each with the same
-- meaning and the same result columns.

-- name: pending_still
-- How many of the messages :ids are still stored and in no episode: read in the transaction that
-- stores their episode (another connection may have forgotten one, or put it in an episode,
-- since they were read).
SELECT count(*) FROM messages AS m
WHERE m.id IN (SELECT value FROM localmem_ids(:ids)) AND NOT EXISTS (
    SELECT 1 FROM unit_sources AS us JOIN units AS u ON u.id = us.unit_id
    WHERE us.message_id = m.id AND u.kind = 'episode');

-- name: episode_insert
INSERT INTO units (id, ns, kind, conversation, title, text, occurred_start, occurred_end,
                   time_precision, mentioned_at, stage, data, created_at)
VALUES (localmem_next_id('units'),
        :ns, 'episode', :conversation, NULL, '', :start, :end, 'minute', :end, 'segmented',
        :data, :created_at)
RETURNING id;

-- name: unit_source_insert
INSERT INTO unit_sources (unit_id, message_id) VALUES (:unit_id, :message_id) ON CONFLICT DO NOTHING;

-- name: unit_insert
INSERT INTO units (id, ns, kind, conversation, episode_id, text, subject, predicate, object,
                   occurred_start, occurred_end, time_precision, mentioned_at, stage,
                   prompt_version, model_id, content_hash, data, created_at)
VALUES (localmem_next_id('units'),
        :ns, :kind, :conversation, :episode_id, :text, :subject, :predicate, :object,
        :occurred_start, :occurred_end, :time_precision, :mentioned_at, NULL,
        :prompt_version, :model_id, :content_hash, :data, :created_at)
RETURNING id;

-- name: llm_call_log
-- Its id from localmem_next_id, not the identity's next value, which a row a namespace role
-- wrote with an id ahead of the sequence would make fail (migration 0009).
INSERT INTO llm_calls (id, ns, episode_id, stage, prompt_version, model_id, calls, prompt_tokens,
                       completion_tokens, seconds, ok, error, raw, created_at)
VALUES (localmem_next_id('llm_calls'), :ns, :episode_id, :stage, :prompt_version, :model_id, :calls, :prompt_tokens,
        :completion_tokens, :seconds, :ok, :error, :raw, :created_at);

-- name: llm_call_totals
SELECT stage, sum(calls), sum(prompt_tokens), sum(completion_tokens), sum(seconds),
       sum(CASE WHEN ok = 0 THEN 1 ELSE 0 END)
FROM llm_calls WHERE ns = :ns GROUP BY stage ORDER BY stage;

-- name: entity_insert
INSERT INTO entities (id, ns, name, norm_name, type, created_at)
VALUES (localmem_next_id('entities'),
        :ns, :name, :norm_name, :type, :created_at)
RETURNING id;

-- name: alias_insert
INSERT INTO entity_aliases (entity_id, alias, norm_alias) VALUES (:entity_id, :alias, :norm_alias) ON CONFLICT DO NOTHING;

-- name: entity_cooccurrence
-- For each candidate in :ids, in how many units it appears together with an entity of :context.
SELECT a.entity_id, count(DISTINCT a.unit_id)
FROM mentions AS a JOIN mentions AS b ON b.unit_id = a.unit_id
WHERE a.entity_id IN (SELECT value FROM localmem_ids(:ids))
  AND b.entity_id IN (SELECT value FROM localmem_ids(:context))
GROUP BY a.entity_id;

-- name: mention_insert
INSERT INTO mentions (unit_id, entity_id, role, tag) VALUES (:unit_id, :entity_id, :role, :tag) ON CONFLICT DO NOTHING;

-- name: link_insert
INSERT INTO links (src_id, dst_id, type, weight, valid_at, created_at)
VALUES (:src_id, :dst_id, :type, :weight, :valid_at, :created_at)
ON CONFLICT (src_id, dst_id, type) DO UPDATE SET weight = greatest(links.weight, excluded.weight);

-- name: vec_units_knn_kind
SELECT id, embedding <=> CAST(:embedding AS vector) AS distance
FROM vec_units WHERE ns = :ns AND kind = :kind
ORDER BY embedding <=> CAST(:embedding AS vector) LIMIT :k;

-- name: units_near_in_time
SELECT id, occurred_start FROM units
WHERE ns = :ns AND kind IN ('gist', 'fact') AND id != :id AND occurred_start IS NOT NULL
  AND abs(localmem_julianday(occurred_start) - localmem_julianday(:at)) <= :days
ORDER BY abs(localmem_julianday(occurred_start) - localmem_julianday(:at))
LIMIT :limit;

-- name: entity_profile
SELECT
  (SELECT coalesce(json_agg(tag), '[]'::json) FROM (
     SELECT tag FROM mentions WHERE entity_id = :id AND tag IS NOT NULL AND tag != ''
     GROUP BY tag ORDER BY count(*) DESC LIMIT 5) AS t),
  (SELECT coalesce(json_agg(name), '[]'::json) FROM (
     SELECT e.name FROM mentions AS a JOIN mentions AS b ON b.unit_id = a.unit_id
     JOIN entities AS e ON e.id = b.entity_id
     WHERE a.entity_id = :id AND b.entity_id != :id
     GROUP BY e.id, e.name ORDER BY count(*) DESC LIMIT 5) AS n);
