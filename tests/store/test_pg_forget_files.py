"""Forget on PostgreSQL, checked the way a user would look (issue 50, finding 3): after a
CHECKPOINT, every file under the server's data directory (tables, indexes, the catalogs'
files, pg_statistic's among them, the write-ahead log, the server's log) is read, and none
holds the forgotten text. One forget of each kind (a message, a conversation, a namespace, the
last namespace), on a server of the test's own made by ``localmem postgres start``, once with
autovacuum on (gathering the statistics alone: no bulk load, no vacuum) and once with it off
(the statistics from an earlier ``localmem vacuum``). The server's WAL is its own, so these
tests do not use the shared test server.

ANALYZE keeps a table's statistics as they were when it finds the table empty: before this,
the histograms of ``messages.text`` and ``raw`` kept whole forgotten messages after the last
namespace went, ``fts_terms_delta.lexeme`` (emptied by every forget's fold) the forgotten
words, and the WAL files held the rows as written."""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from localmem import Memory
from tests.fakes import HashEmbedder

pytest.importorskip("psycopg", reason="pip install 'localmem[postgres]'")
pytest.importorskip("pgserver", reason="pip install 'localmem[postgres]'")

import psycopg  # noqa: E402


@dataclass
class Server:
    data: Path
    autovacuum: bool

    def url(self, database: str, user: str = "postgres") -> str:
        return f"postgresql://{user}@/{database}?host={self.data}"

    def admin(self, sql: str, params: Any = None, database: str = "postgres") -> list[tuple[Any, ...]]:
        with psycopg.connect(self.url(database), autocommit=True) as conn:
            cur = conn.execute(sql, params)  # type: ignore[arg-type]
            return cur.fetchall() if cur.description else []


@pytest.fixture(scope="module", params=["autovacuum on", "autovacuum off"])
def server(request: pytest.FixtureRequest):
    """A server of its own, as ``localmem postgres start`` makes it (durable: fsync and full page
    writes on), with autovacuum on (looking every second, analyzing after 5 changes: what it
    does in a minute by default) or off."""
    from localmem.store import pgpool, pgserver

    parent = Path(tempfile.mkdtemp(prefix="localmem-test-pgforget-"))
    parent.chmod(0o755)  # as root the server runs as the user 'pgserver'
    data = parent / "data"
    pgserver.start(data, "postgres")
    srv = Server(data, request.param == "autovacuum on")
    if srv.autovacuum:
        for setting, value in (
            ("autovacuum", "on"),
            ("autovacuum_naptime", "1"),
            ("autovacuum_analyze_threshold", "5"),
            ("autovacuum_analyze_scale_factor", "0"),
        ):
            srv.admin(f"ALTER SYSTEM SET {setting} = {value}")
    else:
        srv.admin("ALTER SYSTEM SET autovacuum = off")
    srv.admin("SELECT pg_reload_conf()")
    yield srv
    pgpool.close_pools()
    pgserver.stop(data)
    shutil.rmtree(parent, ignore_errors=True)


@pytest.fixture
def database(server: Server, request: pytest.FixtureRequest):
    """A fresh database on the module's server, dropped afterwards."""
    from localmem.store import pgpool

    name = f"f{abs(hash(request.node.nodeid)) % 10**10}"
    server.admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    server.admin(f'CREATE DATABASE "{name}"')
    yield name
    pgpool.close_pools()
    server.admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def new_marker() -> str:
    """A word of its own per test, of consonants only: the full-text parser keeps it one word
    (a run of hex digits may read as numbers) and the Porter stemmer leaves it as it is, so
    the same bytes are in the message, its postings and the statistics."""
    return "qz" + "".join(secrets.choice("bcdfghjklmnpqrtvwxz") for _ in range(16))


