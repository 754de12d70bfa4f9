"""Private by default: what localmem creates (the store, its WAL and SHM, exports, the data and
cache directories) is owner-only, 0600 and 0700, whatever the umask; files that already exist
keep their owner's choice."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from localmem.cli import cli
from tests.fakes import HashEmbedder
from tests.helpers import open_memory, runner


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_a_new_store_and_its_directories_are_owner_only(tmp_path, umask_022):
    path = tmp_path / "new" / "nested" / "m.db"
    with open_memory(path, embedder=HashEmbedder()) as mem:
        mem.add("Ann", "a private note")
        wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
        assert wal.exists() and shm.exists()
        assert {p.name: oct(mode(p)) for p in (path, wal, shm)} == {p.name: "0o600" for p in (path, wal, shm)}
    assert oct(mode(tmp_path / "new")) == oct(mode(tmp_path / "new" / "nested")) == "0o700"


def test_the_default_data_and_cache_directories_are_owner_only(tmp_path, umask_022, monkeypatch):
    monkeypatch.delenv("LOCALMEM_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with open_memory(embedder=HashEmbedder()) as mem:
        mem.add("Ann", "a private note")
        assert mem.path == tmp_path / "data" / "localmem" / "memory.db"
        assert oct(mode(mem.path.parent)) == "0o700" and oct(mode(mem.path)) == "0o600"
    from localmem.models.backends.llama import machine_turn
    from localmem.models.factory import cache_dir

    with machine_turn(cache_dir() / "llm.lock"):  # the first thing to create the cache dir
        pass
    assert cache_dir() == tmp_path / "cache" / "localmem" and oct(mode(cache_dir())) == "0o700"


def test_localmem_home_is_created_owner_only(isolated_home, umask_022):
    with open_memory(embedder=HashEmbedder()) as mem:
        assert mem.path.parent == isolated_home
    assert oct(mode(isolated_home)) == "0o700"


def test_an_export_is_owner_only(tmp_path, umask_022, use_models):
    use_models(embedder=HashEmbedder())
    db = tmp_path / "m.db"
    with open_memory(db, embedder=HashEmbedder()) as mem:
        mem.add("Ann", "a private note")
    out = tmp_path / "export.jsonl"
    out.write_text("an older file the user made\n")
    os.chmod(out, 0o644)
    result = runner().invoke(cli, ["--db", str(db), "export", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert oct(mode(out)) == "0o600" and "a private note" in out.read_text()


def test_an_existing_store_keeps_its_mode(tmp_path, umask_022):
    path = tmp_path / "shared.db"
    with open_memory(path, embedder=HashEmbedder()) as mem:
        mem.add("Ann", "shared on purpose")
    os.chmod(path, 0o640)
    with open_memory(path, embedder=HashEmbedder()) as mem:
        mem.add("Bob", "still shared")
        assert oct(mode(path)) == "0o640" and oct(mode(Path(f"{path}-wal"))) == "0o640"
