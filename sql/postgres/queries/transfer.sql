-- Export and import on PostgreSQL: the same records as the SQLite store's (json_build_object
-- in place of json_object; its text is made compact by the connection, store/pg.py), vectors
-- as the hex of little-endian float32, as SQLite's hex() of a vec0 blob gives them.

-- name: export_sources
SELECT json_build_object('type', 'source', 'id', id, 'ns', ns, 'kind', kind, 'uri', uri,
                   'sha256', sha256, 'status', status, 'created_at', created_at,
                   'finished_at', finished_at)
FROM sources WHERE ns = :ns ORDER BY id;

-- name: export_messages
SELECT json_build_object('type', 'message', 'id', 'm:' || id, 'ns', ns, 'source_id', source_id,
                   'conversation', conversation, 'session', session, 'seq', seq,
                   'external_id', external_id, 'speaker', speaker, 'role', role, 'text', text,
                   'sent_at', sent_at, 'attachments', attachments, 'raw', raw, 'meta', meta,
                   'replaces', 'm:' || replaces)
FROM messages WHERE ns = :ns ORDER BY id;

-- name: export_units
SELECT json_build_object('type', 'unit', 'id', 'u:' || id, 'ns', ns, 'kind', kind, 'conversation', conversation,
                   'episode_id', 'u:' || episode_id, 'title', title, 'text', text, 'subject', subject,
                   'predicate', predicate, 'object', object, 'aspect', aspect,
                   'occurred_start', occurred_start, 'occurred_end', occurred_end,
                   'time_precision', time_precision, 'mentioned_at', mentioned_at, 'stage', stage,
                   'prompt_version', prompt_version, 'model_id', model_id,
                   'content_hash', content_hash, 'data', data, 'created_at', created_at)
FROM units WHERE ns = :ns ORDER BY (episode_id IS NOT NULL), id;

-- name: export_unit_sources
SELECT json_build_object('type', 'unit_source', 'unit_id', 'u:' || us.unit_id, 'message_id', 'm:' || us.message_id)
FROM unit_sources AS us JOIN units AS u ON u.id = us.unit_id
WHERE u.ns = :ns ORDER BY us.unit_id, us.message_id;

-- name: export_entities
SELECT json_build_object('type', 'entity', 'id', id, 'ns', ns, 'name', name, 'norm_name', norm_name,
                   'entity_type', type, 'summary', summary, 'summary_at', summary_at,
                   'data', data, 'created_at', created_at)
FROM entities WHERE ns = :ns ORDER BY id;

-- name: export_aliases
SELECT json_build_object('type', 'alias', 'entity_id', a.entity_id, 'alias', a.alias,
                   'norm_alias', a.norm_alias)
FROM entity_aliases AS a JOIN entities AS e ON e.id = a.entity_id
WHERE e.ns = :ns ORDER BY a.entity_id, a.norm_alias;

-- name: export_mentions
SELECT json_build_object('type', 'mention', 'unit_id', 'u:' || m.unit_id, 'entity_id', m.entity_id,
                   'role', m.role, 'tag', m.tag)
FROM mentions AS m JOIN units AS u ON u.id = m.unit_id
WHERE u.ns = :ns ORDER BY m.unit_id, m.entity_id, m.role;

-- name: export_links
SELECT json_build_object('type', 'link', 'src_id', 'u:' || l.src_id, 'dst_id', 'u:' || l.dst_id, 'link_type', l.type,
                   'weight', l.weight, 'valid_at', l.valid_at, 'created_at', l.created_at)
FROM links AS l JOIN units AS u ON u.id = l.src_id
WHERE u.ns = :ns ORDER BY l.src_id, l.dst_id, l.type;

-- name: export_parts
SELECT json_build_object('type', 'part', 'id', id, 'ns', ns, 'message_id', 'm:' || message_id,
                   'start', start, 'end', "end", 'context', context)
FROM message_parts WHERE ns = :ns ORDER BY id;

-- name: export_part_vectors
SELECT json_build_object('type', 'vector', 'table', 'message_parts', 'id', id, 'ns', ns,
                   'embedding', localmem_vector_hex(embedding))
