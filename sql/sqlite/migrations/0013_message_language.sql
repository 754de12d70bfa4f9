-- Full text in any language (issue 45). Each message's language is stored: an ISO 639-1 code
-- from localmem.text.language.detect ('und' when the text is too short to tell; NULL for messages
-- stored before this migration, which stay as they were indexed: English).
--
-- English and undetermined text stays in messages_fts, stemmed by Porter (an English stemmer).
-- Every other language goes to messages_fts_intl: unicode61 with diacritics folded, no stemming;
-- Chinese, Japanese, Korean and Thai runs are first cut into overlapping two-character words by
-- localmem_fts_text (a Python function every localmem connection registers), so that BM25
-- finds "北京" inside "我姐姐搬到北京了". Search matches the query against both.
--
-- localmem_lang and localmem_fts_text are deterministic Python functions registered by
-- localmem.store.db.connect; another engine (a PostgreSQL port) computes them in the application.
ALTER TABLE messages ADD COLUMN lang TEXT;

CREATE VIRTUAL TABLE messages_fts_intl USING fts5(
    context, body, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE messages_fts_intl_vocab USING fts5vocab(messages_fts_intl, 'row');

-- As in migration 0001, for English and undetermined text only.
DROP TRIGGER messages_fts_insert;
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages
WHEN new.lang IS NULL OR new.lang IN ('en', 'und') BEGIN
    INSERT INTO messages_fts (rowid, context, body) VALUES (
        new.id,
        coalesce((SELECT p.speaker || ': ' || p.text FROM messages AS p
                  WHERE p.ns = new.ns AND p.conversation = new.conversation
                    AND p.session = new.session AND p.seq < new.seq
                  ORDER BY p.seq DESC LIMIT 1), ''),
        new.speaker || ': ' || new.text || coalesce(
            ' ' || (SELECT group_concat(json_extract(a.value, '$.caption'), ' ')
                    FROM json_each(new.attachments) AS a
                    WHERE json_extract(a.value, '$.caption') IS NOT NULL), ''));
END;

CREATE TRIGGER messages_fts_intl_insert AFTER INSERT ON messages
WHEN new.lang NOT IN ('en', 'und') BEGIN
    INSERT INTO messages_fts_intl (rowid, context, body) VALUES (
        new.id,
        localmem_fts_text(coalesce((SELECT p.speaker || ': ' || p.text FROM messages AS p
                  WHERE p.ns = new.ns AND p.conversation = new.conversation
                    AND p.session = new.session AND p.seq < new.seq
                  ORDER BY p.seq DESC LIMIT 1), '')),
        localmem_fts_text(new.speaker || ': ' || new.text || coalesce(
            ' ' || (SELECT group_concat(json_extract(a.value, '$.caption'), ' ')
                    FROM json_each(new.attachments) AS a
                    WHERE json_extract(a.value, '$.caption') IS NOT NULL), '')));
END;
CREATE TRIGGER messages_fts_intl_delete AFTER DELETE ON messages BEGIN
    DELETE FROM messages_fts_intl WHERE rowid = old.id;
END;
