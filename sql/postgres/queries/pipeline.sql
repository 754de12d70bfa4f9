-- The shared queries of extraction and consolidation whose SQLite text PostgreSQL
-- cannot run (two-argument max, a boolean summed), each with the same
-- meaning and the same result columns.

-- name: link_insert
INSERT INTO links (src_id, dst_id, type, weight, valid_at, created_at)
VALUES (:src_id, :dst_id, :type, :weight, :valid_at, :created_at)
ON CONFLICT (src_id, dst_id, type) DO UPDATE SET weight = greatest(links.weight, excluded.weight);

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