def files_holding(server: Server, needle: bytes) -> list[str]:
    """The files under the data directory that hold ``needle``, after a CHECKPOINT (so that no
    page waits in shared buffers): read from the file system, as anyone with the disk would."""
    server.admin("CHECKPOINT")
    found = []
    for root, _dirs, names in os.walk(server.data):
        for name in names:
            path = Path(root) / name
            try:
                if path.is_file() and needle in path.read_bytes():
                    found.append(str(path.relative_to(server.data)))
            except (FileNotFoundError, PermissionError):
                continue  # a WAL file removed while the walk ran
    return sorted(found)


def named(server: Server, database: str, files: list[str]) -> list[str]:
    """``files`` with the relation each of the database's is the file of (for the messages)."""
    oid = server.admin("SELECT oid FROM pg_database WHERE datname = %s", (database,))[0][0]
    out = []
    for f in files:
        parts = f.split("/")
        if len(parts) == 3 and parts[0] == "base" and parts[1] == str(oid) and parts[2].isdigit():
            rel = server.admin("SELECT pg_filenode_relation(0, %s)::regclass::text", (int(parts[2]),), database)
            f = f"{f} ({rel[0][0]})"
        out.append(f)
    return out


def _stats_holding(server: Server, database: str, needle: str) -> list[str]:
    """The columns whose statistics in pg_statistic hold ``needle`` (read as the superuser)."""
    rows = server.admin(
        "SELECT tablename || '.' || attname FROM pg_stats WHERE schemaname = 'public' AND "
        "concat(most_common_vals::text, histogram_bounds::text, most_common_elems::text) LIKE %s",
        (f"%{needle}%",),
        database,
    )
    return sorted(r[0] for r in rows)


def _wait_for_autovacuum(server: Server, database: str, tables: list[str]) -> None:
    """Until autovacuum has analyzed ``tables`` after the last change (it looks every second)."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        rows = server.admin(
            "SELECT count(*) FROM pg_stat_user_tables WHERE relname = ANY(%s) "
            "AND last_autoanalyze IS NOT NULL AND n_mod_since_analyze = 0",
            (tables,),
            database,
        )
        if rows[0][0] == len(tables):
            return
        time.sleep(0.5)
    raise AssertionError(f"autovacuum did not analyze {tables} in 90 s")


def _load(server: Server, database: str, marker: str, other_namespace: bool, user: str = "postgres") -> int:
    """Namespace 'me': 30 daily notes and a secret conversation whose first message holds
    ``marker`` (the reply after it holds it as its full-text context); namespace 'other' the
    same notes, unless it is to be the last namespace. Then the planner's statistics, as the
    server gathers them: autovacuum's, or (autovacuum off) an earlier ``localmem vacuum``'s.
    The forgotten text is in pg_statistic when the forget starts. Returns the secret's id."""
    url = server.url(database, user)
    with Memory(url, namespace="me", embedder=HashEmbedder()) as me:
        for i in range(30):
            me.add("Ana", f"daily note {i} about the garden and weather", conversation="daily")
        secret = me.add("Ana", f"The door code is {marker}, keep it between us", conversation="secret")
        me.add("Ben", "Sure, I will remember it", conversation="secret")
    if other_namespace:
        with Memory(url, namespace="other", embedder=HashEmbedder()) as other:
            for i in range(30):
                other.add("Ana", f"daily note {i} about the garden and weather", conversation="daily")
    if server.autovacuum:
        _wait_for_autovacuum(server, database, ["messages", "messages_fts", "fts_terms_delta"])
    else:
        with Memory(url, namespace="me", embedder=HashEmbedder()) as me:
            me.admin.vacuum()
    stats = _stats_holding(server, database, marker[-10:])
    print(f"\nstatistics holding the text before the forget: {stats}")
    assert stats, "the statistics should hold the text before the forget"
    return secret.id


