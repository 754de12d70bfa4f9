-- The vector tables on PostgreSQL: pgvector columns with HNSW indexes (cosine distance, as
-- sqlite-vec's distance_metric=cosine). A namespace's search is an HNSW scan filtered by ns,
-- with iterative scans on (set for each connection in store/pg.py) so that k rows come back.
-- The SQLite store's binary codes (vector_index.py) are not kept: codes_changes is empty, so
-- every search takes the index path.

-- name: vec_create
CREATE TABLE IF NOT EXISTS vec_messages (
    id        BIGINT PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
    ns        TEXT NOT NULL,
    embedding vector({dim}) NOT NULL
);
CREATE INDEX IF NOT EXISTS vec_messages_hnsw ON vec_messages USING hnsw (embedding vector_cosine_ops);
CREATE INDEX IF NOT EXISTS vec_messages_ns ON vec_messages (ns);
CREATE TABLE IF NOT EXISTS vec_units (
    id        BIGINT PRIMARY KEY REFERENCES units(id) ON DELETE CASCADE,
    ns        TEXT NOT NULL,
    kind      TEXT,
    embedding vector({dim}) NOT NULL
);
CREATE INDEX IF NOT EXISTS vec_units_hnsw ON vec_units USING hnsw (embedding vector_cosine_ops);
CREATE INDEX IF NOT EXISTS vec_units_ns ON vec_units (ns, kind);
CREATE TABLE IF NOT EXISTS vec_message_parts (
    id        BIGINT PRIMARY KEY REFERENCES message_parts(id) ON DELETE CASCADE,
    ns        TEXT NOT NULL,
    embedding vector({dim}) NOT NULL
);
CREATE INDEX IF NOT EXISTS vec_message_parts_hnsw ON vec_message_parts USING hnsw (embedding vector_cosine_ops);
CREATE INDEX IF NOT EXISTS vec_message_parts_ns ON vec_message_parts (ns);
SELECT localmem_protect(t) FROM unnest(ARRAY['vec_messages', 'vec_units', 'vec_message_parts']) AS t;

-- name: codes_create
SELECT 1 WHERE false;

-- name: parts_vec_create
SELECT 1 WHERE false;

-- name: parts_vec_exists
SELECT 1 WHERE to_regclass('vec_message_parts') IS NOT NULL;

-- name: codes_exist
SELECT 1 WHERE to_regclass('vec_units') IS NOT NULL;

-- name: codes_backfill
SELECT 1 WHERE false;

-- name: codes_int8_exist
SELECT 1;

-- name: codes_add_int8
SELECT 1 WHERE false;

-- name: codes_changes
SELECT NULL::text, 0, 0 WHERE false;

-- name: message_codes_after
SELECT NULL::bigint, NULL::text, NULL::bytea WHERE false;

-- name: unit_codes_after
SELECT NULL::bigint, NULL::text, NULL::bytea WHERE false;

-- name: part_codes_after
SELECT NULL::bigint, NULL::text, NULL::bytea WHERE false;

-- name: message_int8_of
SELECT v.id, localmem_int8(v.embedding)
FROM jsonb_array_elements_text(CAST(:ids AS jsonb)) AS j(value) JOIN vec_messages AS v ON v.id = j.value::bigint;

-- name: unit_int8_of
SELECT v.id, localmem_int8(v.embedding)
FROM jsonb_array_elements_text(CAST(:ids AS jsonb)) AS j(value) JOIN vec_units AS v ON v.id = j.value::bigint;

-- name: part_int8_of
SELECT v.id, localmem_int8(v.embedding)
FROM jsonb_array_elements_text(CAST(:ids AS jsonb)) AS j(value) JOIN vec_message_parts AS v ON v.id = j.value::bigint;

-- name: message_vectors_of
SELECT v.id, v.embedding FROM jsonb_array_elements_text(CAST(:ids AS jsonb)) AS j(value)
JOIN vec_messages AS v ON v.id = j.value::bigint;

-- name: unit_vectors_of
SELECT v.id, v.embedding FROM jsonb_array_elements_text(CAST(:ids AS jsonb)) AS j(value)
JOIN vec_units AS v ON v.id = j.value::bigint;

-- name: part_vectors_of
SELECT v.id, v.embedding FROM jsonb_array_elements_text(CAST(:ids AS jsonb)) AS j(value)
JOIN vec_message_parts AS v ON v.id = j.value::bigint;

-- name: vec_drop
DROP TABLE IF EXISTS vec_message_parts;
DROP TABLE IF EXISTS vec_messages;
DROP TABLE IF EXISTS vec_units;

-- name: vec_exists
SELECT 1 WHERE to_regclass('vec_messages') IS NOT NULL;

-- name: vec_message_insert
INSERT INTO vec_messages (id, ns, embedding) VALUES (:id, :ns, CAST(:embedding AS vector))
ON CONFLICT (id) DO UPDATE SET embedding = excluded.embedding;

-- name: vec_unit_insert
INSERT INTO vec_units (id, ns, kind, embedding) VALUES (:id, :ns, :kind, CAST(:embedding AS vector))
ON CONFLICT (id) DO UPDATE SET embedding = excluded.embedding, kind = excluded.kind;

-- name: part_insert
-- Its id from localmem_next_id, not the identity's next value, which a row a namespace role
-- wrote with an id ahead of the sequence would make fail (migration 0009).
INSERT INTO message_parts (id, message_id, ns, start, "end", context)
VALUES (localmem_next_id('message_parts'), :message_id, :ns, :start, :end, :context)
RETURNING id;

-- name: vec_part_insert
INSERT INTO vec_message_parts (id, ns, embedding) VALUES (:id, :ns, CAST(:embedding AS vector))
ON CONFLICT (id) DO UPDATE SET embedding = excluded.embedding;

-- name: part_messages
SELECT p.id, p.message_id FROM jsonb_array_elements_text(CAST(:ids AS jsonb)) AS j(value)
JOIN message_parts AS p ON p.id = j.value::bigint;

-- name: vec_message_parts_knn
SELECT id, embedding <=> CAST(:embedding AS vector) AS distance
FROM vec_message_parts WHERE ns = :ns
ORDER BY embedding <=> CAST(:embedding AS vector) LIMIT :k;

-- name: vec_messages_knn
SELECT id, embedding <=> CAST(:embedding AS vector) AS distance
FROM vec_messages WHERE ns = :ns
ORDER BY embedding <=> CAST(:embedding AS vector) LIMIT :k;

-- name: vec_units_knn
SELECT id, embedding <=> CAST(:embedding AS vector) AS distance
FROM vec_units WHERE ns = :ns
ORDER BY embedding <=> CAST(:embedding AS vector) LIMIT :k;

-- name: vec_messages_export
SELECT id, embedding FROM vec_messages WHERE ns = :ns ORDER BY id;

-- name: vec_units_export
SELECT id, embedding FROM vec_units WHERE ns = :ns ORDER BY id;

-- name: message_before
SELECT speaker, text, attachments FROM (
    SELECT speaker, text, attachments, session FROM messages
    WHERE ns = :ns AND conversation = :conversation AND (CAST(:seq AS bigint) IS NULL OR seq < :seq)
    ORDER BY seq DESC, id DESC LIMIT 1) AS b
WHERE session = :session AND :session != '';

-- name: message_vector
SELECT embedding FROM vec_messages WHERE id = :id;

-- name: reembed_staging_create
-- What a reembed has embedded so far (store.manage.reembed), as on SQLite (bytea for BLOB).
CREATE TABLE IF NOT EXISTS reembed_staging (
    kind TEXT NOT NULL CHECK (kind IN ('m', 'u')),
    id   BIGINT NOT NULL,
    data BYTEA NOT NULL,
    PRIMARY KEY (kind, id)
);

-- name: reembed_stage
INSERT INTO reembed_staging (kind, id, data) VALUES (:kind, :id, :data)
ON CONFLICT (kind, id) DO UPDATE SET data = excluded.data;

-- name: reembed_lock
-- A reembed's swap: no message or unit is added (or forgotten) between its last read of them
-- and its commit; writers wait for it (lock_timeout: the busy timeout), readers do not.
LOCK TABLE messages, units IN SHARE MODE;
