"""reembed is resumable: what a stopped reembed embedded is kept, and a second run embeds the rest."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.fakes import HashEmbedder
from tests.helpers import on_postgres, open_memory


class Stopping(HashEmbedder):
    """A HashEmbedder of another model id that raises after ``calls`` batches (a kill, as far as
    the store can tell: the transaction in progress rolls back)."""

    def __init__(self, calls: int | None) -> None:
        super().__init__(dim=32, model_id="other-embedder")
        self.left = calls

    def embed(self, texts, role="passage"):
        if self.left is not None:
            if self.left == 0:
                raise KeyboardInterrupt
            self.left -= 1
        return super().embed(texts, role)


def _vectors(mem) -> dict[int, tuple[float, ...]]:
    if on_postgres(mem.conn):  # pgvector's column, in its text form
        rows = mem.conn.execute("SELECT id, embedding::text FROM vec_messages")
        return {int(i): tuple(json.loads(v)) for i, v in rows}
    rows = mem.conn.execute("SELECT rowid, embedding FROM vec_messages")
    return {int(i): tuple(np.frombuffer(v, np.float32).tolist()) for i, v in rows}


def _has_staging(mem) -> bool:
    if on_postgres(mem.conn):
        return mem.conn.execute("SELECT to_regclass('reembed_staging')").fetchone()[0] is not None
    return mem.conn.execute("SELECT name FROM sqlite_master WHERE name = 'reembed_staging'").fetchone() is not None


def test_a_stopped_reembed_goes_on_where_it_stopped(tmp_path: Path):
    path = tmp_path / "m.db"
    with open_memory(path, namespace="t", embedder=HashEmbedder()) as mem:
        for i in range(40):
            mem.add("Ana", f"Message number {i}. It has two sentences about topic {i % 7}.", conversation="c")
        before = _vectors(mem)
    stopping = Stopping(calls=3)
    with open_memory(path, namespace="t", embedder=stopping) as mem:
        from localmem.store import manage

        with pytest.raises(KeyboardInterrupt):
            manage.reembed(mem.conn, stopping, batch=4, chunk=5)
        staged = mem.conn.execute("SELECT count(*) FROM reembed_staging").fetchone()[0]
        assert 0 < staged < 40
        assert mem.conn.get_meta("embed_model_id") == "hash-embedder"  # the old vectors still serve
        assert _vectors(mem) == before
    resumed = Stopping(calls=None)
    seen: list[tuple[int, int]] = []
    with open_memory(path, namespace="t", embedder=resumed) as mem:
        from localmem.store import manage

        report = manage.reembed(mem.conn, resumed, batch=4, chunk=5, progress=lambda d, t: seen.append((d, t)))
        assert report.messages == 40 and mem.conn.get_meta("embed_model_id") == "other-embedder"
        embedded = sum(len(call) for call in resumed.calls)
        assert seen[0][0] > 0 and seen[-1][0] == seen[-1][1]  # started from what was staged
        assert not _has_staging(mem)
        resumed_vectors = _vectors(mem)
    fresh = Stopping(calls=None)
    with open_memory(tmp_path / "fresh.db", namespace="t", embedder=HashEmbedder()) as mem:
        for i in range(40):
            mem.add("Ana", f"Message number {i}. It has two sentences about topic {i % 7}.", conversation="c")
        from localmem.store import manage

        manage.reembed(mem.conn, fresh, batch=4)
        assert embedded < sum(len(call) for call in fresh.calls)  # the second run embedded less
        straight = _vectors(mem)
    assert straight.keys() == resumed_vectors.keys()
    for key in straight:
        assert np.allclose(straight[key], resumed_vectors[key])


def test_a_forget_drops_what_a_stopped_reembed_staged(tmp_path: Path):
    path = tmp_path / "m.db"
    with open_memory(path, namespace="t", embedder=HashEmbedder()) as mem:
        added = [mem.add("Ana", f"Secret number {i} is kept here.", conversation="c") for i in range(20)]
    stopping = Stopping(calls=3)
    with open_memory(path, namespace="t", embedder=stopping) as mem:
        from localmem.store import manage

        with pytest.raises(KeyboardInterrupt):
            manage.reembed(mem.conn, stopping, batch=4, chunk=5)
        assert _has_staging(mem)
        mem.forget(ids=[f"m:{added[0].id}"])
        # the staged vectors were made from the forgotten text too: gone, and the reembed starts over
        assert not _has_staging(mem) and mem.conn.get_meta("reembed_target") is None
