"""The Store seam (store/engine.py): each engine's store is its own class implementing Store, chosen
once where a store opens; nothing above the two implementations asks which engine it has, holds
an apsw connection, or runs SQL text of its own."""

from __future__ import annotations

import re
import subprocess

import pytest

from localmem import Memory
from localmem.config import StoreURL, as_location, describe
from localmem.store.engine import Store
from localmem.store.sqlite import SqliteStore
from tests.fakes import HashEmbedder
from tests.helpers import REPO, key_for_tests, on_postgres, open_memory

# The store's engine modules: the only ones that may know which engine they are.
IMPLEMENTATIONS = {"localmem/store/engine.py", "localmem/store/sqlite.py", "localmem/store/pg.py"}
# ...and the SQLite implementation's helpers (an apsw connection is theirs to hold).
SQLITE_HELPERS = {"localmem/store/db.py", "localmem/store/cipher.py", "localmem/store/purge.py"}
# ...and the PostgreSQL implementation's (pg.py split by job: pools and migrations, maintenance, roles).
PG_HELPERS = {"localmem/store/pgpool.py", "localmem/store/pgmaint.py", "localmem/store/pgroles.py"}


def _grep(pattern: str) -> list[str]:
    """``grep -rn pattern localmem`` (basic regular expression), as paths relative to the repository."""
    done = subprocess.run(
        ["grep", "-rn", "--include=*.py", pattern, "localmem"], cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode in (0, 1), done.stderr
    return done.stdout.splitlines()


def test_nothing_outside_the_engine_modules_asks_which_engine_it_is():
    # The task's criterion, word for word: grep -rn 'engine ==\|engine !=\|is_postgres' localmem
    found = _grep(r"engine ==\|engine !=\|is_postgres")
    assert [line for line in found if line.split(":", 1)[0] not in IMPLEMENTATIONS] == []
    # and no duck-typed probe of the connection's engine either
    assert [line for line in _grep(r'getattr([a-z_.]*, "engine"') if line.split(":", 1)[0] not in IMPLEMENTATIONS] == []


def test_above_the_implementations_no_apsw_connection_and_no_sql_text_is_run():
    outside = IMPLEMENTATIONS | SQLITE_HELPERS | PG_HELPERS
    typed = [line for line in _grep(r'[:>] *"\?apsw\.Connection') if line.split(":", 1)[0] not in outside]
    assert typed == []
    # conn.execute(...) runs SQL text; everything above the store runs named queries (store.run)
    executes = [
        line
        for line in _grep(r"\.execute(")
        if line.split(":", 1)[0] not in outside and not re.search(r"#.*\.execute\(", line)
    ]
    assert executes == []


def test_postgres_type_ignores_are_gone():
    found = _grep(r"type: ignore")
    assert len(found) <= 12, found
    assert [line for line in found if "arg-type" in line and "store/" in line] == []


def test_a_file_store_is_a_sqlite_store(tmp_path):
    with open_memory(tmp_path / "m.db", embedder=HashEmbedder()) as mem:
        if on_postgres(mem.conn):  # a --stores=postgres run opens every path on the test server
            pytest.skip("a --stores=postgres run")
        assert type(mem.conn) is SqliteStore and isinstance(mem.conn, Store)
        assert mem.conn.encrypted() == (key_for_tests() is not None)  # keyed in the encrypted tier
        assert mem.conn.run("meta_get", {"key": "embed_model_id"}).fetchone() is None
        with mem.conn:  # a write transaction, and a savepoint inside it
            with mem.conn.writing():
                mem.conn.set_meta("seam_probe", "1")
            assert mem.conn.in_transaction()
        assert not mem.conn.in_transaction() and mem.conn.get_meta("seam_probe") == "1"
    assert describe(tmp_path / "m.db") == "file" and as_location(str(tmp_path / "m.db")) == tmp_path / "m.db"


def test_a_url_is_a_store_url_and_never_a_path():
    url = "postgresql://ann:secret@db.example/mem?sslmode=require"
    found = as_location(url)
    assert isinstance(found, StoreURL) and not isinstance(found, str)
    assert found.name == "mem" and found.exists() and describe(url) == "PostgreSQL database"
    assert "secret" not in found.redacted() and str(found) == url


def test_a_postgresql_store_is_a_pg_store_with_no_sqlite_fakes(pg_url):
    pytest.importorskip("psycopg", reason="pip install 'localmem[postgres]'")
    from localmem.store.pg import PgStore

    with Memory(pg_url, embedder=HashEmbedder()) as mem:
        store = mem.conn
        assert type(store) is PgStore and isinstance(store, Store)
        # no pragma that answers a made-up version, no scalar function that does nothing
        assert not hasattr(store, "pragma") and not hasattr(store, "create_scalar_function")
        assert store.schema_version() == store.latest_schema() > 0
        with store.reading():
            assert store.run("meta_get", {"key": "pg_schema_version"}).fetchone() is not None
        mem.add("Ana", "Ich bin letzte Woche nach Berlin gezogen und habe einen Hund adoptiert.")
        # the language was computed in ingest and bound: the row holds it
        assert store.run("message_languages").fetchall() == [("de", 1)]
