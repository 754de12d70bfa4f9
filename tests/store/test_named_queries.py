"""Every named query exists for both engines and runs on each (sql/ per engine, store/queries.py).

The run test runs each engine's own text (``q(name)`` on the SQLite store's connection, ``pg_query(name)``
on the PostgreSQL server's) on a freshly migrated store with its
embedder bound: on SQLite by default, on PostgreSQL in the ``--stores=postgres`` tier (the
throwaway server of tests/conftest.py). Each query runs in a transaction rolled back afterwards,
with parameters bound from sample values chosen by the parameter's name, so a typo, a missing
function or a parameter of the wrong type fails here, not in a user's store.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any, cast

import pytest

from localmem.errors import LocalmemError
from localmem.store import queries
from localmem.store.queries import ENGINES, engine_queries, is_shared, migrations, q, query_names
from tests.fakes import HashEmbedder
from tests.helpers import open_memory

REPO = Path(__file__).resolve().parents[2]
NOW = "2024-05-01T10:00:00+00:00"
DIM = 64  # HashEmbedder's

# A sample value for each parameter name, of the type the code binds (ids of the store's first
# rows; id lists as the JSON arrays that json_each / localmem_ids read).
SAMPLES: dict[str, object] = {
    "added": 0,
    "after": 0,
    "alias": "Ana",
    "among": "[1, 2]",
    "aspect": "likes",
    "at": NOW,
    "attachments": None,
    "before": "2030-01-01T00:00:00+00:00",
    "budget": 100,
    "calls": 1,
    "completion_tokens": 1,
    "content_hash": "c0ffee",
    "context": "[1]",
    "conversation": "c",
    "created_at": NOW,
    "data": "{}",
    "days": 7,
    "decay": 0.5,
    "depth": 2,
    "dst_id": 2,
    "embedding": bytes(4 * DIM),
    "end": NOW,
    "entities": "[1]",
    "entity": "Ana",
    "entity_id": 1,
    "episode_id": 1,
    "error": None,
    "external_id": "x-1",
    "finished_at": NOW,
    "folded": "ana",
    "from": "2020-01-01",
    "high": 10,
    "id": 1,
    "ids": "[1, 2]",
    "k": 10,
    "key": "sample_key",
    "keys": '[["c", "x-1"]]',
    "kind": "fact",  # a unit's (a reembed's staging row: SAMPLES_BY_QUERY)
    "lang": "en",
    "limit": 10,
    "match": '"bind" OR "embedder"',
    "max": 10,
    "max_rows": 100,
    "mentioned_at": NOW,
    "message_id": 1,
    "messages": "[1]",
    "meta": None,
    "min_activation": 0.1,
    "min_weight": 0.1,
    "mode": "fast",
    "model_id": "sample-model",
    "n": 5,
    "ns": "test",
    "name": "Ana",
    "names": '["ana"]',
    "norm": "ana",
    "norm_alias": "ana",
    "norm_name": "ana",
    "object": None,
    "occurred_end": None,
    "occurred_start": NOW,
    "offset": 0,
    "ok": 1,
    "order": "asc",
    "origin": "said",
    "per_entity": 5,
    "period": "week",
    "predicate": None,
    "prefix": "An",
    "prompt_tokens": 1,
    "prompt_version": "v1",
    "questions": 1,
    "raw": None,
    "reinforced": 0,
    "replaces": None,
    "role": "user",
    "seconds": 0.5,
    "seeds": "[[1, 1.0]]",
    "sent_at": NOW,
    "seq": 0,
    "session": "s",
    "sha256": "c0ffee",
    "since": None,
    "source_id": 1,
    "sources": "[1]",
    "speaker": "Ana",
    "src_id": 1,
    "stage": "segmented",
    "start": "2020-01-01T00:00:00+00:00",
    "status": "loaded",
    "subject": None,
    "summary": "a summary",
    "summary_at": NOW,
    "superseded": 0,
    "tag": None,
    "terms": '["bind"]',
    "text": "a sample text",
    "time_precision": "day",
    "title": "a title",
    "to": "2030-01-01",
    "type": "semantic",
    "unit_id": 1,
    "units": "[1]",
    "until": None,
    "uri": "sample://1",
    "valid_at": None,
    "value": "v",
    "weight": 1.0,
    "weights": '{"1": 1.0}',
    "words": '["ana"]',
}
# Where one name means another thing in one query: (query, parameter) -> value.
SAMPLES_BY_QUERY: dict[tuple[str, str], object] = {
    ("part_insert", "context"): 0,  # whether the part is context (0/1), not a list of ids
    ("part_insert", "start"): 0,  # a part's character offsets
    ("part_insert", "end"): 5,
    ("reembed_stage", "kind"): "m",  # m(essage) or u(nit)
    # vectors for rows that have none (the seeded ones below), as an add or a restore writes them
    ("vec_message_insert", "id"): 3,
    ("vec_unit_insert", "id"): 2,
    ("mention_insert", "role"): "subject",  # a mention's role, not a message's
    ("owner_name_add", "origin"): "set",
    ("conversation_window", "from"): 0,  # places (seq) in a conversation, not dates
    ("conversation_window", "to"): 10,
}
# Rows of a restore (:row, a record of an export with its ids plain), per import query.
ROWS: dict[str, dict[str, object]] = {
    "import_source": {
        "ns": "test",
        "kind": "jsonl",
        "uri": "import://1",
        "sha256": "5ca1ab1e",
        "status": "loaded",
        "created_at": NOW,
        "finished_at": NOW,
    },
    "import_message": {
        "ns": "test",
        "conversation": "c",
        "session": "s",
        "seq": 9,
        "external_id": "x-import",
        "speaker": "Bo",
        "role": "user",
        "text": "an imported message",
        "sent_at": NOW,
        "attachments": None,
        "raw": None,
        "meta": None,
    },
    "import_unit": {
        "ns": "test",
        "kind": "fact",
        "conversation": "c",
        "title": None,
        "text": "an imported fact",
        "subject": "Bo",
        "predicate": "likes",
        "object": "tea",
        "aspect": None,
        "occurred_start": NOW,
        "occurred_end": None,
        "time_precision": "day",
        "mentioned_at": NOW,
        "stage": None,
        "prompt_version": "v1",
        "model_id": "m",
        "content_hash": "feed",
        "data": None,
        "created_at": NOW,
    },
    "import_entity": {
        "ns": "test",
        "name": "Bo",
        "norm_name": "bo",
        "entity_type": "person",
        "summary": None,
        "summary_at": None,
        "data": None,
        "created_at": NOW,
    },
    "import_alias": {"alias": "Bobby", "norm_alias": "bobby"},
    "import_mention": {"role": "object", "tag": None},
    "import_link": {"link_type": "temporal", "weight": 0.5, "valid_at": None, "created_at": NOW},
    "import_owner": {"ns": "test", "name": "Ana", "origin": "set"},
    "import_part": {"ns": "test", "start": 0, "end": 3, "context": 0},
    "import_message_vector": {"ns": "test", "embedding": bytes(4 * DIM).hex()},
    "import_unit_vector": {"ns": "test", "kind": "fact", "embedding": bytes(4 * DIM).hex()},
    "import_part_vector": {"ns": "test", "embedding": bytes(4 * DIM).hex()},
}
for _query, _row in ROWS.items():
    SAMPLES_BY_QUERY[(_query, "row")] = json.dumps(_row)
for _query in ("import_source", "import_message", "import_unit", "import_entity", "import_part"):
    SAMPLES_BY_QUERY[(_query, "id")] = None  # a new id, as a restore into a store that has rows
SAMPLES_BY_QUERY[("import_message_vector", "id")] = 3
SAMPLES_BY_QUERY[("import_unit_vector", "id")] = 2
# Rows made (and kept) before the queries run, through the store's own queries, so that every
# id a sample names is a row: entity 1, units 1 (an episode) and 2 (a fact) with their mention,
# source and link, and a third message with a part, neither with a vector.
SEED: list[tuple[str, dict[str, object]]] = [
    ("entity_insert", {}),
    ("episode_insert", {}),
    ("unit_insert", {"episode_id": 1}),
    ("alias_insert", {}),
    ("mention_insert", {"unit_id": 2, "role": "subject"}),
    ("unit_source_insert", {"unit_id": 2}),
    ("link_insert", {"src_id": 1, "dst_id": 2}),
    ("message_insert", {"external_id": "x-3", "seq": 3, "replaces": None, "lang": "en"}),
    ("part_insert", {"message_id": 3}),
]
# What a query needs made first, in its transaction: the temporary tables a forget's purge
# watches with, the staging table a reembed fills.
SETUP = {"purge_": "purge_watch", "reembed_": "reembed_staging_create"}
# A store made now has what this SQLite query adds to an older one: made older in its transaction
# (as tests/retrieval/test_vector_index.py does).
SQLITE_SETUP = {
    "codes_add_int8": ["ALTER TABLE vec_unit_codes DROP COLUMN q8", "ALTER TABLE vec_message_codes DROP COLUMN q8"],
}
# Statements that SQLite refuses inside a transaction (a checkpoint of the WAL): run outside one,
# as purge runs it after the forget's transaction. They change no rows.
OUTSIDE_TRANSACTION = {"purge_checkpoint"}
# Queries a run on a store cannot show, each with the reason (the list is checked: a name here
# that is no query fails).
NOT_RUN: dict[str, dict[str, str]] = {
    "sqlite": {},
    "postgres": {
        name: "SQLite's forget purge and compaction (store/purge.py); the PostgreSQL text refuses"
        for name in (
            *("purge_watch", "purge_watch_codes", "purge_watch_part_codes", "purge_unwatch"),
            *("purge_reindex_followers", "purge_scrub_calls", "purge_stale_summaries", "purge_snapshot"),
            *("purge_checkpoint", "purge_rewrite_fts", "fts_optimize"),
        )
    },
}
# Data definition that takes the vectors' dimension as text ("{dim}": DDL binds no parameters).
DIMENSIONED = {"vec_create", "parts_vec_create"}

_PARAM = re.compile(r"(?<![:\w]):([a-z_][a-z0-9_]*)")


def parameters(text: str) -> list[str]:
    """The ``:name`` parameters of a query's text (outside its comment lines)."""
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
    body = re.sub(r"'(?:[^']|'')*'", "''", body)  # nor in string literals
    return sorted(set(_PARAM.findall(body)))


