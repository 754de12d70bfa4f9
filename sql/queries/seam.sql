-- Named queries of the Store seam (issue 52). They replace message_insert and import_message,
-- whose SQLite text computes the language with the Python function localmem_lang: here the
-- language is computed in ingest (localmem.text.language.detect) and bound as :lang on both
-- engines. Kept in a file of their own while the per-engine layout is made (the integrator
-- moves them, and drops the two old queries with localmem_lang's registration).

-- name: message_insert_lang
-- lang: the text's language (migration 0013), which decides the full-text index it goes to.
INSERT INTO messages (id, ns, source_id, conversation, session, seq, external_id, speaker, role,
                      text, sent_at, attachments, raw, meta, replaces, lang)
VALUES ((SELECT id FROM next_ids WHERE name = 'messages'),
        :ns, :source_id, :conversation, :session, :seq, :external_id, :speaker, :role,
        :text, :sent_at, :attachments, :raw, :meta, :replaces, :lang)
ON CONFLICT (ns, conversation, external_id) DO NOTHING
RETURNING id;

-- name: import_message_lang
-- lang: the language of the record's text, computed by the importer (store/transfer.py).
INSERT INTO messages (id, ns, source_id, conversation, session, seq, external_id, speaker, role,
                      text, sent_at, attachments, raw, meta, replaces, lang)
VALUES (coalesce(:id, (SELECT id FROM next_ids WHERE name = 'messages')),
        :row ->> 'ns', :source_id, :row ->> 'conversation', :row ->> 'session',
        :row ->> 'seq', :row ->> 'external_id', :row ->> 'speaker', :row ->> 'role',
        :row ->> 'text', :row ->> 'sent_at', :row ->> 'attachments', :row ->> 'raw',
        :row ->> 'meta', :replaces, :lang)
RETURNING id;
