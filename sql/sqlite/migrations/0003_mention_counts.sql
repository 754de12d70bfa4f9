-- Each entity's number of mentions, kept by triggers. Graph spreading and the entity channel
-- weight a shared entity by 1/sqrt(mentions); counting them at query time scanned every
-- mention of the namespace (about half the graph channel's time on a 1M-unit store).
ALTER TABLE entities ADD COLUMN mention_count INTEGER NOT NULL DEFAULT 0;

UPDATE entities SET mention_count = (SELECT count(*) FROM mentions WHERE mentions.entity_id = entities.id);

-- INSERT OR IGNORE of an existing mention fires nothing; cascaded deletes fire the delete trigger.
CREATE TRIGGER mentions_count_insert AFTER INSERT ON mentions BEGIN
    UPDATE entities SET mention_count = mention_count + 1 WHERE id = new.entity_id;
END;

CREATE TRIGGER mentions_count_delete AFTER DELETE ON mentions BEGIN
    UPDATE entities SET mention_count = mention_count - 1 WHERE id = old.entity_id;
END;