def sample(name: str, param: str) -> object:
    if (name, param) in SAMPLES_BY_QUERY:
        return SAMPLES_BY_QUERY[(name, param)]
    assert param in SAMPLES, f"query {name}: no sample value for :{param} (add one to SAMPLES)"
    return SAMPLES[param]


# -- every name on every engine -------------------------------------------------------------------


def test_every_named_query_has_a_text_for_each_engine():
    from localmem.store import pgsql

    names = set(query_names())
    assert names and all(set(engine_queries(e)) == names for e in ENGINES)
    for name in names:
        assert q(name).strip() and pgsql.pg_query(name).strip(), name
        if is_shared(name):
            assert engine_queries("sqlite")[name] == engine_queries("postgres")[name]


def test_a_text_the_same_on_both_engines_is_written_once():
    # Two copies of one text drift apart when one is edited; the same text belongs in sql/shared.
    sqlite, postgres = engine_queries("sqlite"), engine_queries("postgres")
    twice = [n for n in query_names() if not is_shared(n) and sqlite[n] == postgres[n]]
    assert twice == [], f"the same text in sql/sqlite and sql/postgres: move to sql/shared: {twice}"


def test_nothing_is_rewritten_at_run_time():
    """The PostgreSQL text of a query is its file's, its placeholders aside."""
    from localmem.store import pgsql

    for name in query_names():
        text = engine_queries("postgres")[name]
        body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
        assert re.sub(r"%\((\w+)\)s", r":\1", pgsql.pg_query(name)).replace("%%", "%") == body, name
    source = (REPO / "localmem" / "store" / "pg.py").read_text(encoding="utf-8")
    assert "_REWRITES" not in source and "_dialect" not in source


