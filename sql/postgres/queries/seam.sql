-- PostgreSQL texts of sql/queries/seam.sql where they differ (see there).

-- name: import_message_lang
INSERT INTO messages (id, ns, source_id, conversation, session, seq, external_id, speaker, role,
                      text, sent_at, attachments, raw, meta, replaces, lang)
VALUES (coalesce(:id, (SELECT id FROM next_ids WHERE name = 'messages')),
        CAST(:row AS jsonb) ->> 'ns', :source_id, CAST(:row AS jsonb) ->> 'conversation', CAST(:row AS jsonb) ->> 'session',
        (CAST(:row AS jsonb) ->> 'seq')::bigint, CAST(:row AS jsonb) ->> 'external_id', CAST(:row AS jsonb) ->> 'speaker', CAST(:row AS jsonb) ->> 'role',
        CAST(:row AS jsonb) ->> 'text', CAST(:row AS jsonb) ->> 'sent_at', CAST(:row AS jsonb) ->> 'attachments', CAST(:row AS jsonb) ->> 'raw',
        CAST(:row AS jsonb) ->> 'meta', :replaces, :lang)
RETURNING id;
