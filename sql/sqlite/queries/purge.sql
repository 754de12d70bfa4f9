-- Forgetting (store/purge.py). Every kind of forget deletes its rows inside purge(), which
-- watches what goes with the temporary triggers below, repairs what the deleted rows left
-- behind in rows that stay, and notes what went (localmem_forgotten, a Python function purge
-- registers) to look for it in the file afterwards (store/leftovers.py).

-- name: purge_watch
-- Per connection and dropped again by purge_unwatch, inside the forget's transaction.
CREATE TEMP TABLE IF NOT EXISTS purged_messages (
    id INTEGER PRIMARY KEY, ns TEXT, conversation TEXT, session TEXT, seq INTEGER);
CREATE TEMP TABLE IF NOT EXISTS purged_mentions (entity_id INTEGER PRIMARY KEY);
CREATE TEMP TABLE IF NOT EXISTS purged_readers (unit_id INTEGER PRIMARY KEY);
CREATE TEMP TABLE IF NOT EXISTS purged_followers (id INTEGER PRIMARY KEY);
CREATE TEMP TABLE IF NOT EXISTS purged_fts_data (id INTEGER PRIMARY KEY, block BLOB);
CREATE TEMP TABLE IF NOT EXISTS purged_fts_idx (segid, term, pgno);
CREATE TEMP TRIGGER IF NOT EXISTS purge_watch_messages AFTER DELETE ON main.messages BEGIN
    INSERT OR IGNORE INTO purged_messages VALUES (old.id, old.ns, old.conversation, old.session, old.seq);
END;
CREATE TEMP TRIGGER IF NOT EXISTS purge_watch_mentions AFTER DELETE ON main.mentions BEGIN
    INSERT OR IGNORE INTO purged_mentions VALUES (old.entity_id);
END;
CREATE TEMP TRIGGER IF NOT EXISTS purge_watch_readers AFTER DELETE ON main.unit_sources BEGIN
    INSERT OR IGNORE INTO purged_readers VALUES (old.unit_id);
END;
CREATE TEMP TRIGGER IF NOT EXISTS purge_note_messages BEFORE DELETE ON main.messages BEGIN
    SELECT localmem_forgotten(old.text, old.raw, old.attachments, old.meta, old.speaker,
                              old.conversation, old.external_id);
END;
CREATE TEMP TRIGGER IF NOT EXISTS purge_note_units BEFORE DELETE ON main.units BEGIN
    SELECT localmem_forgotten(old.title, old.text, old.subject, old.predicate, old.object, old.data);
END;
CREATE TEMP TRIGGER IF NOT EXISTS purge_note_entities BEFORE DELETE ON main.entities BEGIN
    SELECT localmem_forgotten(old.name, old.norm_name, old.summary, old.data);
END;
CREATE TEMP TRIGGER IF NOT EXISTS purge_note_summaries BEFORE UPDATE OF summary, data ON main.entities BEGIN
    SELECT localmem_forgotten(old.summary, old.data);
END;
CREATE TEMP TRIGGER IF NOT EXISTS purge_note_aliases BEFORE DELETE ON main.entity_aliases BEGIN
    SELECT localmem_forgotten(old.alias, old.norm_alias);
END;
CREATE TEMP TRIGGER IF NOT EXISTS purge_note_calls BEFORE DELETE ON main.llm_calls BEGIN
    SELECT localmem_forgotten(old.raw, old.error);
END;
CREATE TEMP TRIGGER IF NOT EXISTS purge_note_scrubbed_calls BEFORE UPDATE OF raw, error ON main.llm_calls BEGIN
    SELECT localmem_forgotten(old.raw, old.error);
END;
CREATE TEMP TRIGGER IF NOT EXISTS purge_note_sources BEFORE DELETE ON main.sources BEGIN
    SELECT localmem_forgotten(old.uri);
END;

-- name: purge_watch_codes
-- As purge_watch, for a store bound to an embedder (the codes tables exist): vector codes too.
CREATE TEMP TRIGGER IF NOT EXISTS purge_note_message_codes BEFORE DELETE ON main.vec_message_codes BEGIN
    SELECT localmem_forgotten(old.code, old.q8);
END;
CREATE TEMP TRIGGER IF NOT EXISTS purge_note_unit_codes BEFORE DELETE ON main.vec_unit_codes BEGIN
    SELECT localmem_forgotten(old.code, old.q8);
END;

