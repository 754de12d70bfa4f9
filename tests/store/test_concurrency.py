"""No write is lost when several processes or threads write to one store: writers wait for
each other (up to busy_timeout_ms, then a clear error); one Memory shared by threads runs its
calls one at a time; a closed Memory says so."""

from __future__ import annotations

import threading
import time

import pytest

from localmem.config import Config
from localmem.errors import LocalmemError, StoreLockedError
from tests.fakes import HashEmbedder
from tests.helpers import open_memory, raw_connection
from tests.trials import concurrent_writes as trial


@pytest.mark.slow  # the trial spawns the writers as processes
def test_two_processes_adding_300_messages_each_store_all_600(tmp_path):
    result = trial.adds(tmp_path, 300, with_ingest=False)
    assert (result["stored"], result["errors"]) == (600, 0), result


@pytest.mark.slow  # the trial spawns the writers as processes
def test_two_processes_adding_beside_a_running_ingest_store_everything(tmp_path):
    result = trial.adds(tmp_path, 300, with_ingest=True)
    assert (result["stored"], result["errors"], result["ingest_stored"]) == (600, 0, 3000), result


@pytest.mark.slow  # the trial spawns the writers as processes
def test_two_processes_creating_the_same_new_store_both_open_it(tmp_path):
    result = trial.creates(tmp_path, 4)
    assert result["errors"] == 0, result


def test_a_writer_waits_the_configured_time_then_says_why(tmp_path):
    path = tmp_path / "m.db"
    with open_memory(path, embedder=HashEmbedder()) as mem:
        mem.add("Ann", "first")
    other = raw_connection(path)
    other.execute("BEGIN IMMEDIATE")  # another writer holds the lock throughout
    try:
        with open_memory(path, embedder=HashEmbedder(), config=Config(busy_timeout_ms=1500)) as mem:
            started = time.monotonic()
            with pytest.raises(StoreLockedError) as info:
                mem.add("Ann", "second")
            waited = time.monotonic() - started
            assert mem.search("first")  # reading is not blocked by the writer
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert 1.4 < waited < 5, waited
    message = str(info.value)
    assert "held its write lock for the whole 1.5 s" in message and "busy_timeout_ms" in message
    assert "ingest" not in message and "Nothing was changed" in message


def test_a_writer_in_the_same_process_is_waited_for(tmp_path):
    """Two Memory objects on one file in one process: the second waits for the first's write."""
    path = tmp_path / "m.db"
    with open_memory(path, embedder=HashEmbedder()) as first, open_memory(path, embedder=HashEmbedder()) as second:
        first.add("Ann", "hello")
        done = threading.Event()

        def hold() -> None:
            with first.conn:  # a write transaction held for 0.5 s
                first.conn.execute("update meta set value = value where key = 'embed_dim'")
                time.sleep(0.5)
            done.set()

        holder = threading.Thread(target=hold)
        holder.start()
        time.sleep(0.1)
        second.add("Bob", "waited for the lock")
        assert done.is_set()
        holder.join()
        assert second.stats().messages == 2


def test_two_threads_with_a_memory_each_store_every_message(tmp_path):
    """Each thread's writer waits for the other's, sleeping without the GIL, so the other can
    commit (with SQLite's own busy timeout, each waited its full timeout instead)."""
    path = tmp_path / "m.db"
    with open_memory(path, embedder=HashEmbedder()) as mem:
        mem.add("Ann", "first")
    errors: list[Exception] = []

    def run(tag: str) -> None:
        with open_memory(path, embedder=HashEmbedder(), config=Config(busy_timeout_ms=2000)) as mem:
            for i in range(60):
                try:
                    mem.add("Ann", f"{tag} message {i}", id=f"{tag}-{i}")
                except Exception as exc:  # noqa: BLE001 - every failure counts
                    errors.append(exc)

    workers = [threading.Thread(target=run, args=(tag,)) for tag in ("a", "b")]
    started = time.monotonic()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == [] and time.monotonic() - started < 60
    with open_memory(path, embedder=HashEmbedder()) as mem:
        assert mem.stats().messages == 121


def test_one_memory_shared_by_two_threads_runs_their_calls_one_at_a_time(tmp_path):
    result = trial.threads(tmp_path, 100)
    assert (result["stored"], result["errors"]) == (200, 0), result


def test_a_generator_holds_the_lock_only_while_it_computes(tmp_path):
    with open_memory(tmp_path / "m.db", embedder=HashEmbedder()) as mem:
        mem.add("Ann", "apples and pears")
        results = mem.search_many(["apples", "pears"])
        first = next(results)
        other = threading.Thread(target=mem.add, args=("Bob", "more pears"))
        other.start()
        other.join(timeout=10)  # would hang if the suspended generator held the lock
        assert not other.is_alive() and first
        assert len(list(results)) == 1


def test_a_closed_memory_says_so(tmp_path):
    result = trial.after_close(tmp_path)
    for call, error in result.items():
        assert error.startswith("LocalmemError: this Memory of ") and "is closed" in error, (call, error)
    mem = open_memory(tmp_path / "again.db", embedder=HashEmbedder())
    mem.close()
    mem.close()  # a second close does nothing
    with pytest.raises(LocalmemError, match="is closed"):
        _ = mem.conn
