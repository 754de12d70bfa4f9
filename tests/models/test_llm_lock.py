"""Two localmem processes take turns with the LLM instead of stalling each other's threads."""

from __future__ import annotations

import multiprocessing

import pytest

from localmem.models.backends.llama import machine_turn

fcntl = pytest.importorskip("fcntl")  # POSIX only


def _hold(path, held, release):
    with machine_turn(path):
        held.set()
        release.wait(10)


def _free(path) -> bool:
    with open(path, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(fh, fcntl.LOCK_UN)
        return True


@pytest.mark.slow
def test_a_call_in_another_process_holds_the_machine_lock_until_it_ends(tmp_path):
    path = tmp_path / "cache" / "llm.lock"
    ctx = multiprocessing.get_context("fork")
    held, release = ctx.Event(), ctx.Event()
    other = ctx.Process(target=_hold, args=(path, held, release))
    other.start()
    try:
        assert held.wait(10)
        assert not _free(path)  # this process would wait its turn
    finally:
        release.set()
        other.join(10)
    assert _free(path)


def test_no_lock_file_or_an_unwritable_place_never_stops_a_call(tmp_path):
    with machine_turn(None):
        pass
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with machine_turn(blocker / "llm.lock"):  # a file where the directory should be
        pass