def test_sql_folders_are_laid_out_per_engine():
    root = queries.sql_dir()
    assert sorted(p.name for p in root.iterdir() if p.is_dir()) == ["postgres", "shared", "sqlite"]
    rooms = {e: {p.name for p in (root / e / "queries").glob("*.sql")} for e in ENGINES}
    assert rooms["sqlite"] == rooms["postgres"]  # the same room names; no grab bag


# -- the loader's refusals, with file and line ------------------------------------------------------


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "sql"
    for engine in ("shared", *ENGINES):
        (root / engine / "queries").mkdir(parents=True)
    for rel, text in files.items():
        (root / rel).write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def own_sql(monkeypatch):
    """Point the loader at a folder of the test's own (its caches emptied before and after)."""

    def use(root: Path) -> None:
        monkeypatch.setattr(queries, "sql_dir", lambda: root)
        _clear()

    def _clear() -> None:
        queries._layout.cache_clear()
        queries.engine_queries.cache_clear()

    yield use
    monkeypatch.undo()
    _clear()


def test_a_name_shared_and_engine_specific_at_once_is_refused(tmp_path, own_sql):
    own_sql(
        _tree(
            tmp_path,
            {
                "shared/queries/a.sql": "-- name: one\nSELECT 1;\n",
                "sqlite/queries/a.sql": "-- A comment line.\n\n-- name: one\nSELECT 2;\n",
                "postgres/queries/a.sql": "-- name: one\nSELECT 2;\n",
            },
        )
    )
    with pytest.raises(
        LocalmemError, match=r"sqlite/queries/a\.sql:3: query 'one' is shared \(.*shared/queries/a\.sql:1\)"
    ):
        q("one")


