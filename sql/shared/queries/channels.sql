-- Search channels beyond vector and BM25: graph, temporal, entity/cue (TEMPR, MRAgent).

-- name: units_in_range
-- Units whose time overlaps [:start, :end] (dates as ISO text), most recent first.
SELECT id FROM units
WHERE ns = :ns AND text != '' AND occurred_start IS NOT NULL
  AND occurred_start <= :end || 'T99' AND coalesce(occurred_end, occurred_start) >= :start
ORDER BY occurred_start DESC LIMIT :limit;

-- name: messages_in_range
SELECT id FROM messages
WHERE ns = :ns AND sent_at IS NOT NULL AND sent_at >= :start AND sent_at <= :end || 'T99'
ORDER BY sent_at DESC LIMIT :limit;

-- name: latest_message_time
SELECT max(sent_at) FROM messages WHERE ns = :ns;

-- name: episode_members
-- Everything an episode holds: itself, its derived units and its messages, as [kind, id].
SELECT 'u', :id
UNION ALL SELECT 'u', id FROM units WHERE episode_id = :id
UNION ALL SELECT 'm', message_id FROM unit_sources WHERE unit_id = :id;
