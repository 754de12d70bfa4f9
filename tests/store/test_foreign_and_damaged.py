"""Someone else's database is never modified, and a damaged store is reported (with what to do)
and never written to. A localmem store is recognised by its application id, or by the meta
table of one made before the id existed, before anything (the journal mode included) changes."""

from __future__ import annotations

import os
from pathlib import Path

import apsw
import pytest

from localmem.cli import cli
from localmem.errors import NotALocalmemStoreError, StoreCorruptError
from localmem.store import db
from tests.fakes import HashEmbedder
from tests.helpers import assert_one_line_error, old_store, open_memory, runner


def _untouched(path: Path, before: bytes) -> None:
    assert path.read_bytes() == before
    assert not Path(f"{path}-wal").exists() and not Path(f"{path}-shm").exists()


@pytest.mark.own_keys  # another application's plain file (with a key: tests/store/test_encrypt.py)
@pytest.mark.parametrize("user_version", [0, 1, 3, 8])
def test_another_applications_database_is_refused_untouched(tmp_path, user_version):
    path = tmp_path / "app.db"
    conn = apsw.Connection(str(path))
    conn.execute(
        "create table customers(id integer primary key, name text); "
        f"insert into customers(name) values ('Ada'); pragma user_version = {user_version}"
    )
    conn.close()
    before = path.read_bytes()
    with pytest.raises(NotALocalmemStoreError, match="no localmem meta table; its tables: customers"):
        open_memory(path, embedder=HashEmbedder())
    _untouched(path, before)
    conn = apsw.Connection(str(path))
    assert conn.pragma("journal_mode") == "delete" and conn.pragma("user_version") == user_version


@pytest.mark.own_keys
def test_a_database_with_another_application_id_is_refused_even_with_our_tables(tmp_path):
    path = tmp_path / "look-alike.db"
    conn = apsw.Connection(str(path))
    conn.execute(
        "pragma application_id = 1234; create table meta(key text primary key, value text not null) "
        "without rowid; create table sources(x); create table messages(x); create table units(x)"
    )
    conn.close()
    before = path.read_bytes()
    with pytest.raises(NotALocalmemStoreError, match="application id is 0x4d2"):
        open_memory(path, embedder=HashEmbedder())
    _untouched(path, before)


@pytest.mark.own_keys
def test_an_empty_database_with_a_user_version_is_refused(tmp_path):
    path = tmp_path / "versioned.db"
    conn = apsw.Connection(str(path))
    conn.pragma("user_version", 5)
    conn.close()
    before = path.read_bytes()
    with pytest.raises(NotALocalmemStoreError):
        open_memory(path, embedder=HashEmbedder())
    _untouched(path, before)


def test_a_new_store_gets_the_application_id(tmp_path):
    with open_memory(tmp_path / "m.db", embedder=HashEmbedder()) as mem:
        assert mem.conn.pragma("application_id") == db.APPLICATION_ID
        assert mem.conn.pragma("user_version") == db.latest_version()


def test_a_store_made_before_the_application_id_is_recognised_and_given_it(tmp_path):
    path = tmp_path / "old.db"
    conn = old_store(path, 8)  # as the last localmem without the id left it
    conn.execute(
        "insert into sources (ns, kind, uri, sha256, status, created_at) "
        "values ('default', 'api', 'api:add', 'api', 'loaded', '2024-01-01')"
    )
    conn.execute(
        "insert into messages (ns, source_id, conversation, seq, external_id, speaker, text) "
        "values ('default', 1, 'default', 0, 'a0', 'Ann', 'kept across the upgrade')"
    )
    assert conn.pragma("application_id") == 0
    conn.close()
    with open_memory(path, embedder=HashEmbedder()) as mem:
        assert mem.conn.pragma("application_id") == db.APPLICATION_ID
        assert mem.conn.pragma("user_version") == db.latest_version()
        assert [h.text for h in mem.search("upgrade", channels=["bm25"])] == ["Ann: kept across the upgrade"]


def _store(path: Path, n: int = 1500) -> None:
    with open_memory(path, embedder=HashEmbedder()) as mem:
        src = path.with_suffix(".txt")
        src.write_text("".join(f"Ann: message {i} about boats and trains\n" for i in range(n)), encoding="utf-8")
        mem.ingest(src)
    assert not Path(f"{path}-wal").exists()  # closed: everything is in the file


@pytest.mark.parametrize("cut", [0.5, 2 * 4096])
def test_a_store_cut_short_is_refused_on_open_and_left_alone(tmp_path, cut):
    path = tmp_path / "cut.db"
    _store(path)
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * cut) if cut < 1 else len(data) - cut])
    before = path.read_bytes()
    with pytest.raises(StoreCorruptError, match="is damaged") as info:
        open_memory(path, embedder=HashEmbedder())
    assert "Restore it from an export" in str(info.value) and info.value.exit_code == 6
    _untouched(path, before)


def test_a_store_with_damaged_pages_is_reported_and_never_written(tmp_path, use_models):
    path = tmp_path / "damaged.db"
    _store(path)
    data = bytearray(path.read_bytes())
    page = 4096
    for pgno in range(3, len(data) // page, 4):  # scribble over every fourth page
        data[pgno * page + 8 : pgno * page + 400] = os.urandom(392)
    path.write_bytes(bytes(data))
    before = path.read_bytes()
    use_models(embedder=HashEmbedder())
    for args in (
        ["stats"],
        ["search", "boats", "--channels", "bm25"],
        ["add", "Bob", "one more"],
        ["forget", "--namespace", "default", "--yes"],
        ["doctor"],
    ):
        err = assert_one_line_error(runner().invoke(cli, ["--db", str(path), *args]), code=6)
        assert "is damaged" in err and "Restore it from an export" in err, (args, err)
    _untouched(path, before)


def test_doctor_checks_every_page(tmp_path, use_models):
    path = tmp_path / "m.db"
    _store(path, 50)
    use_models(embedder=HashEmbedder())
    result = runner().invoke(cli, ["--db", str(path), "doctor", "--json"])
    assert result.exit_code == 0, result.output
    assert '"integrity": "ok"' in result.stdout and '"auto_vacuum": "incremental"' in result.stdout
