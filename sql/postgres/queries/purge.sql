-- SQLite's forget purge and file compaction (store/purge.py): temporary triggers that watch
-- what a forget deletes, FTS5's index rewrites, the WAL checkpoint. They have no PostgreSQL
-- meaning: that store forgets by deleting rows and rewriting the tables touched with VACUUM FULL
-- (store/pg.py, vacuum_tables). Each name here refuses, naming what to call, so that a caller
-- that reached one on PostgreSQL fails at once instead of doing nothing.

-- name: purge_watch
DO $$ BEGIN RAISE EXCEPTION USING
    MESSAGE = 'purge_watch is SQLite''s (store/purge.py): a PostgreSQL store forgets with pg.vacuum_tables'; END $$;

-- name: purge_watch_codes
DO $$ BEGIN RAISE EXCEPTION USING
    MESSAGE = 'purge_watch_codes is SQLite''s (store/purge.py): a PostgreSQL store forgets with pg.vacuum_tables'; END $$;

-- name: purge_watch_part_codes
DO $$ BEGIN RAISE EXCEPTION USING
    MESSAGE = 'purge_watch_part_codes is SQLite''s (store/purge.py): a PostgreSQL store forgets with pg.vacuum_tables'; END $$;

-- name: purge_unwatch
DO $$ BEGIN RAISE EXCEPTION USING
    MESSAGE = 'purge_unwatch is SQLite''s (store/purge.py): a PostgreSQL store forgets with pg.vacuum_tables'; END $$;

-- name: purge_reindex_followers
DO $$ BEGIN RAISE EXCEPTION USING
    MESSAGE = 'purge_reindex_followers is SQLite''s (store/purge.py): a PostgreSQL store forgets with pg.vacuum_tables'; END $$;

-- name: purge_scrub_calls
DO $$ BEGIN RAISE EXCEPTION USING
    MESSAGE = 'purge_scrub_calls is SQLite''s (store/purge.py): a PostgreSQL store forgets with pg.vacuum_tables'; END $$;

-- name: purge_stale_summaries
DO $$ BEGIN RAISE EXCEPTION USING
    MESSAGE = 'purge_stale_summaries is SQLite''s (store/purge.py): a PostgreSQL store forgets with pg.vacuum_tables'; END $$;

-- name: purge_snapshot
DO $$ BEGIN RAISE EXCEPTION USING
    MESSAGE = 'purge_snapshot is SQLite''s (store/purge.py): a PostgreSQL store forgets with pg.vacuum_tables'; END $$;

-- name: purge_checkpoint
DO $$ BEGIN RAISE EXCEPTION USING
    MESSAGE = 'purge_checkpoint is SQLite''s (store/purge.py): a PostgreSQL store forgets with pg.vacuum_tables'; END $$;

-- name: purge_rewrite_fts
DO $$ BEGIN RAISE EXCEPTION USING
    MESSAGE = 'purge_rewrite_fts is SQLite''s (store/purge.py): a PostgreSQL store forgets with pg.vacuum_tables'; END $$;

-- name: fts_optimize
DO $$ BEGIN RAISE EXCEPTION USING
    MESSAGE = 'fts_optimize is SQLite''s (store/purge.py): a PostgreSQL store forgets with pg.vacuum_tables'; END $$;