FROM vec_message_parts WHERE ns = :ns ORDER BY id;

-- name: export_message_vectors
SELECT json_build_object('type', 'vector', 'table', 'messages', 'id', 'm:' || id, 'ns', ns,
                   'embedding', localmem_vector_hex(embedding))
FROM vec_messages WHERE ns = :ns ORDER BY id;

-- name: export_unit_vectors
SELECT json_build_object('type', 'vector', 'table', 'units', 'id', 'u:' || id, 'ns', ns, 'kind', kind,
                   'embedding', localmem_vector_hex(embedding))
FROM vec_units WHERE ns = :ns ORDER BY id;

-- name: import_source
INSERT INTO sources (id, ns, kind, uri, sha256, status, created_at, finished_at)
VALUES (coalesce(:id, localmem_next_id('sources')),
        CAST(:row AS jsonb) ->> 'ns', CAST(:row AS jsonb) ->> 'kind', CAST(:row AS jsonb) ->> 'uri', CAST(:row AS jsonb) ->> 'sha256',
        CAST(:row AS jsonb) ->> 'status', CAST(:row AS jsonb) ->> 'created_at', CAST(:row AS jsonb) ->> 'finished_at')
RETURNING id;

-- name: import_message
-- :lang: the language of the record's text, computed by the importer (store/transfer.py).
INSERT INTO messages (id, ns, source_id, conversation, session, seq, external_id, speaker, role,
                      text, sent_at, attachments, raw, meta, replaces, lang)
VALUES (coalesce(:id, localmem_next_id('messages')),
        CAST(:row AS jsonb) ->> 'ns', :source_id, CAST(:row AS jsonb) ->> 'conversation', CAST(:row AS jsonb) ->> 'session',
        (CAST(:row AS jsonb) ->> 'seq')::bigint, CAST(:row AS jsonb) ->> 'external_id', CAST(:row AS jsonb) ->> 'speaker', CAST(:row AS jsonb) ->> 'role',
        CAST(:row AS jsonb) ->> 'text', CAST(:row AS jsonb) ->> 'sent_at', CAST(:row AS jsonb) ->> 'attachments', CAST(:row AS jsonb) ->> 'raw',
        CAST(:row AS jsonb) ->> 'meta', :replaces, :lang)
RETURNING id;

-- name: import_unit
INSERT INTO units (id, ns, kind, conversation, episode_id, title, text, subject, predicate, object,
                   aspect, occurred_start, occurred_end, time_precision, mentioned_at, stage,
                   prompt_version, model_id, content_hash, data, created_at)
VALUES (coalesce(:id, localmem_next_id('units')),
        CAST(:row AS jsonb) ->> 'ns', CAST(:row AS jsonb) ->> 'kind', CAST(:row AS jsonb) ->> 'conversation', :episode_id,
        CAST(:row AS jsonb) ->> 'title', CAST(:row AS jsonb) ->> 'text', CAST(:row AS jsonb) ->> 'subject', CAST(:row AS jsonb) ->> 'predicate',
        CAST(:row AS jsonb) ->> 'object', CAST(:row AS jsonb) ->> 'aspect', CAST(:row AS jsonb) ->> 'occurred_start', CAST(:row AS jsonb) ->> 'occurred_end',
        CAST(:row AS jsonb) ->> 'time_precision', CAST(:row AS jsonb) ->> 'mentioned_at', CAST(:row AS jsonb) ->> 'stage',
        CAST(:row AS jsonb) ->> 'prompt_version', CAST(:row AS jsonb) ->> 'model_id', CAST(:row AS jsonb) ->> 'content_hash', CAST(:row AS jsonb) ->> 'data',
        CAST(:row AS jsonb) ->> 'created_at')
RETURNING id;

