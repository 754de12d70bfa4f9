"""The tests that do not run on a PostgreSQL store (pytest --stores=postgres), each with why.

"cannot hold": the test reads what only an SQLite file has (its bytes, pages, pragmas, query
plans, its own SQL) or a promise PostgreSQL keeps differently (docs/postgres.md says how).
"not yet": the feature is meant to work on PostgreSQL and does not yet.
Keys are test ids without their parameters (``path::test`` or ``path::Class::test``), or a
whole file (``path``)."""

from __future__ import annotations

CANNOT = "cannot hold on PostgreSQL: "
NOT_YET = "not yet on PostgreSQL: "

NOT_ON_POSTGRES: dict[str, str] = {
    "tests/importers/test_fuzz.py::test_an_export_imports_back_exactly": CANNOT
    + "draws text with NUL characters, which PostgreSQL text cannot hold (refused in one line)",
    "tests/importers/test_fuzz.py::test_an_edited_export_is_refused_with_the_store_unchanged_or_imported_as_it_reads": CANNOT
    + "its exports are made by adding drawn text, NUL characters included, which PostgreSQL text cannot hold (refused in one line)",
    "tests/retrieval/test_vector_index.py": CANNOT
    + "the binary codes and their cache are the SQLite store's (PostgreSQL uses HNSW)",
    "tests/store/test_concurrency.py": CANNOT
    + "SQLite's single-writer lock and its busy timeout (tests/store/test_postgres.py runs 8 writers and 8 readers)",
    "tests/store/test_foreign_and_damaged.py": CANNOT + "reads and damages the SQLite file itself",
    "tests/store/test_forget_races.py": CANNOT + "stops a forget between SQLite's commit and its file scrub",
    "tests/store/test_forget.py::test_vacuum_switches_an_old_store_to_incremental_and_reclaims_space": CANNOT
    + "an SQLite file made before auto_vacuum, and its free pages (on PostgreSQL, localmem vacuum's rewrite is "
    "tests/store/test_postgres.py::test_vacuum_removes_what_a_delete_left_in_the_pages)",
    "tests/store/test_forget.py::test_a_forget_in_an_old_store_writes_the_file_anew": CANNOT
    + "an SQLite file made before auto_vacuum, and its free pages (every forget on PostgreSQL rewrites the "
    "tables it touched: tests/store/test_forget_targets.py reads their pages)",
    "tests/store/test_forget_targets.py::test_the_shared_add_source_of_older_stores_is_split_by_conversation": CANNOT
    + "SQLite migration 0010 of a store made by an older localmem (PostgreSQL stores began after it)",
    "tests/store/test_leftovers.py": CANNOT
    + "reads the SQLite file's free pages for deleted text (the Postgres test reads the table files instead: tests/store/test_postgres.py)",
    "tests/store/test_permissions.py": CANNOT + "checks the store file's and its WAL's permissions",
    "tests/cli/test_bad_input.py::test_api_directory_as_db": CANNOT + "the store path is a file",
    "tests/cli/test_bad_input.py::test_api_locked_store": CANNOT + "SQLite's write lock",
    "tests/cli/test_bad_input.py::test_api_locked_while_opening": CANNOT + "SQLite's write lock",
    "tests/cli/test_bad_input.py::test_api_not_sqlite": CANNOT + "the store path is a file",
    "tests/cli/test_bad_input.py::test_api_schema_too_new": CANNOT + "sets SQLite's user_version",
    "tests/cli/test_bad_input.py::test_api_someone_elses_sqlite_file": CANNOT + "the store path is a file",
    "tests/cli/test_bad_input.py::test_cli_locked_store": CANNOT + "SQLite's write lock",
    "tests/cli/test_bad_input.py::test_cli_not_sqlite": CANNOT + "the store path is a file",
    "tests/cli/test_bad_input.py::test_cli_schema_too_new": CANNOT + "sets SQLite's user_version",
    "tests/cli/test_cli.py::test_doctor": CANNOT + "reads SQLite's integrity check in doctor's report",
    "tests/cli/test_cli_conventions.py::test_a_busy_store_is_a_json_error_with_its_own_exit_code": CANNOT
    + "SQLite's write lock",
    "tests/cli/test_reads.py::test_read_commands_leave_the_home_and_the_store_byte_for_byte_unchanged": CANNOT
    + "compares the store file's bytes",
    "tests/importers/test_bad_import_data.py::test_nul_characters_in_a_jsonl_message_are_removed_and_counted": CANNOT
    + "reads the stored NUL handling of the SQLite file",
    "tests/importers/test_input_edges.py::test_a_full_disk_is_one_line_with_its_own_exit_code": CANNOT
    + "fills the SQLite file's disk",
    "tests/importers/test_input_edges.py::test_a_full_disk_stops_an_ingest_cleanly_and_a_rerun_completes_it": CANNOT
    + "fills the SQLite file's disk",
    "tests/pipeline/test_parts.py::test_a_store_bound_before_parts_gets_their_tables_and_reembed_cuts_them": CANNOT
    + "makes an SQLite store as bound before its migration 0008 (drops its triggers and code tables); a PostgreSQL store has parts from its first schema",
    "tests/pipeline/test_pipeline.py::test_sigkill_during_extraction_then_rerun_finishes_without_duplicates": CANNOT
    + "its killed subprocess writes a store file, which the test reads with SQLite (and its integrity check)",
    "tests/pipeline/test_worker.py::test_add_waits_for_another_writer_instead_of_failing": CANNOT
    + "holds SQLite's write lock through its own SQLite connection (PostgreSQL has many writers: tests/store/test_postgres.py)",
    "tests/store/test_ids_never_reused.py::test_a_store_made_before_the_fix_keeps_every_id_and_stops_reusing": CANNOT
    + "an SQLite file made by an older localmem (migration 0010, before ids were never reused); PostgreSQL stores began after it",
    "tests/store/test_store.py::test_sigkill_during_ingest_then_rerun": CANNOT
    + "its killed subprocess writes a store file, which the test reads with SQLite (and its integrity checks)",
    "tests/store/test_store.py::test_ddl_queries_run_on_a_scratch_store": CANNOT + "runs the SQLite DDL queries",
    "tests/store/test_store.py::test_existing_message_lookup_uses_the_unique_index": CANNOT
    + "reads SQLite's query plan",
    "tests/store/test_store.py::test_foreign_keys_are_enforced": CANNOT + "inserts with SQLite's SQL",
    "tests/store/test_store.py::test_fresh_store_schema": CANNOT + "reads SQLite's schema and pragmas",
    "tests/store/test_store.py::test_named_query_explains": CANNOT + "EXPLAINs the SQLite text of every named query",
    "tests/store/test_store.py::test_reopen_applies_nothing_and_keeps_data": CANNOT
    + "applies the SQLite migrations by hand",
    "tests/store/test_store.py::test_roundtrip_keeps_awkward_text": CANNOT
    + "stores a NUL character, which PostgreSQL text cannot hold (refused in one line)",
}


def reason_not_on_postgres(nodeid: str) -> str | None:
    """Why the test ``nodeid`` does not run on PostgreSQL, or None."""
    bare = nodeid.split("[", 1)[0]
    return NOT_ON_POSTGRES.get(bare) or NOT_ON_POSTGRES.get(bare.split("::", 1)[0])
