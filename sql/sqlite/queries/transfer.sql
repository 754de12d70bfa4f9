-- Export: one JSON object per row, built by SQLite. JSON columns travel as text so a
-- restore gives back the same bytes. Messages and units are named by their printed ids
-- ('m:12', 'u:45') wherever they appear (format version 2; version 1 used bare numbers). Import: each row arrives as :row (a JSON object);
-- ids are passed separately (:id NULL means "assign a new one").

-- name: export_sources
SELECT json_object('type', 'source', 'id', id, 'ns', ns, 'kind', kind, 'uri', uri,
                   'sha256', sha256, 'status', status, 'created_at', created_at,
                   'finished_at', finished_at)
FROM sources WHERE ns = :ns ORDER BY id;

-- name: export_messages
SELECT json_object('type', 'message', 'id', 'm:' || id, 'ns', ns, 'source_id', source_id,
                   'conversation', conversation, 'session', session, 'seq', seq,
                   'external_id', external_id, 'speaker', speaker, 'role', role, 'text', text,
                   'sent_at', sent_at, 'attachments', attachments, 'raw', raw, 'meta', meta,
                   'replaces', 'm:' || replaces)
FROM messages WHERE ns = :ns ORDER BY id;

-- name: export_units
SELECT json_object('type', 'unit', 'id', 'u:' || id, 'ns', ns, 'kind', kind, 'conversation', conversation,
                   'episode_id', 'u:' || episode_id, 'title', title, 'text', text, 'subject', subject,
                   'predicate', predicate, 'object', object, 'aspect', aspect,
                   'occurred_start', occurred_start, 'occurred_end', occurred_end,
                   'time_precision', time_precision, 'mentioned_at', mentioned_at, 'stage', stage,
                   'prompt_version', prompt_version, 'model_id', model_id,
                   'content_hash', content_hash, 'data', data, 'created_at', created_at)
FROM units WHERE ns = :ns ORDER BY (episode_id IS NOT NULL), id;

-- name: export_unit_sources
SELECT json_object('type', 'unit_source', 'unit_id', 'u:' || us.unit_id, 'message_id', 'm:' || us.message_id)
FROM unit_sources AS us JOIN units AS u ON u.id = us.unit_id
WHERE u.ns = :ns ORDER BY us.unit_id, us.message_id;

-- name: export_entities
SELECT json_object('type', 'entity', 'id', id, 'ns', ns, 'name', name, 'norm_name', norm_name,
                   'entity_type', type, 'summary', summary, 'summary_at', summary_at,
                   'data', data, 'created_at', created_at)
FROM entities WHERE ns = :ns ORDER BY id;

-- name: export_aliases
SELECT json_object('type', 'alias', 'entity_id', a.entity_id, 'alias', a.alias,
                   'norm_alias', a.norm_alias)
FROM entity_aliases AS a JOIN entities AS e ON e.id = a.entity_id
WHERE e.ns = :ns ORDER BY a.entity_id, a.norm_alias;

-- name: export_mentions
SELECT json_object('type', 'mention', 'unit_id', 'u:' || m.unit_id, 'entity_id', m.entity_id,
                   'role', m.role, 'tag', m.tag)
FROM mentions AS m JOIN units AS u ON u.id = m.unit_id
WHERE u.ns = :ns ORDER BY m.unit_id, m.entity_id, m.role;

-- name: export_links
SELECT json_object('type', 'link', 'src_id', 'u:' || l.src_id, 'dst_id', 'u:' || l.dst_id, 'link_type', l.type,
                   'weight', l.weight, 'valid_at', l.valid_at, 'created_at', l.created_at)
FROM links AS l JOIN units AS u ON u.id = l.src_id
WHERE u.ns = :ns ORDER BY l.src_id, l.dst_id, l.type;

-- name: export_parts
SELECT json_object('type', 'part', 'id', id, 'ns', ns, 'message_id', 'm:' || message_id,
                   'start', start, 'end', end, 'context', context)
FROM message_parts WHERE ns = :ns ORDER BY id;

-- name: export_part_vectors
SELECT json_object('type', 'vector', 'table', 'message_parts', 'id', rowid, 'ns', ns,
                   'embedding', hex(embedding))
FROM vec_message_parts WHERE ns = :ns ORDER BY rowid;

-- name: export_message_vectors
SELECT json_object('type', 'vector', 'table', 'messages', 'id', 'm:' || rowid, 'ns', ns,
                   'embedding', hex(embedding))
FROM vec_messages WHERE ns = :ns ORDER BY rowid;

-- name: export_unit_vectors
SELECT json_object('type', 'vector', 'table', 'units', 'id', 'u:' || rowid, 'ns', ns, 'kind', kind,
                   'embedding', hex(embedding))
FROM vec_units WHERE ns = :ns ORDER BY rowid;

-- name: import_source
INSERT INTO sources (id, ns, kind, uri, sha256, status, created_at, finished_at)
VALUES (coalesce(:id, (SELECT id FROM next_ids WHERE name = 'sources')),
        :row ->> 'ns', :row ->> 'kind', :row ->> 'uri', :row ->> 'sha256',
        :row ->> 'status', :row ->> 'created_at', :row ->> 'finished_at')
RETURNING id;

-- name: import_message
-- :lang: the language of the record's text, computed by the importer (store/transfer.py).
INSERT INTO messages (id, ns, source_id, conversation, session, seq, external_id, speaker, role,
                      text, sent_at, attachments, raw, meta, replaces, lang)
