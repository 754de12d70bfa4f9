-- Consolidation (stage 6) bookkeeping: which episodes have been through predict–calibrate,
-- how, and what it did. Knowledge units themselves are ordinary units (kind 'knowledge'),
-- their person a 'subject' mention tagged with the aspect; changes are 'supersedes' links.
CREATE TABLE consolidations (
    episode_id     INTEGER PRIMARY KEY REFERENCES units(id) ON DELETE CASCADE,
    mode           TEXT NOT NULL CHECK (mode IN ('fast', 'full')),
    prompt_version TEXT NOT NULL,
    added          INTEGER NOT NULL DEFAULT 0,
    reinforced     INTEGER NOT NULL DEFAULT 0,
    superseded     INTEGER NOT NULL DEFAULT 0,
    created_at     TEXT NOT NULL
);