-- name: import_entity
INSERT INTO entities (id, ns, name, norm_name, type, summary, summary_at, data, created_at)
VALUES (coalesce(:id, localmem_next_id('entities')),
        CAST(:row AS jsonb) ->> 'ns', CAST(:row AS jsonb) ->> 'name', CAST(:row AS jsonb) ->> 'norm_name', CAST(:row AS jsonb) ->> 'entity_type',
        CAST(:row AS jsonb) ->> 'summary', CAST(:row AS jsonb) ->> 'summary_at', CAST(:row AS jsonb) ->> 'data', CAST(:row AS jsonb) ->> 'created_at')
RETURNING id;

-- name: import_alias
INSERT INTO entity_aliases (entity_id, alias, norm_alias)
VALUES (:entity_id, CAST(:row AS jsonb) ->> 'alias', CAST(:row AS jsonb) ->> 'norm_alias');

-- name: import_mention
INSERT INTO mentions (unit_id, entity_id, role, tag)
VALUES (:unit_id, :entity_id, CAST(:row AS jsonb) ->> 'role', CAST(:row AS jsonb) ->> 'tag');

-- name: import_link
INSERT INTO links (src_id, dst_id, type, weight, valid_at, created_at)
VALUES (:src_id, :dst_id, CAST(:row AS jsonb) ->> 'link_type', (CAST(:row AS jsonb) ->> 'weight')::float8, CAST(:row AS jsonb) ->> 'valid_at',
        CAST(:row AS jsonb) ->> 'created_at');

-- name: import_message_vector
INSERT INTO vec_messages (id, ns, embedding)
VALUES (:id, CAST(:row AS jsonb) ->> 'ns', localmem_vector_from_hex(CAST(:row AS jsonb) ->> 'embedding'))
ON CONFLICT (id) DO UPDATE SET embedding = excluded.embedding;

-- name: import_unit_vector
INSERT INTO vec_units (id, ns, kind, embedding)
VALUES (:id, CAST(:row AS jsonb) ->> 'ns', CAST(:row AS jsonb) ->> 'kind', localmem_vector_from_hex(CAST(:row AS jsonb) ->> 'embedding'))
ON CONFLICT (id) DO UPDATE SET embedding = excluded.embedding;

-- name: import_part
INSERT INTO message_parts (id, message_id, ns, start, "end", context)
VALUES (coalesce(:id, localmem_next_id('message_parts')), :message_id, CAST(:row AS jsonb) ->> 'ns', (CAST(:row AS jsonb) ->> 'start')::bigint, (CAST(:row AS jsonb) ->> 'end')::bigint, coalesce((CAST(:row AS jsonb) ->> 'context')::int, 0))
RETURNING id;

-- name: import_part_vector
INSERT INTO vec_message_parts (id, ns, embedding)
VALUES (:id, CAST(:row AS jsonb) ->> 'ns', localmem_vector_from_hex(CAST(:row AS jsonb) ->> 'embedding'))
ON CONFLICT (id) DO UPDATE SET embedding = excluded.embedding;

-- name: ids_take
INSERT INTO id_marks (name, ns, high) VALUES (:name, :ns, :high)
ON CONFLICT (name, ns) DO UPDATE SET high = excluded.high WHERE excluded.high > id_marks.high;

-- name: messages_without_vectors
-- As messages_for_reembed: each with the turn before it in its session; in id order (their
-- parts take ids in this order: a restore gives them the ids they had when first stored).
SELECT m.id, m.ns, m.speaker, m.text, m.attachments, p.speaker, p.text, p.attachments
FROM localmem_ids(:ids) AS j
JOIN messages AS m ON m.id = j.value
LEFT JOIN messages AS p ON p.id = (
    SELECT b.id FROM messages AS b
    WHERE b.ns = m.ns AND b.conversation = m.conversation AND b.seq < m.seq
    ORDER BY b.seq DESC, b.id DESC LIMIT 1) AND p.session = m.session AND m.session != ''
ORDER BY m.id;

-- name: units_without_vectors
SELECT u.id, u.ns, u.kind, coalesce(u.title || '. ', '') || u.text, u.occurred_start
FROM localmem_ids(:ids) AS j JOIN units AS u ON u.id = j.value
WHERE u.text != ''
ORDER BY u.id;
