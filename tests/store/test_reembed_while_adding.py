"""A message another process adds while ``reembed`` runs is embedded too (before, it had no
vector afterwards, on both engines, and nothing said so)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from localmem.store import manage
from tests.fakes import HashEmbedder
from tests.helpers import open_memory

REPO = Path(__file__).resolve().parents[2]

ADD = """
import sys
from tests.fakes import HashEmbedder
from tests.helpers import open_memory
with open_memory(sys.argv[1], namespace="t", embedder=HashEmbedder()) as mem:
    for i in range(3):
        print(mem.add("Bea", f"late message {i} about a zeppelin called Hindsight{i}", conversation="c").id)
"""


def _add_elsewhere(location: str) -> list[int]:
    """Three messages added by another process, with the store's old embedder; their ids."""
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run(
        [sys.executable, "-c", ADD, location], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return [int(line) for line in done.stdout.split()]


@pytest.mark.slow  # spawns a process
@pytest.mark.not_on_postgres("its adding process opens the store itself (the PostgreSQL case runs on the test server)")
@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_messages_added_during_a_reembed_get_the_new_embedders_vectors(engine, tmp_path, request):
    if engine == "postgres":
        pytest.importorskip("psycopg", reason="pip install 'localmem[postgres]'")
        location = request.getfixturevalue("pg_url")
    else:
        location = str(tmp_path / "m.db")
    with open_memory(location, namespace="t", embedder=HashEmbedder()) as mem:
        for i in range(30):
            mem.add("Ana", f"Message number {i}. It is about topic {i % 7}.", conversation="c")
    new = HashEmbedder(dim=32, model_id="hash-b")
    added: list[int] = []

    def progress(done: int, total: int) -> None:
        if not added and done > 0:  # half-way through: another process adds three messages
            added.extend(_add_elsewhere(location))

    with open_memory(location, namespace="t", embedder=new) as mem:
        report = manage.reembed(mem.conn, new, batch=4, progress=progress, chunk=5)
        assert len(added) == 3 and report.messages == 33
        (vectors,) = mem.conn.execute("SELECT count(*) FROM vec_messages").fetchone()
        (messages,) = mem.conn.execute("SELECT count(*) FROM messages").fetchone()
        assert vectors == messages == 33
        for i, message_id in enumerate(added):  # found by the new embedder's vector for it
            hits = mem.search(f"late message {i} zeppelin Hindsight{i}", channels=["vector"], k=1)
            assert [h.id for h in hits] == [f"m:{message_id}"]