-- name: purge_watch_part_codes
-- As purge_watch_codes, for a store with sentence parts.
CREATE TEMP TRIGGER IF NOT EXISTS purge_note_part_codes BEFORE DELETE ON main.vec_part_codes BEGIN
    SELECT localmem_forgotten(old.code, old.q8);
END;

-- name: purge_unwatch
DROP TRIGGER IF EXISTS temp.purge_watch_messages;
DROP TRIGGER IF EXISTS temp.purge_watch_mentions;
DROP TRIGGER IF EXISTS temp.purge_watch_readers;
DROP TRIGGER IF EXISTS temp.purge_note_messages;
DROP TRIGGER IF EXISTS temp.purge_note_units;
DROP TRIGGER IF EXISTS temp.purge_note_entities;
DROP TRIGGER IF EXISTS temp.purge_note_summaries;
DROP TRIGGER IF EXISTS temp.purge_note_aliases;
DROP TRIGGER IF EXISTS temp.purge_note_calls;
DROP TRIGGER IF EXISTS temp.purge_note_scrubbed_calls;
DROP TRIGGER IF EXISTS temp.purge_note_sources;
DROP TRIGGER IF EXISTS temp.purge_note_message_codes;
DROP TRIGGER IF EXISTS temp.purge_note_unit_codes;
DROP TRIGGER IF EXISTS temp.purge_note_part_codes;
DROP TABLE IF EXISTS temp.purged_messages;
DROP TABLE IF EXISTS temp.purged_mentions;
DROP TABLE IF EXISTS temp.purged_readers;
DROP TABLE IF EXISTS temp.purged_followers;
DROP TABLE IF EXISTS temp.purged_fts_data;
DROP TABLE IF EXISTS temp.purged_fts_idx;

-- name: purge_reindex_followers
-- A message's full-text row holds the message before it in its session as context
-- (trigger messages_fts_insert, migration 0001): the messages left at the first position after
-- each deleted one (a message and its corrections share a position) are indexed again, with the
-- message now before them, so no deleted text stays in them.
INSERT OR IGNORE INTO temp.purged_followers
SELECT m.id
FROM temp.purged_messages AS p
JOIN messages AS m ON m.ns = p.ns AND m.conversation = p.conversation AND m.session = p.session
WHERE m.seq = (SELECT min(f.seq) FROM messages AS f
               WHERE f.ns = p.ns AND f.conversation = p.conversation AND f.session = p.session
                 AND f.seq > p.seq);
DELETE FROM messages_fts WHERE rowid IN (SELECT id FROM temp.purged_followers);
INSERT INTO messages_fts (rowid, context, body)
SELECT new.id,
       coalesce((SELECT p.speaker || ': ' || p.text FROM messages AS p
                 WHERE p.ns = new.ns AND p.conversation = new.conversation
                   AND p.session = new.session AND p.seq < new.seq
                 ORDER BY p.seq DESC LIMIT 1), ''),
       new.speaker || ': ' || new.text || coalesce(
           ' ' || (SELECT group_concat(json_extract(a.value, '$.caption'), ' ')
                   FROM json_each(new.attachments) AS a
                   WHERE json_extract(a.value, '$.caption') IS NOT NULL), '')
FROM messages AS new WHERE new.id IN (SELECT id FROM temp.purged_followers)
  AND (new.lang IS NULL OR new.lang IN ('en', 'und'));
-- The same for the followers in other languages, in their own index (migration 0013).
DELETE FROM messages_fts_intl WHERE rowid IN (SELECT id FROM temp.purged_followers);
INSERT INTO messages_fts_intl (rowid, context, body)
SELECT new.id,
       localmem_fts_text(coalesce((SELECT p.speaker || ': ' || p.text FROM messages AS p
                 WHERE p.ns = new.ns AND p.conversation = new.conversation
                   AND p.session = new.session AND p.seq < new.seq
                 ORDER BY p.seq DESC LIMIT 1), '')),
       localmem_fts_text(new.speaker || ': ' || new.text || coalesce(
           ' ' || (SELECT group_concat(json_extract(a.value, '$.caption'), ' ')
                   FROM json_each(new.attachments) AS a
                   WHERE json_extract(a.value, '$.caption') IS NOT NULL), ''))
FROM messages AS new WHERE new.id IN (SELECT id FROM temp.purged_followers)
  AND new.lang NOT IN ('en', 'und');
