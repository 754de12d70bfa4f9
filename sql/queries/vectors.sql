-- name: vec_create
-- The vector indexes, created when a store is bound to an embedder. {dim} is the
-- embedder's dimension, an integer checked in db.py (DDL cannot bind parameters).
-- The delete triggers live here because they name the vec0 tables.
CREATE VIRTUAL TABLE IF NOT EXISTS vec_messages USING vec0(
    embedding float[{dim}] distance_metric=cosine,
    ns TEXT partition key
);
CREATE VIRTUAL TABLE IF NOT EXISTS vec_units USING vec0(
    embedding float[{dim}] distance_metric=cosine,
    ns TEXT partition key,
    kind TEXT
);
CREATE TRIGGER IF NOT EXISTS vec_messages_delete AFTER DELETE ON messages BEGIN
    DELETE FROM vec_messages WHERE rowid = old.id;
END;
CREATE TRIGGER IF NOT EXISTS vec_units_delete AFTER DELETE ON units BEGIN
    DELETE FROM vec_units WHERE rowid = old.id;
END;

-- name: vec_drop
DROP TRIGGER IF EXISTS vec_messages_delete;
DROP TRIGGER IF EXISTS vec_units_delete;
DROP TABLE IF EXISTS vec_messages;
DROP TABLE IF EXISTS vec_units;

-- name: vec_exists
SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'vec_messages';

-- name: vec_message_insert
INSERT INTO vec_messages (rowid, embedding, ns) VALUES (:id, :embedding, :ns);

-- name: vec_unit_insert
INSERT INTO vec_units (rowid, embedding, ns, kind) VALUES (:id, :embedding, :ns, :kind);

-- name: vec_messages_knn
SELECT rowid AS id, distance
FROM vec_messages
WHERE embedding MATCH :embedding AND k = :k AND ns = :ns
ORDER BY distance;

-- name: vec_units_knn
SELECT rowid AS id, distance
FROM vec_units
WHERE embedding MATCH :embedding AND k = :k AND ns = :ns
ORDER BY distance;

-- name: vec_messages_export
SELECT rowid AS id, embedding FROM vec_messages WHERE ns = :ns ORDER BY rowid;

-- name: vec_units_export
SELECT rowid AS id, embedding FROM vec_units WHERE ns = :ns ORDER BY rowid;

-- name: messages_for_reembed
SELECT id, ns, speaker, text, attachments FROM messages ORDER BY id;

-- name: units_for_reembed
-- Episodes not extracted yet have no text and no vector.
SELECT id, ns, kind, coalesce(title || '. ', '') || text AS text, occurred_start FROM units
WHERE text != '' ORDER BY id;

-- name: message_vector
SELECT embedding FROM vec_messages WHERE rowid = :id;
