-- The shared queries of extraction and consolidation whose SQLite text PostgreSQL
-- cannot run (two-argument max, a boolean summed), each with the same
-- meaning and the same result columns.

-- name: link_insert
INSERT INTO links (src_id, dst_id, type, weight, valid_at, created_at)
VALUES (:src_id, :dst_id, :type, :weight, :valid_at, :created_at)
ON CONFLICT (src_id, dst_id, type) DO UPDATE SET weight = greatest(links.weight, excluded.weight);

-- name: llm_call_totals
SELECT stage, sum(calls), sum(prompt_tokens), sum(completion_tokens), sum(seconds),
       sum(CASE WHEN ok = 0 THEN 1 ELSE 0 END)
FROM llm_calls WHERE ns = :ns GROUP BY stage ORDER BY stage;