-- Their context parts (migration 0012) were embedded with the deleted message: they go too (the
-- vector by trigger vec_message_parts_gone). `doctor` counts those messages as lacking one, and
-- `reembed` embeds them again with the turn now before them.
DELETE FROM message_parts WHERE context = 1 AND message_id IN (SELECT id FROM temp.purged_followers);

-- name: purge_scrub_calls
-- An episode that stays but lost some of its messages: its logged model replies were written
-- from what it read, deleted messages included, so they lose their text (counts and timings
-- stay). The calls of units that went, went with them.
UPDATE llm_calls SET raw = NULL, error = NULL
WHERE episode_id IN (SELECT unit_id FROM temp.purged_readers) AND (raw IS NOT NULL OR error IS NOT NULL);

-- name: purge_stale_summaries
-- A person's summary was written from what memory held about them: once some of it is
-- forgotten, the summary goes too (`profile --summary` writes it again from what is left).
UPDATE entities SET summary = NULL, summary_at = NULL, data = json_remove(data, '$.summary')
WHERE id IN (SELECT entity_id FROM temp.purged_mentions) AND summary IS NOT NULL;

-- name: purge_snapshot
-- Begins the read snapshot the leftovers search holds while it reads the file.
SELECT count(*) FROM meta;

-- name: purge_checkpoint
-- The WAL keeps earlier versions of the pages the forget changed: copy the current ones into
-- the file and empty the WAL. Returns (busy, frames in the log, frames checkpointed).
PRAGMA wal_checkpoint(TRUNCATE);

-- name: purge_rewrite_fts
-- After fts_optimize, each full-text index's two tables are written anew: their rows are
-- copied aside, the tables emptied, and the rows put back in order. Emptying a table frees
-- every page it had, which secure_delete zeroes, and rows added in order fill fresh pages, so
-- no page of the index keeps a copy of a term it no longer holds (see purge.py). The index
-- holds the same rows before and after: 1.6 MB for 10K messages.
INSERT INTO temp.purged_fts_data SELECT id, block FROM main.messages_fts_data;
DELETE FROM main.messages_fts_data;
INSERT INTO main.messages_fts_data (id, block) SELECT id, block FROM temp.purged_fts_data ORDER BY id;
DELETE FROM temp.purged_fts_data;
INSERT INTO temp.purged_fts_idx SELECT segid, term, pgno FROM main.messages_fts_idx;
DELETE FROM main.messages_fts_idx;
INSERT INTO main.messages_fts_idx (segid, term, pgno)
SELECT segid, term, pgno FROM temp.purged_fts_idx ORDER BY segid, term;
DELETE FROM temp.purged_fts_idx;
INSERT INTO temp.purged_fts_data SELECT id, block FROM main.messages_fts_intl_data;
DELETE FROM main.messages_fts_intl_data;
INSERT INTO main.messages_fts_intl_data (id, block) SELECT id, block FROM temp.purged_fts_data ORDER BY id;
DELETE FROM temp.purged_fts_data;
INSERT INTO temp.purged_fts_idx SELECT segid, term, pgno FROM main.messages_fts_intl_idx;
DELETE FROM main.messages_fts_intl_idx;
INSERT INTO main.messages_fts_intl_idx (segid, term, pgno)
SELECT segid, term, pgno FROM temp.purged_fts_idx ORDER BY segid, term;
DELETE FROM temp.purged_fts_idx;
INSERT INTO temp.purged_fts_data SELECT id, block FROM main.units_fts_data;
DELETE FROM main.units_fts_data;
INSERT INTO main.units_fts_data (id, block) SELECT id, block FROM temp.purged_fts_data ORDER BY id;
DELETE FROM temp.purged_fts_data;
INSERT INTO temp.purged_fts_idx SELECT segid, term, pgno FROM main.units_fts_idx;
DELETE FROM main.units_fts_idx;
INSERT INTO main.units_fts_idx (segid, term, pgno)
SELECT segid, term, pgno FROM temp.purged_fts_idx ORDER BY segid, term;
DELETE FROM temp.purged_fts_idx;

-- name: fts_optimize
-- Merge each full-text index into one segment (what `localmem vacuum` does; see purge.py).
INSERT INTO messages_fts (messages_fts) VALUES ('optimize');
INSERT INTO messages_fts_intl (messages_fts_intl) VALUES ('optimize');
INSERT INTO units_fts (units_fts) VALUES ('optimize');