def test_a_name_for_one_engine_only_is_refused(tmp_path, own_sql):
    own_sql(
        _tree(
            tmp_path,
            {
                "sqlite/queries/a.sql": "-- name: one\nSELECT 1;\n\n-- name: two\nSELECT 2;\n",
                "postgres/queries/a.sql": "-- name: one\nSELECT 1;\n",
            },
        )
    )
    with pytest.raises(
        LocalmemError, match=r"sqlite/queries/a\.sql:4: query 'two' has a sqlite text but none for postgres"
    ):
        q("one")


def test_an_engines_text_in_another_room_is_refused(tmp_path, own_sql):
    own_sql(
        _tree(
            tmp_path,
            {
                "sqlite/queries/a.sql": "-- name: one\nSELECT 1;\n",
                "postgres/queries/b.sql": "-- name: one\nSELECT 1;\n",
            },
        )
    )
    with pytest.raises(LocalmemError, match=r"query 'one' is in postgres's b\.sql"):
        q("one")


def test_a_name_defined_twice_is_refused(tmp_path, own_sql):
    own_sql(
        _tree(
            tmp_path,
            {
                "shared/queries/a.sql": "-- name: one\nSELECT 1;\n",
                "shared/queries/b.sql": "\n-- name: one\nSELECT 2;\n",
            },
        )
    )
    with pytest.raises(LocalmemError, match=r"b\.sql:2: query 'one' defined twice \(first at .*a\.sql:1\)"):
        q("one")


def test_a_query_file_in_the_old_layout_is_refused(tmp_path, own_sql):
    """A branch written before sql/ had engine folders adds sql/queries/x.sql: named, not lost."""
    root = _tree(tmp_path, {"shared/queries/a.sql": "-- name: one\nSELECT 1;\n"})
    (root / "queries").mkdir()
    (root / "queries" / "x.sql").write_text("-- name: two\nSELECT 2;\n")
    own_sql(root)
    with pytest.raises(LocalmemError, match=r"sql/queries is the old layout"):
        q("one")


