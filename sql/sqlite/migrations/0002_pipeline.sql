-- The memory-building pipeline's bookkeeping.
-- Every LLM call is logged with its stage, prompt version, tokens and time; a call whose
-- output stayed invalid after the repair retry keeps its raw text for inspection.
CREATE TABLE llm_calls (
    id                INTEGER PRIMARY KEY,
    ns                TEXT NOT NULL,
    episode_id        INTEGER REFERENCES units(id) ON DELETE CASCADE,
    stage             TEXT NOT NULL,
    prompt_version    TEXT NOT NULL,
    model_id          TEXT NOT NULL,
    calls             INTEGER NOT NULL DEFAULT 1,
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    seconds           REAL NOT NULL DEFAULT 0,
    ok                INTEGER NOT NULL,
    error             TEXT,
    raw               TEXT,
    created_at        TEXT NOT NULL
);
CREATE INDEX llm_calls_by_ns ON llm_calls (ns, stage);
CREATE INDEX llm_calls_by_episode ON llm_calls (episode_id);

-- Episodes are found by their messages (unit_sources) and by stage.
CREATE INDEX units_by_stage ON units (ns, kind, stage);
