-- The pipeline queries whose text differs by engine, as SQLite runs them;
-- each name is also in sql/postgres/queries/pipeline.sql (PostgreSQL). The portable ones are in
-- sql/shared/queries/pipeline.sql.

-- name: pending_still
-- How many of the messages :ids are still stored and in no episode: read in the transaction that
-- stores their episode (another connection may have forgotten one, or put it in an episode,
-- since they were read).
SELECT count(*) FROM messages AS m
WHERE m.id IN (SELECT value FROM json_each(:ids)) AND NOT EXISTS (
    SELECT 1 FROM unit_sources AS us JOIN units AS u ON u.id = us.unit_id
    WHERE us.message_id = m.id AND u.kind = 'episode');

-- name: episode_insert
INSERT INTO units (id, ns, kind, conversation, title, text, occurred_start, occurred_end,
                   time_precision, mentioned_at, stage, data, created_at)
VALUES ((SELECT id FROM next_ids WHERE name = 'units'),
        :ns, 'episode', :conversation, NULL, '', :start, :end, 'minute', :end, 'segmented',
        :data, :created_at)
RETURNING id;

-- name: unit_source_insert
INSERT OR IGNORE INTO unit_sources (unit_id, message_id) VALUES (:unit_id, :message_id);

-- name: unit_insert
INSERT INTO units (id, ns, kind, conversation, episode_id, text, subject, predicate, object,
                   occurred_start, occurred_end, time_precision, mentioned_at, stage,
                   prompt_version, model_id, content_hash, data, created_at)
VALUES ((SELECT id FROM next_ids WHERE name = 'units'),
        :ns, :kind, :conversation, :episode_id, :text, :subject, :predicate, :object,
        :occurred_start, :occurred_end, :time_precision, :mentioned_at, NULL,
        :prompt_version, :model_id, :content_hash, :data, :created_at)
RETURNING id;

-- name: llm_call_log
INSERT INTO llm_calls (ns, episode_id, stage, prompt_version, model_id, calls, prompt_tokens,
                       completion_tokens, seconds, ok, error, raw, created_at)
VALUES (:ns, :episode_id, :stage, :prompt_version, :model_id, :calls, :prompt_tokens,
        :completion_tokens, :seconds, :ok, :error, :raw, :created_at);

-- name: llm_call_totals
SELECT stage, sum(calls), sum(prompt_tokens), sum(completion_tokens), sum(seconds),
       sum(ok = 0)
FROM llm_calls WHERE ns = :ns GROUP BY stage ORDER BY stage;

-- name: entity_insert
INSERT INTO entities (id, ns, name, norm_name, type, created_at)
VALUES ((SELECT id FROM next_ids WHERE name = 'entities'),
        :ns, :name, :norm_name, :type, :created_at)
RETURNING id;

-- name: alias_insert
INSERT OR IGNORE INTO entity_aliases (entity_id, alias, norm_alias) VALUES (:entity_id, :alias, :norm_alias);

-- name: entity_cooccurrence
-- For each candidate in :ids, in how many units it appears together with an entity of :context.
SELECT a.entity_id, count(DISTINCT a.unit_id)
FROM mentions AS a JOIN mentions AS b ON b.unit_id = a.unit_id
WHERE a.entity_id IN (SELECT value FROM json_each(:ids))
  AND b.entity_id IN (SELECT value FROM json_each(:context))
GROUP BY a.entity_id;

-- name: mention_insert
INSERT OR IGNORE INTO mentions (unit_id, entity_id, role, tag) VALUES (:unit_id, :entity_id, :role, :tag);

-- name: link_insert
INSERT INTO links (src_id, dst_id, type, weight, valid_at, created_at)
VALUES (:src_id, :dst_id, :type, :weight, :valid_at, :created_at)
ON CONFLICT (src_id, dst_id, type) DO UPDATE SET weight = max(weight, excluded.weight);

-- name: vec_units_knn_kind
SELECT rowid AS id, distance FROM vec_units
WHERE embedding MATCH :embedding AND k = :k AND ns = :ns AND kind = :kind
ORDER BY distance;

-- name: units_near_in_time
-- Gists/facts of the namespace whose time lies within :days of :at (for temporal links).
SELECT id, occurred_start FROM units
WHERE ns = :ns AND kind IN ('gist', 'fact') AND id != :id AND occurred_start IS NOT NULL
  AND abs(julianday(occurred_start) - julianday(:at)) <= :days
ORDER BY abs(julianday(occurred_start) - julianday(:at))
LIMIT :limit;

-- name: entity_profile
-- What is known about an entity: its tags and the names it appeared with, most frequent first.
SELECT
  (SELECT json_group_array(tag) FROM (
     SELECT tag FROM mentions WHERE entity_id = :id AND tag IS NOT NULL AND tag != ''
     GROUP BY tag ORDER BY count(*) DESC LIMIT 5)),
  (SELECT json_group_array(name) FROM (
     SELECT e.name FROM mentions AS a JOIN mentions AS b ON b.unit_id = a.unit_id
     JOIN entities AS e ON e.id = b.entity_id
     WHERE a.entity_id = :id AND b.entity_id != :id
     GROUP BY e.id ORDER BY count(*) DESC LIMIT 5));