def test_a_blocks_text_ends_at_its_last_sql_line(tmp_path, own_sql):
    """Comment lines before a ``-- name:`` line are the next query's, not the text of the one above."""
    own_sql(
        _tree(
            tmp_path,
            {"shared/queries/a.sql": "-- name: one\n-- One.\nSELECT 1;\n\n-- About two.\n-- name: two\nSELECT 2;\n"},
        )
    )
    assert q("one") == "-- One.\nSELECT 1;"
    assert q("two") == "SELECT 2;"


# -- the schema version each engine reports, derived ------------------------------------------------


def level_problems() -> list[str]:
    """What is wrong with the PostgreSQL migrations' SQLite levels (none when level)."""
    from localmem.store import pgsql

    levels = pgsql.sqlite_levels()
    problems = [f"PostgreSQL migration {v:04d} names no SQLite level" for v, level in levels if level is None]
    named = [level for _, level in levels if level is not None]
    if named != sorted(named):
        problems.append(f"the levels go back: {named}")
    latest = len(migrations())
    if not named or named[-1] != latest:
        problems.append(
            f"SQLite is at migration {latest:04d}, the PostgreSQL migrations bring the store to "
            f"{named[-1] if named else 0:04d}: add sql/postgres/migrations/NNNN_*.sql with the line "
            f"'-- Level with SQLite migration {latest:04d}.'"
        )
    return problems


def test_postgres_migrations_keep_the_store_level_with_sqlite():
    from localmem.store import pgsql

    assert level_problems() == []
    assert pgsql.SQLITE_SCHEMA_MIRRORED == len(migrations())


def test_a_sqlite_migration_without_its_postgres_counterpart_fails(tmp_path, own_sql):
    root = tmp_path / "sql"
    shutil.copytree(queries.sql_dir(), root)
    latest = len(migrations())
    (root / "sqlite" / "migrations" / f"{latest + 1:04d}_new_table.sql").write_text("CREATE TABLE t (x);\n")
    own_sql(root)
    assert level_problems() == [
        f"SQLite is at migration {latest + 1:04d}, the PostgreSQL migrations bring the store to {latest:04d}: "
        f"add sql/postgres/migrations/NNNN_*.sql with the line '-- Level with SQLite migration {latest + 1:04d}.'"
    ]
    pg_count = len(list((root / "postgres" / "migrations").glob("*.sql")))
    (root / "postgres" / "migrations" / f"{pg_count + 1:04d}_new_table.sql").write_text(
        f"-- Level with SQLite migration {latest + 1:04d}.\nCREATE TABLE t (x TEXT);\n"
    )
    assert level_problems() == []


# -- every query runs on the store's engine ------------------------------------------------------


class _Rollback(Exception):
    """Ends a query's transaction without keeping what it did."""


def run_sqlite(conn, name: str, given: dict[str, object] | None = None, keep: bool = False) -> list:
    """``name``'s SQLite text on the store's apsw connection, in a transaction rolled back
    (committed if ``keep``)."""
    text = q(name)
    params = {p: sample(name, p) for p in parameters(text)} | (given or {})
    if name in OUTSIDE_TRANSACTION:
        return conn.execute(text, params).fetchall()
    rows: list = []
    try:
        with conn:
            for prefix, setup in SETUP.items():
                if name.startswith(prefix):
                    conn.execute(q(setup))
            for statement in SQLITE_SETUP.get(name, []):
                conn.execute(statement)
            rows = conn.execute(text.replace("{dim}", str(DIM)) if name in DIMENSIONED else text, params).fetchall()
            if not keep:
                raise _Rollback
    except _Rollback:
        pass
    return rows