VALUES (coalesce(:id, (SELECT id FROM next_ids WHERE name = 'messages')),
        :row ->> 'ns', :source_id, :row ->> 'conversation', :row ->> 'session',
        :row ->> 'seq', :row ->> 'external_id', :row ->> 'speaker', :row ->> 'role',
        :row ->> 'text', :row ->> 'sent_at', :row ->> 'attachments', :row ->> 'raw',
        :row ->> 'meta', :replaces, :lang)
RETURNING id;

-- name: import_unit
INSERT INTO units (id, ns, kind, conversation, episode_id, title, text, subject, predicate, object,
                   aspect, occurred_start, occurred_end, time_precision, mentioned_at, stage,
                   prompt_version, model_id, content_hash, data, created_at)
VALUES (coalesce(:id, (SELECT id FROM next_ids WHERE name = 'units')),
        :row ->> 'ns', :row ->> 'kind', :row ->> 'conversation', :episode_id,
        :row ->> 'title', :row ->> 'text', :row ->> 'subject', :row ->> 'predicate',
        :row ->> 'object', :row ->> 'aspect', :row ->> 'occurred_start', :row ->> 'occurred_end',
        :row ->> 'time_precision', :row ->> 'mentioned_at', :row ->> 'stage',
        :row ->> 'prompt_version', :row ->> 'model_id', :row ->> 'content_hash', :row ->> 'data',
        :row ->> 'created_at')
RETURNING id;

-- name: import_entity
INSERT INTO entities (id, ns, name, norm_name, type, summary, summary_at, data, created_at)
VALUES (coalesce(:id, (SELECT id FROM next_ids WHERE name = 'entities')),
        :row ->> 'ns', :row ->> 'name', :row ->> 'norm_name', :row ->> 'entity_type',
        :row ->> 'summary', :row ->> 'summary_at', :row ->> 'data', :row ->> 'created_at')
RETURNING id;

-- name: import_alias
INSERT INTO entity_aliases (entity_id, alias, norm_alias)
VALUES (:entity_id, :row ->> 'alias', :row ->> 'norm_alias');

-- name: import_mention
INSERT INTO mentions (unit_id, entity_id, role, tag)
VALUES (:unit_id, :entity_id, :row ->> 'role', :row ->> 'tag');

-- name: import_link
INSERT INTO links (src_id, dst_id, type, weight, valid_at, created_at)
VALUES (:src_id, :dst_id, :row ->> 'link_type', :row ->> 'weight', :row ->> 'valid_at',
        :row ->> 'created_at');

-- name: import_message_vector
INSERT INTO vec_messages (rowid, embedding, ns) VALUES (:id, unhex(:row ->> 'embedding'), :row ->> 'ns');
INSERT OR REPLACE INTO vec_message_codes (id, ns, code)
SELECT :id, :row ->> 'ns', vec_quantize_binary(unhex(:row ->> 'embedding'))
WHERE length(unhex(:row ->> 'embedding')) % 32 = 0;

-- name: import_unit_vector
INSERT INTO vec_units (rowid, embedding, ns, kind)
VALUES (:id, unhex(:row ->> 'embedding'), :row ->> 'ns', :row ->> 'kind');
INSERT OR REPLACE INTO vec_unit_codes (id, ns, kind, code)
SELECT :id, :row ->> 'ns', :row ->> 'kind', vec_quantize_binary(unhex(:row ->> 'embedding'))
WHERE length(unhex(:row ->> 'embedding')) % 32 = 0;

-- name: import_part
INSERT INTO message_parts (id, message_id, ns, start, end, context)
VALUES (:id, :message_id, :row ->> 'ns', :row ->> 'start', :row ->> 'end', coalesce(:row ->> 'context', 0))
RETURNING id;

-- name: import_part_vector
INSERT INTO vec_message_parts (rowid, embedding, ns) VALUES (:id, unhex(:row ->> 'embedding'), :row ->> 'ns');
INSERT OR REPLACE INTO vec_part_codes (id, ns, code)
SELECT :id, :row ->> 'ns', vec_quantize_binary(unhex(:row ->> 'embedding'))
WHERE length(unhex(:row ->> 'embedding')) % 32 = 0;

-- name: ids_take
-- A restore that kept the file's ids: the ids its store gave out in namespace :ns stay taken here.
INSERT INTO id_marks (name, ns, high) VALUES (:name, :ns, :high)
ON CONFLICT (name, ns) DO UPDATE SET high = excluded.high WHERE excluded.high > high;

-- name: messages_without_vectors
-- As messages_for_reembed: each with the turn before it in its session; in id order (their
-- parts take ids in this order: a restore gives them the ids they had when first stored).
SELECT m.id, m.ns, m.speaker, m.text, m.attachments, p.speaker, p.text, p.attachments
FROM json_each(:ids) AS j
JOIN messages AS m ON m.id = j.value
LEFT JOIN messages AS p ON p.id = (
    SELECT b.id FROM messages AS b
    WHERE b.ns = m.ns AND b.conversation = m.conversation AND b.seq < m.seq
    ORDER BY b.seq DESC, b.id DESC LIMIT 1) AND p.session = m.session AND m.session != ''
ORDER BY m.id;

-- name: units_without_vectors
SELECT u.id, u.ns, u.kind, coalesce(u.title || '. ', '') || u.text, u.occurred_start
FROM json_each(:ids) AS j JOIN units AS u ON u.id = j.value
WHERE u.text != ''
ORDER BY u.id;
