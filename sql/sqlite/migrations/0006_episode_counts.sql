-- Each entity's number of episodes, kept by triggers. Promotion asks, for every entity a
-- query names, whether it is in fewer than half of the episodes; counting at query time read
-- every mention of a hub entity (a chat's speaker: ~90 ms on a 1M-unit store). An entity's
-- mention of an episode has the role 'main' (it speaks) or 'supporting' (it is mentioned);
-- a unit's has another role, so the count needs no look at the unit (which a cascaded
-- delete has already removed when the trigger runs).
ALTER TABLE entities ADD COLUMN episode_count INTEGER NOT NULL DEFAULT 0;

UPDATE entities SET episode_count = (
    SELECT count(DISTINCT unit_id) FROM mentions
    WHERE entity_id = entities.id AND role IN ('main', 'supporting'));

CREATE TRIGGER mentions_episode_insert AFTER INSERT ON mentions
WHEN new.role IN ('main', 'supporting')
 AND NOT EXISTS (SELECT 1 FROM mentions WHERE unit_id = new.unit_id AND entity_id = new.entity_id
                 AND role IN ('main', 'supporting') AND role <> new.role)
BEGIN
    UPDATE entities SET episode_count = episode_count + 1 WHERE id = new.entity_id;
END;

CREATE TRIGGER mentions_episode_delete AFTER DELETE ON mentions
WHEN old.role IN ('main', 'supporting')
 AND NOT EXISTS (SELECT 1 FROM mentions WHERE unit_id = old.unit_id AND entity_id = old.entity_id
                 AND role IN ('main', 'supporting'))
BEGIN
    UPDATE entities SET episode_count = episode_count - 1 WHERE id = old.entity_id;
END;
