-- name: meta_get
SELECT value FROM meta WHERE key = :key;

-- name: meta_set
INSERT INTO meta (key, value) VALUES (:key, :value)
ON CONFLICT (key) DO UPDATE SET value = excluded.value;

-- name: meta_all
SELECT key, value FROM meta ORDER BY key;

-- name: meta_delete
DELETE FROM meta WHERE key = :key;
