-- The vectors queries whose text differs by engine, as SQLite runs them;
-- each name is also in sql/postgres/queries/vectors.sql (PostgreSQL). The portable ones are in
-- sql/shared/queries/vectors.sql.

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

-- name: codes_create
-- Binary codes of the vectors (one sign bit per dimension), scanned in memory by
-- vector_index.py on large namespaces, where a vec0 scan costs ~0.5 µs per row; q8 is the
-- vector as int8 (db.int8_code), read to rescore the codes' candidates. Kept by the
-- vec_*_insert queries and the delete triggers below; vec_code_changes tells a process's
-- cached copy whether to append (inserts in id order) or reload (deletes, out-of-order ids).
CREATE TABLE IF NOT EXISTS vec_message_codes (
    id   INTEGER PRIMARY KEY,
    ns   TEXT NOT NULL,
    code BLOB NOT NULL,
    q8   BLOB
);
CREATE INDEX IF NOT EXISTS vec_message_codes_by_ns ON vec_message_codes (ns, id);
CREATE TABLE IF NOT EXISTS vec_unit_codes (
    id   INTEGER PRIMARY KEY,
    ns   TEXT NOT NULL,
    kind TEXT,
    code BLOB NOT NULL,
    q8   BLOB
);
CREATE INDEX IF NOT EXISTS vec_unit_codes_by_ns ON vec_unit_codes (ns, id);
CREATE TABLE IF NOT EXISTS vec_code_changes (
    name     TEXT PRIMARY KEY,
    inserts  INTEGER NOT NULL DEFAULT 0,
    reloads  INTEGER NOT NULL DEFAULT 0,
    high_id  INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
INSERT OR IGNORE INTO vec_code_changes (name) VALUES ('messages'), ('units');
CREATE TRIGGER IF NOT EXISTS vec_message_codes_insert AFTER INSERT ON vec_message_codes BEGIN
    UPDATE vec_code_changes SET inserts = inserts + 1, reloads = reloads + (new.id <= high_id),
        high_id = max(high_id, new.id) WHERE name = 'messages';
END;
CREATE TRIGGER IF NOT EXISTS vec_unit_codes_insert AFTER INSERT ON vec_unit_codes BEGIN
    UPDATE vec_code_changes SET inserts = inserts + 1, reloads = reloads + (new.id <= high_id),
        high_id = max(high_id, new.id) WHERE name = 'units';
END;
CREATE TRIGGER IF NOT EXISTS vec_message_codes_delete AFTER DELETE ON vec_message_codes BEGIN
    UPDATE vec_code_changes SET reloads = reloads + 1 WHERE name = 'messages';
END;
CREATE TRIGGER IF NOT EXISTS vec_unit_codes_delete AFTER DELETE ON vec_unit_codes BEGIN
    UPDATE vec_code_changes SET reloads = reloads + 1 WHERE name = 'units';
END;
CREATE TRIGGER IF NOT EXISTS vec_message_codes_gone AFTER DELETE ON messages BEGIN
    DELETE FROM vec_message_codes WHERE id = old.id;
END;
CREATE TRIGGER IF NOT EXISTS vec_unit_codes_gone AFTER DELETE ON units BEGIN
    DELETE FROM vec_unit_codes WHERE id = old.id;
END;

-- name: parts_vec_create
-- The vectors of message parts (migration 0008), with their codes, like the two above;
-- run after codes_create. {dim} as in vec_create.
CREATE VIRTUAL TABLE IF NOT EXISTS vec_message_parts USING vec0(
    embedding float[{dim}] distance_metric=cosine,
    ns TEXT partition key
);
CREATE TABLE IF NOT EXISTS vec_part_codes (
    id   INTEGER PRIMARY KEY,
    ns   TEXT NOT NULL,
    code BLOB NOT NULL,
    q8   BLOB
);
CREATE INDEX IF NOT EXISTS vec_part_codes_by_ns ON vec_part_codes (ns, id);
INSERT OR IGNORE INTO vec_code_changes (name) VALUES ('parts');
CREATE TRIGGER IF NOT EXISTS vec_part_codes_insert AFTER INSERT ON vec_part_codes BEGIN
    UPDATE vec_code_changes SET inserts = inserts + 1, reloads = reloads + (new.id <= high_id),
        high_id = max(high_id, new.id) WHERE name = 'parts';
END;
CREATE TRIGGER IF NOT EXISTS vec_part_codes_delete AFTER DELETE ON vec_part_codes BEGIN
    UPDATE vec_code_changes SET reloads = reloads + 1 WHERE name = 'parts';
END;
CREATE TRIGGER IF NOT EXISTS vec_message_parts_gone AFTER DELETE ON message_parts BEGIN
    DELETE FROM vec_message_parts WHERE rowid = old.id;
    DELETE FROM vec_part_codes WHERE id = old.id;
END;

-- name: parts_vec_exists
SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'vec_message_parts';

-- name: codes_exist
SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'vec_unit_codes';

-- name: codes_backfill
-- Stores bound before the codes existed: quantise what the vec0 tables hold.
INSERT OR IGNORE INTO vec_message_codes (id, ns, code, q8)
SELECT rowid, ns, vec_quantize_binary(embedding), localmem_int8(embedding)
FROM vec_messages WHERE length(embedding) % 32 = 0;
INSERT OR IGNORE INTO vec_unit_codes (id, ns, kind, code, q8)
SELECT rowid, ns, kind, vec_quantize_binary(embedding), localmem_int8(embedding)
FROM vec_units WHERE length(embedding) % 32 = 0;

-- name: codes_int8_exist
SELECT 1 FROM pragma_table_info('vec_unit_codes') WHERE name = 'q8';

-- name: codes_add_int8
-- Stores whose codes predate q8: add it, filled from one sequential pass over vec0.
ALTER TABLE vec_message_codes ADD COLUMN q8 BLOB;
ALTER TABLE vec_unit_codes ADD COLUMN q8 BLOB;
UPDATE vec_message_codes SET q8 = v.q8
FROM (SELECT rowid AS id, localmem_int8(embedding) AS q8 FROM vec_messages) AS v
WHERE vec_message_codes.id = v.id;
UPDATE vec_unit_codes SET q8 = v.q8
FROM (SELECT rowid AS id, localmem_int8(embedding) AS q8 FROM vec_units) AS v
WHERE vec_unit_codes.id = v.id;

-- name: codes_changes
SELECT name, inserts, reloads FROM vec_code_changes;

-- name: message_codes_after
SELECT id, NULL, code FROM vec_message_codes WHERE ns = :ns AND id > :after ORDER BY id;

-- name: unit_codes_after
SELECT id, kind, code FROM vec_unit_codes WHERE ns = :ns AND id > :after ORDER BY id;

-- name: part_codes_after
SELECT id, NULL, code FROM vec_part_codes WHERE ns = :ns AND id > :after ORDER BY id;

-- name: message_int8_of
SELECT c.id, c.q8 FROM json_each(:ids) AS j JOIN vec_message_codes AS c ON c.id = j.value;

-- name: unit_int8_of
SELECT c.id, c.q8 FROM json_each(:ids) AS j JOIN vec_unit_codes AS c ON c.id = j.value;

-- name: part_int8_of
SELECT c.id, c.q8 FROM json_each(:ids) AS j JOIN vec_part_codes AS c ON c.id = j.value;

-- name: message_vectors_of
SELECT v.rowid, v.embedding FROM json_each(:ids) AS j JOIN vec_messages AS v ON v.rowid = j.value;

-- name: unit_vectors_of
SELECT v.rowid, v.embedding FROM json_each(:ids) AS j JOIN vec_units AS v ON v.rowid = j.value;

-- name: part_vectors_of
SELECT v.rowid, v.embedding FROM json_each(:ids) AS j JOIN vec_message_parts AS v ON v.rowid = j.value;

-- name: vec_drop
DROP TRIGGER IF EXISTS vec_messages_delete;
DROP TRIGGER IF EXISTS vec_units_delete;
DROP TABLE IF EXISTS vec_messages;
DROP TABLE IF EXISTS vec_units;
DROP TRIGGER IF EXISTS vec_message_codes_gone;
DROP TRIGGER IF EXISTS vec_unit_codes_gone;
DROP TABLE IF EXISTS vec_message_codes;
DROP TABLE IF EXISTS vec_unit_codes;
DROP TRIGGER IF EXISTS vec_message_parts_gone;
DROP TABLE IF EXISTS vec_message_parts;
DROP TABLE IF EXISTS vec_part_codes;
DROP TABLE IF EXISTS vec_code_changes;

-- name: vec_exists
SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'vec_messages';

-- name: vec_message_insert
INSERT INTO vec_messages (rowid, embedding, ns) VALUES (:id, :embedding, :ns);
-- Codes need a dimension divisible by 8 (32 bytes of float32); other embedders search exactly.
INSERT OR REPLACE INTO vec_message_codes (id, ns, code, q8)
SELECT :id, :ns, vec_quantize_binary(:embedding), localmem_int8(:embedding) WHERE length(:embedding) % 32 = 0;

-- name: vec_unit_insert
INSERT INTO vec_units (rowid, embedding, ns, kind) VALUES (:id, :embedding, :ns, :kind);
INSERT OR REPLACE INTO vec_unit_codes (id, ns, kind, code, q8)
SELECT :id, :ns, :kind, vec_quantize_binary(:embedding), localmem_int8(:embedding)
WHERE length(:embedding) % 32 = 0;

-- name: part_insert
INSERT INTO message_parts (message_id, ns, start, end, context) VALUES (:message_id, :ns, :start, :end, :context)
RETURNING id;

-- name: vec_part_insert
INSERT INTO vec_message_parts (rowid, embedding, ns) VALUES (:id, :embedding, :ns);
INSERT OR REPLACE INTO vec_part_codes (id, ns, code, q8)
SELECT :id, :ns, vec_quantize_binary(:embedding), localmem_int8(:embedding) WHERE length(:embedding) % 32 = 0;

-- name: part_messages
-- The message each part (ids: a JSON array) belongs to.
SELECT p.id, p.message_id FROM json_each(:ids) AS j JOIN message_parts AS p ON p.id = j.value;

-- name: vec_message_parts_knn
SELECT rowid AS id, distance
FROM vec_message_parts
WHERE embedding MATCH :embedding AND k = :k AND ns = :ns
ORDER BY distance;

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

-- name: message_before
-- The turn before a message at :seq (NULL: after the last) of :conversation when it is in the
-- message's session :session (as in messages_for_reembed); none for a message without a
-- session (session ''): the turn before it may be days apart.
SELECT speaker, text, attachments FROM (
    SELECT speaker, text, attachments, session FROM messages
    WHERE ns = :ns AND conversation = :conversation AND (:seq IS NULL OR seq < :seq)
    ORDER BY seq DESC, id DESC LIMIT 1)
WHERE session = :session AND :session != '';

-- name: message_vector
SELECT embedding FROM vec_messages WHERE rowid = :id;

-- name: reembed_staging_create
-- What a reembed has embedded so far (store.manage.reembed): committed chunk by chunk, so that a
-- reembed stopped half-way resumes; emptied and dropped when the new vectors are swapped in.
-- data: a JSON line of the parts (start, end, context), then the float32 vectors.
CREATE TABLE IF NOT EXISTS reembed_staging (
    kind TEXT NOT NULL CHECK (kind IN ('m', 'u')),
    id   INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (kind, id)
) WITHOUT ROWID;

-- name: reembed_stage
INSERT OR REPLACE INTO reembed_staging (kind, id, data) VALUES (:kind, :id, :data);

-- name: reembed_lock
-- Taken by a reembed's swap transaction: on SQLite its IMMEDIATE transaction already holds the
-- store's one write lock (PostgreSQL: sql/postgres/queries/vectors.sql).
SELECT 'reembed_lock';