def run_postgres(raw, name: str, given: dict[str, object] | None = None, keep: bool = False) -> list:
    """``name``'s PostgreSQL text on the server (psycopg, the store's connection), in a
    transaction rolled back (committed if ``keep``)."""
    from localmem.store import pgsql

    params = {p: sample(name, p) for p in parameters(engine_queries("postgres")[name])} | (given or {})
    if isinstance(params.get("embedding"), bytes):  # pgvector's text form, as the store binds a vector
        params["embedding"] = "[" + ",".join(["0.125"] * DIM) + "]"
    text = pgsql.pg_query(name)
    try:
        with raw.transaction():
            for prefix, setup in SETUP.items():
                if name.startswith(prefix):
                    raw.execute(pgsql.pg_query(setup))
            cursor = raw.execute(text.replace("{dim}", str(DIM)) if name in DIMENSIONED else text, params or None)
            rows: list = []
            while True:  # every statement's rows
                if cursor.description is not None:
                    rows += cursor.fetchall()
                if not cursor.nextset():
                    break
            if not keep:
                raise _Rollback
    except _Rollback:
        pass
    return rows


def test_every_named_query_runs_on_the_store(tmp_path, store_kind):
    """On SQLite by default; on PostgreSQL in the --stores=postgres tier."""
    assert not {n for names in NOT_RUN.values() for n in names} - set(query_names()), "NOT_RUN names no query"
    with open_memory(tmp_path / "q.db", namespace="test", embedder=HashEmbedder()) as mem:
        mem.add("Ana", "bind the embedder")  # the vector tables exist: every query has its tables
        mem.add("Ana", "a second message, so that ids 1 and 2 are rows")

        def run(name: str, given: dict[str, object] | None = None, keep: bool = False) -> list:
            if store_kind == "postgres":
                return run_postgres(cast(Any, mem.conn).raw, name, given, keep)
            return run_sqlite(mem.conn, name, given, keep)

        made = {name: run(name, given, keep=True) for name, given in SEED}
        part = {"id": made["part_insert"][0][0]}  # the seeded part, which has no vector
        given_at_run = {"vec_part_insert": part, "import_part_vector": part}
        engine = "postgres" if store_kind == "postgres" else "sqlite"
        failed: dict[str, str] = {}
        ran = []
        for name in query_names():
            if name in NOT_RUN[engine]:
                with pytest.raises(Exception, match="SQLite's"):  # refuses, as its reason says
                    run(name)
                continue
            try:
                run(name, given_at_run.get(name))
                ran.append(name)
            except Exception as exc:  # every failure listed at once, with its query's name
                failed[name] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        assert failed == {}, "\n".join(f"{n}: {e}" for n, e in failed.items())
        assert len(ran) > 200
        assert mem.stats().messages == 3  # every query's transaction was rolled back


# -- each engine's own statements (sql/<engine>/own: its pools', maintenance's and roles' work) ------

# A sample for each parameter of the PostgreSQL store's own statements, by name.
OWN_SAMPLES: dict[str, object] = {
    "t": ["meta", "messages"],  # a text[] of table names
    "r": "lm_own_statement_role",  # a role made in the test's transaction
    "s": "public",  # a schema; for wal_files_left a WAL file name (compared as text)
    "ns": "test",
    "ids": "[1, 2]",
    "messages": "[1]",
    "units": "[1]",
    "episodes": "[1]",
    "entities": "[1]",
    "version": "999",
    "key": 1,
}
# Statements that PostgreSQL runs outside a transaction block only: run on their own, on the
# throwaway server alone (they change the server, not the store).
OWN_OUTSIDE_TRANSACTIONS = {"vacuum_statistics", "server_wal_recycle_off"}


def test_the_engines_own_statements_are_named_once_and_apart_from_the_query_set():
    for engine in ENGINES:
        own = queries.own_queries(engine)
        assert not set(own) & set(engine_queries(engine)), "an own statement shadows a named query"
        for name, text in own.items():
            assert text.rstrip().endswith(";") and text.strip(), name
    assert queries.own_queries("postgres"), "sql/postgres/own is read"
    with pytest.raises(LocalmemError):
        queries.own_query("postgres", "no_such_statement")