# What is forgotten (Memory.forget's arguments, from namespace 'me') and whether another
# namespace stays.
KINDS = {
    "a message": (lambda secret: {"ids": [f"m:{secret}"]}, True),
    "a conversation": (lambda secret: {"conversation": "secret"}, True),
    "a namespace": (lambda secret: {"namespace": "me"}, True),
    "the last namespace": (lambda secret: {"namespace": "me"}, False),
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_forgotten_text_is_in_no_file_of_the_data_directory(server: Server, database: str, kind: str):
    target, other_namespace = KINDS[kind]
    marker = new_marker()
    secret = _load(server, database, marker, other_namespace)
    needle = marker[-10:].encode()
    before = files_holding(server, needle)
    assert any(f.startswith("base/") for f in before)  # the store's pages (and the WAL, unless a vacuum moved it on)
    with Memory(server.url(database), namespace="me", embedder=HashEmbedder()) as me:
        done = me.forget(**target(secret)).to_dict()
        if server.autovacuum:
            time.sleep(2)  # autovacuum's next look, after the forget: it must not bring the text back
        left = files_holding(server, needle)
        mode = "autovacuum on" if server.autovacuum else "autovacuum off"
        print(f"{kind}, {mode}: files with the text {len(before)} -> {named(server, database, left)}")
        assert left == [], (kind, named(server, database, left), done["file"])
        assert done["file"]["pending"] is False and done["file"]["wal_emptied"] is True, done["file"]
        assert _stats_holding(server, database, marker[-10:]) == []
    if other_namespace:  # what stays is intact
        assert files_holding(server, b"about the garden and weather")
        with Memory(server.url(database), namespace="other", embedder=HashEmbedder()) as other:
            assert len(other.search("garden note weather", channels=["bm25"], k=50)) == 30
        if kind == "a message":
            with Memory(server.url(database), namespace="me", embedder=HashEmbedder()) as me:
                assert len(me.search("garden note weather", channels=["bm25"], k=50)) == 30
                assert me.search("remember", channels=["bm25"])  # the reply, indexed again without it


def test_an_owner_that_may_not_reach_the_wal_says_what_stays(server: Server, database: str):
    """A store owned by a role that is not a superuser (nor in pg_maintain, pg_checkpoint): its
    forget clears the statistics of the tables it emptied (PostgreSQL 18: the table's owner may),
    and reports as pending, by name, what it could not reach: pg_statistic's dead versions and
    the server's WAL, which still hold the text; ``localmem vacuum`` run by a superuser
    removes them."""
    owner = f"owner_{database}"
    server.admin(f'DROP ROLE IF EXISTS "{owner}"')
    server.admin(f'CREATE ROLE "{owner}" LOGIN')
    server.admin(f'ALTER DATABASE "{database}" OWNER TO "{owner}"')
    server.admin(f'GRANT ALL ON SCHEMA public TO "{owner}"', database=database)
    server.admin("CREATE EXTENSION IF NOT EXISTS vector", database=database)
    try:
        marker = new_marker()
        _load(server, database, marker, other_namespace=False, user=owner)
        with Memory(server.url(database, owner), namespace="me", embedder=HashEmbedder()) as me:
            done = me.forget(namespace="me").to_dict()["file"]
        assert done["pending"] is True and done["wal_emptied"] is False
        assert "pg_statistic (needs a superuser or pg_maintain)" in done["vacuum_reason"]
        assert "the server's write-ahead log (needs a superuser" in done["vacuum_reason"]
        assert _stats_holding(server, database, marker[-10:]) == []  # no live statistics hold it
        assert files_holding(server, marker[-10:].encode())  # pg_statistic's dead versions, the WAL
        # `localmem vacuum` run by a superuser finishes the job
        with Memory(server.url(database), namespace="me", embedder=HashEmbedder()) as admin:
            report = admin.admin.vacuum().to_dict()
        assert report["wal_emptied"] is True and not report["skipped"], report
        assert files_holding(server, marker[-10:].encode()) == []
    finally:
        from localmem.store import pgpool

        pgpool.close_pools()
        server.admin(f'ALTER DATABASE "{database}" OWNER TO postgres')
        server.admin(f'DROP OWNED BY "{owner}" CASCADE', database=database)
        server.admin(f'DROP ROLE IF EXISTS "{owner}"')
