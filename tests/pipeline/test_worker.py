"""Background extraction (Extraction.in_background): add returns while the model works,
one build at a time, and close() flushes."""

from __future__ import annotations

import threading

import pytest

from localmem import LocalmemError
from localmem.config import Config
from tests.fakes import HashEmbedder, ScriptedLLM
from tests.helpers import open_memory, raw_connection
from tests.pipeline.test_pipeline import _responder


def _day(n: int, hour: int = 10) -> str:
    return f"2024-03-{n:02d}T{hour:02d}:00"


def _memory(tmp_path, llm, **cfg):
    return open_memory(
        tmp_path / "m.db", namespace="t", config=Config(extract="llm", **cfg), embedder=HashEmbedder(), llm=llm
    )


def _stages(mem) -> dict[str, int]:
    return dict(
        mem.conn.execute(
            "select stage, count(*) from units where kind = 'episode' and ns = 't' group by stage"
        ).fetchall()
    )


def test_add_returns_while_the_model_extracts_and_close_flushes(tmp_path):
    release = threading.Event()
    entered = threading.Event()

    def blocked(messages):
        entered.set()
        assert release.wait(30), "the test never released the model"
        return _responder(messages)

    llm = ScriptedLLM(responder=blocked)
    mem = _memory(tmp_path, llm)
    mem.extraction.in_background()
    mem.add("Ann", "I moved to Oslo.", time=_day(1))
    mem.add("Bob", "Nice, why Oslo?", time=_day(1, 11))
    # Days later: the first episode closes, and the worker starts on it...
    mem.add("Ann", "The new job starts Monday.", time=_day(5))
    assert entered.wait(10)
    # ...while add goes on storing (it would block on the model if it extracted inline).
    added = mem.add("Bob", "Good luck!", time=_day(5, 11))
    assert added.added and mem.search("good luck", k=1)[0].id == f"m:{added.id}"
    status = mem.stats().background_extraction
    assert status["running"] and status["episodes"] == 0  # nothing extracted while the model is held
    release.set()
    mem.close()  # flush: the open episode is closed and extracted too
    with open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder()) as again:
        assert _stages(again) == {"done": 2}
        pending = again.conn.execute(
            "select count(*) from messages m where ns = 't' and not exists "
            "(select 1 from unit_sources s join units u on u.id = s.unit_id "
            "where s.message_id = m.id and u.kind = 'episode')"
        ).fetchone()[0]
        assert pending == 0


def test_one_build_at_a_time(tmp_path):
    running = 0
    most = 0
    guard = threading.Lock()

    def counting(messages):
        nonlocal running, most
        with guard:
            running += 1
            most = max(most, running)
        try:
            return _responder(messages)
        finally:
            with guard:
                running -= 1

    mem = _memory(tmp_path, ScriptedLLM(responder=counting))
    mem.extraction.in_background()
    for day in range(1, 9):  # every add closes the episode before it and wakes the worker
        mem.add("Ann", f"Day {day}: I went for a run by the river.", time=_day(day))
    mem.close()
    assert most == 1
    with open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder()) as again:
        assert _stages(again) == {"done": 8}


def test_a_failing_model_is_reported_and_the_messages_stay(tmp_path, caplog):
    def broken(messages):
        raise RuntimeError("the model fell over")

    mem = _memory(tmp_path, ScriptedLLM(responder=broken))
    mem.extraction.in_background()
    mem.add("Ann", "I moved to Oslo.", time=_day(1))
    mem.add("Ann", "Now in Bergen.", time=_day(9))
    mem.close()
    assert "the model fell over" in caplog.text
    with open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder()) as again:
        assert again.stats().messages == 2


def test_background_extraction_needs_extract_llm(tmp_path):
    with open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder()) as mem:
        with pytest.raises(LocalmemError, match="extract = llm"):
            mem.extraction.in_background()


def test_a_worker_never_woken_does_nothing_at_close(tmp_path):
    llm = ScriptedLLM(responder=_responder)
    mem = _memory(tmp_path, llm)
    mem.extraction.in_background()
    mem.close()
    assert llm.calls == []


def test_add_waits_for_another_writer_instead_of_failing(tmp_path):
    """Another connection holds the write lock and commits while add waits: add goes on (a
    deferred transaction that had read before would fail at once with 'database is locked')."""

    with open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder()) as mem:
        mem.add("Ann", "First.", time=_day(1))
        other = raw_connection(tmp_path / "m.db")
        holding = threading.Event()

        def write_for_a_while():
            other.execute("BEGIN IMMEDIATE")
            other.execute("insert into meta (key, value) values ('writer-test', 'x')")
            holding.set()
            threading.Event().wait(0.5)
            other.execute("COMMIT")

        writer = threading.Thread(target=write_for_a_while)
        writer.start()
        assert holding.wait(10)
        added = mem.add("Ann", "Second, while the other connection writes.", time=_day(2))
        writer.join()
        other.close()
        assert added.added and mem.stats().messages == 2


def test_add_inside_the_callers_transaction_rolls_back_with_it(tmp_path):
    with open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder()) as mem:
        with pytest.raises(RuntimeError):
            with mem.conn:
                mem.add("Ann", "Never kept.", time=_day(1))
                raise RuntimeError("the caller changes its mind")
        assert mem.stats().messages == 0