def test_every_own_statement_runs_on_its_engine(tmp_path, store_kind):
    """Each statement of sql/postgres/own runs on a migrated store with its embedder bound, in a
    transaction rolled back (a typo, a missing function, a parameter of the wrong type fails here)."""
    import os

    if store_kind != "postgres":
        assert queries.own_queries("sqlite") == {}  # SQLite's own statements are still inline (PRAGMAs)
        pytest.skip("the PostgreSQL store's own statements run in the --stores=postgres tier")
    from localmem.store import pgsql

    throwaway = os.environ.get("LM_TEST_POSTGRES_THROWAWAY") == "1" or not os.environ.get("LM_TEST_POSTGRES")
    with open_memory(tmp_path / "q.db", namespace="test", embedder=HashEmbedder()) as mem:
        mem.add("Ana", "bind the embedder")
        mem.add("Ana", "a second message, so that ids 1 and 2 are rows")
        raw = cast(Any, mem.conn).raw
        failed: dict[str, str] = {}
        ran = []
        for name in queries.own_queries("postgres"):
            text = pgsql.own(name)
            params = {p: OWN_SAMPLES[p] for p in re.findall(r"%\((\w+)\)s", text)}
            if name in OWN_OUTSIDE_TRANSACTIONS:
                if throwaway:
                    raw.execute(text)
                    ran.append(name)
                continue
            try:
                with raw.transaction():
                    raw.execute('CREATE ROLE "lm_own_statement_role"')
                    raw.execute(text, params or None)
                    ran.append(name)
                    raise _Rollback
            except _Rollback:
                pass
            except Exception as exc:  # noqa: BLE001 - every failure is listed at once
                failed[name] = str(exc).splitlines()[0]
        assert failed == {}
        assert set(ran) >= set(queries.own_queries("postgres")) - OWN_OUTSIDE_TRANSACTIONS


# Statements of store/pg*.py written in Python, each because it cannot be a bound parameter:
# SET takes none (lock_timeout from an int computed there); the names of a table, a role or a
# schema are identifiers (quoted by psycopg.sql); psql -c (pgserver) binds nothing. And the one
# regular expression that recognises the SQLite store's "SELECT ... WHERE false" placeholders.
RUN_TIME_FORMATS = {
    "SET lock_timeout = '{}ms'",
    "VACUUM (FULL, ANALYZE, VERBOSE) {}",
    "CREATE ROLE {} LOGIN",
    "ALTER ROLE {} PASSWORD {}",
    "REVOKE CREATE ON SCHEMA {} FROM {}",
    "SELECT 1 FROM pg_database WHERE datname = {}",
    "CREATE DATABASE {}",
    r"^\s*SELECT [^;]*\sWHERE false;?\s*$",
}
_SQL_WORDS = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|GRANT|REVOKE|SET|VACUUM|ANALYZE|CHECKPOINT)\b \S")


def _string_literals(path: Path) -> list[str]:
    """The string literals of ``path`` outside docstrings; an f-string with ``{}`` for each field."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    parts = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            found.append(
                "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)  # type: ignore[union-attr]
            )
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings | parts:
            found.append(node.value)
    return found


def test_store_pg_modules_hold_no_sql_beyond_the_run_time_formats():
    sql_in_python = {
        f"{path.name}: {text}"
        for path in sorted((REPO / "localmem" / "store").glob("pg*.py"))
        for text in _string_literals(path)
        if _SQL_WORDS.search(text) and text not in RUN_TIME_FORMATS
    }
    assert sql_in_python == PROSE


# Words for a person that name a statement (a hint to run by hand, a doctor's fact), never run.
PROSE = {
    "pg.py: the server's autovacuum; forget runs VACUUM FULL on what it touched",
    "pgroles.py: {} may create objects in schema {}, where the store's functions live; as that schema's owner "
    "run: REVOKE CREATE ON SCHEMA {} FROM PUBLIC, {}; then grant again",
}
