-- The application id ("lmem") tells a localmem store from any other SQLite file before
-- anything is written to it (store/db.py). Stores made before it are recognised by their meta
-- table, once, and get it here.
PRAGMA application_id = 1819108717;
