"""A forget killed at each of its steps: before its commit nothing is lost; from its commit on,
what it deleted is gone from the file's bytes (WAL included) by the end of the next open at the
latest, and that open says it finished the job.

Before: the deletion's commit left the deleted text in the store file's old pages until a
checkpoint, and in free room until the scrub; a kill right after the commit left it there (3 of
22 kills in the hostile trial) with nothing to say a scrub was owed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from localmem import Memory
from localmem.store import purge
from tests.fakes import HashEmbedder
from tests.helpers import REPO, write_jsonl

pytestmark = [pytest.mark.own_keys, pytest.mark.plain_stores]

MARKER = "NUMBATMARKER"
STEPS = ("decided", "deleted", "committed", "scrubbed", "vacuumed")

FORGET = """
import os, signal, sys
from localmem import Memory
from localmem.store import purge
from tests.fakes import HashEmbedder

def step(name):
    if name == sys.argv[2]:
        os.kill(os.getpid(), signal.SIGKILL)

purge.step = step
with Memory(sys.argv[1], "t", embedder=HashEmbedder()) as mem:
    report = mem.forget(match=sys.argv[3]).to_dict()
print(report["counts"]["messages"], report["file"]["pending"])
"""

OPEN = """
import sys
from localmem import Memory
from tests.fakes import HashEmbedder
with Memory(sys.argv[1], "t", embedder=HashEmbedder()) as mem:
    print(mem.stats().messages)
"""


def copies(path: Path) -> int:
    return sum(p.read_bytes().count(MARKER.encode()) for p in (path, Path(f"{path}-wal")) if p.exists())


def python(code: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd=REPO, timeout=120
    )


def store(tmp_path: Path) -> Path:
    path = tmp_path / "m.db"
    rows = [
        {
            "conversation": f"c{i % 3}",
            "id": f"m{i}",
            "speaker": "Ana",
            "text": f"{MARKER} {i} the lighthouse" if i % 4 == 0 else f"plain talk {i} about boats",
        }
        for i in range(80)
    ]
    with Memory(path, "t", embedder=HashEmbedder()) as mem:
        mem.ingest(write_jsonl(tmp_path / "in.jsonl", rows))
        mem.admin.vacuum()
    return path


@pytest.mark.slow
@pytest.mark.parametrize("step", STEPS)
def test_a_forget_killed_at_each_step_leaves_the_store_whole_and_the_text_gone_by_the_next_open(tmp_path, step):
    path = store(tmp_path)
    assert copies(path) >= 20
    killed = python(FORGET, str(path), step, MARKER)
    if killed.returncode == 0:  # the step was not needed (no vacuum): the forget finished
        assert step == "vacuumed", killed.stderr
        assert killed.stdout.split() == ["20", "False"]
        assert copies(path) == 0
        return
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    committed = STEPS.index(step) >= STEPS.index("committed")
    after_kill = copies(path)
    print(f"killed at {step}: {after_kill} copies of the marker in the file and WAL")

    opened = python(OPEN, str(path))
    assert opened.returncode == 0, opened.stderr
    if committed:
        assert opened.stdout.split() == ["60"]
        assert "finished the scrub of a forget that stopped after its commit" in opened.stderr
        assert opened.stderr.count("\n") == 1, opened.stderr  # one line
        assert copies(path) == 0, f"killed at {step}: {after_kill} copies after the kill"
    else:  # before the commit: rolled back, nothing lost, nothing owed
        assert opened.stdout.split() == ["80"] and opened.stderr == ""
        assert copies(path) >= 20
    again = python(OPEN, str(path))
    assert again.stderr == ""  # finished once


def test_a_completed_forget_leaves_nothing_in_the_file_and_nothing_owed(tmp_path):
    path = store(tmp_path)
    with Memory(path, "t", embedder=HashEmbedder()) as mem:
        report = mem.forget(match=MARKER).to_dict()
        assert report["counts"]["messages"] == 20 and report["file"]["pending"] is False
        assert copies(path) == 0  # before the Memory is closed
        assert mem.conn.execute("select count(*) from meta where key = ?", (purge.PENDING,)).fetchone()[0] == 0


def test_a_forget_whose_wal_a_reader_holds_is_finished_by_the_next_open(tmp_path, caplog):
    path = store(tmp_path)
    with Memory(path, "t", embedder=HashEmbedder()) as mem, Memory(path, "t", embedder=HashEmbedder()) as reader:
        reader.conn.execute("BEGIN")
        reader.conn.execute("select count(*) from messages").fetchall()  # holds a snapshot
        mem.conn.raw.set_busy_handler(lambda count: False)  # the checkpoint does not wait for it
        report = mem.forget(match=MARKER).to_dict()
        assert report["file"]["wal_emptied"] is False and report["file"]["pending"] is True
        assert copies(path) > 0  # the store file's old pages, while the reader holds the WAL
        reader.conn.execute("COMMIT")
    with caplog.at_level("WARNING", logger="localmem.store"):
        with Memory(path, "t", embedder=HashEmbedder()) as mem:
            assert mem.stats().messages == 60
    assert "finished the scrub" in caplog.text
    assert copies(path) == 0
