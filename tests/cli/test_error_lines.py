"""Errors a user meets with files they cannot read or write, and a store swapped under a
running command: one ``error: ...`` line with the error's exit code, never click's three-line
usage error nor ``unexpected ReadOnlyError``.

Permissions do not stop root: as root, the commands run with the capabilities that let root
read and write anything dropped (setpriv), so the file modes apply as they do to a user.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from localmem.errors import StoreReadOnlyError, StoreReplacedError
from tests.fakes import HashEmbedder
from tests.helpers import REPO, open_memory

pytestmark = pytest.mark.plain_stores

ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
NO_DAC = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--inh-caps", "-dac_override,-dac_read_search"]


def cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALMEM_")}
    plugin = REPO / "tests" / "mcp_plugin"  # registers the test-fake embedder
    env.update(
        PYTHONPATH=os.pathsep.join([str(plugin), str(REPO)]),
        LOCALMEM_HOME=str(tmp_path / "home"),
        LOCALMEM_EMBED_BACKEND="test-fake",
        LOCALMEM_LLM_BACKEND="test-fake",
    )
    argv = [sys.executable, "-m", "localmem", *args]
    if ROOT:
        argv = NO_DAC + argv
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)


def one_line(done: subprocess.CompletedProcess, code: int) -> str:
    assert done.returncode == code, (done.returncode, done.stderr)
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
    assert "Usage:" not in done.stderr and "unexpected" not in done.stderr and "Traceback" not in done.stderr
    return done.stderr


needs_permissions = pytest.mark.skipif(
    ROOT and shutil.which("setpriv") is None, reason="as root, needs setpriv to drop CAP_DAC_OVERRIDE"
)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "m.db"
    with open_memory(path, "default", embedder=HashEmbedder()) as mem:
        mem.add("Ana", "the lighthouse in Oslo")
    return path


@pytest.mark.slow
@needs_permissions
def test_unreadable_input_file_and_store_are_one_line_errors(tmp_path, store):
    data = tmp_path / "in.jsonl"
    data.write_text(json.dumps({"conversation": "c", "id": "1", "speaker": "Ana", "text": "hi"}) + "\n")
    data.chmod(0)
    err = one_line(cli(tmp_path, "--db", str(store), "ingest", str(data)), 2)
    assert "in.jsonl: cannot read: Permission denied" in err
    store.chmod(0)
    try:
        err = one_line(cli(tmp_path, "--db", str(store), "stats"), 1)
        assert "cannot open" in err and "Permission denied" in err
    finally:
        store.chmod(0o600)


@pytest.mark.slow
@needs_permissions
@pytest.mark.parametrize("what", ["file", "folder"])
def test_a_read_only_store_is_a_one_line_error_and_keeps_what_it_holds(tmp_path, store, what):
    target = store if what == "file" else store.parent
    mode = target.stat().st_mode
    target.chmod(0o444 if what == "file" else 0o555)
    try:
        err = one_line(cli(tmp_path, "--db", str(store), "add", "Ana", "more"), StoreReadOnlyError.exit_code)
        assert "cannot be written" in err
        read = cli(tmp_path, "--db", str(store), "stats")
        if read.returncode != 0:  # a WAL store in a read-only folder cannot even be read (no -shm)
            assert "cannot be written" in one_line(read, StoreReadOnlyError.exit_code)
    finally:
        target.chmod(mode)
    with open_memory(store, "default", embedder=HashEmbedder()) as mem:
        assert mem.stats().messages == 1


@pytest.mark.own_keys  # a rewrite with no key on either side: the same swap on any store
def test_a_write_to_a_store_swapped_by_encrypt_is_a_one_line_retry_error(tmp_path, store):
    """A connection opened just before encrypt's swap (as the trial's adds did) writes after it:
    SQLite refuses (the file it opened was renamed over); that is one line, exit 3. The swap is
    encrypt's own, run as a rewrite with no key on either side (no cipher build needed)."""
    import apsw

    from localmem.store import cipher, db

    opened: list = []

    def progress(phase: str) -> None:
        if phase == "replacing":  # the new file is ready; the rename comes next
            opened.append(apsw.Connection(str(store)))

    with open_memory(store, "default", embedder=HashEmbedder()) as mem:
        cipher.change_key(mem.conn, store, None, None, progress)
    with pytest.raises(StoreReplacedError) as caught, db.store_errors(str(store)):
        opened[0].execute("insert into meta (key, value) values ('written', 'during the swap')")
    opened[0].close()
    line = str(caught.value)
    assert "\n" not in line and "was replaced while this command had it open" in line
    assert caught.value.exit_code == 3 and caught.value.code == "store_replaced"
    with open_memory(store, "default", embedder=HashEmbedder()) as mem:
        assert mem.stats().messages == 1


@pytest.mark.slow
@needs_permissions
def test_a_store_left_with_its_wal_in_a_read_only_folder_is_store_read_only(tmp_path, store):
    """The hostile test's case: the store's -wal was left beside it (a crash, a copy made while
    it was open) and its folder is read-only, so SQLite cannot make the -shm: that was
    'unexpected CantOpenError'."""
    import apsw

    keep = apsw.Connection(str(store))  # holds the WAL open while the copy is made
    keep.execute("pragma wal_autocheckpoint = 0")
    keep.execute("create table if not exists t_left(x)")
    folder = tmp_path / "ro"
    folder.mkdir()
    copy = folder / "m.db"
    shutil.copy(store, copy)
    shutil.copy(store.with_name(store.name + "-wal"), copy.with_name(copy.name + "-wal"))
    keep.close()
    folder.chmod(0o555)
    try:
        for args in (("stats",), ("search", "lighthouse"), ("add", "Ana", "more")):
            err = one_line(cli(tmp_path, "--db", str(copy), *args), StoreReadOnlyError.exit_code)
            assert "cannot be written" in err, args
    finally:
        folder.chmod(0o755)


@pytest.mark.slow
def test_a_db_path_naming_a_fifo_is_refused_at_once(tmp_path):
    """Opening a FIFO waits for a writer that may never come: --db naming one hung forever."""
    fifo = tmp_path / "store.fifo"
    os.mkfifo(fifo)
    for args in (("stats",), ("add", "Ana", "hi"), ("serve", "--address", "127.0.0.1:0")):
        done = cli(tmp_path, "--db", str(fifo), *args)  # cli() times out after 120 s
        err = one_line(done, 1)
        assert "is not a localmem store (it is a FIFO (named pipe); a store is a regular file)" in err, args
