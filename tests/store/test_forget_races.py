"""A forget racing writers: it decides what goes and deletes it in one write transaction, so a
message added meanwhile is either deleted and listed in the report, or kept; the confirmation
its writer got is never contradicted.

Before: the forget worked out the sources it would leave empty before its transaction began,
and deleting them took a message added to them in between (confirmed as ``m:2``, reported
nowhere). The hook here is :func:`purge.step`, called between the steps, not a sleep.
"""

from __future__ import annotations

import threading

import pytest

from localmem.config import Config
from localmem.errors import StoreLockedError
from localmem.store import purge
from tests.fakes import HashEmbedder
from tests.helpers import open_memory


def blocked_notice(mem) -> threading.Event:
    """An event set the first time ``mem``'s connection waits for the write lock (its busy
    handler is called), the handler otherwise unchanged."""
    from localmem.store.db import _Patience

    waiting = threading.Event()
    patience = _Patience(60_000)

    def handler(count: int) -> bool:
        waiting.set()
        return patience(count)

    mem.conn.raw.set_busy_handler(handler)
    return waiting


def test_an_add_between_deciding_and_deleting_waits_and_is_kept(tmp_path, monkeypatch):
    path = tmp_path / "m.db"
    mem = open_memory(path, "t", embedder=HashEmbedder())
    first = mem.add("Ana", "the only message of chat c", conversation="c")
    other = open_memory(path, "t", embedder=HashEmbedder())
    waiting = blocked_notice(other)
    added: list = []
    writer = threading.Thread(target=lambda: added.append(other.add("Ben", "added while forgetting", conversation="c")))

    def at(step: str) -> None:
        if step == "decided":  # the forget has chosen; the writer now tries to add to the same source
            writer.start()
            assert waiting.wait(30), "the writer did not wait for the forget's write lock"

    monkeypatch.setattr(purge, "step", at)
    report = mem.forget(ids=[f"m:{first.id}"]).to_dict()
    writer.join(30)
    assert report["messages"] == [f"m:{first.id}"] and report["counts"]["sources"] == 1
    assert added and added[0].added

    assert mem.stats().messages == 1  # the confirmed message is there
    found = mem.conn.execute("select id, text from messages").fetchall()
    assert found == [(added[0].id, "added while forgetting")]
    other.close()
    mem.close()


def test_a_writer_that_cannot_wait_is_refused_not_confirmed_then_lost(tmp_path, monkeypatch):
    path = tmp_path / "m.db"
    mem = open_memory(path, "t", embedder=HashEmbedder())
    first = mem.add("Ana", "the only message of chat c", conversation="c")
    impatient = open_memory(path, "t", embedder=HashEmbedder(), config=Config(busy_timeout_ms=0))
    outcome: list = []

    def at(step: str) -> None:
        if step == "decided":
            try:
                outcome.append(impatient.add("Ben", "added while forgetting", conversation="c"))
            except StoreLockedError as exc:
                outcome.append(exc)

    monkeypatch.setattr(purge, "step", at)
    report = mem.forget(ids=[f"m:{first.id}"]).to_dict()
    assert len(outcome) == 1 and isinstance(outcome[0], StoreLockedError), outcome
    assert report["messages"] == [f"m:{first.id}"] and mem.stats().messages == 0
    impatient.close()
    mem.close()


@pytest.mark.parametrize("target", ["conversation", "ids", "source"])
def test_adders_and_forgets_in_threads_every_confirmed_add_is_kept_or_reported(tmp_path, target):
    """3 adders (60 adds each) and 2 forgetters on one conversation, each with its own connection."""
    path = tmp_path / "m.db"
    open_memory(path, "t", embedder=HashEmbedder()).close()
    confirmed: list[str] = []
    reported: list[str] = []
    errors: list[BaseException] = []
    done = threading.Event()
    lock = threading.Lock()

    def adder(n: int) -> None:
        try:
            with open_memory(path, "t", embedder=HashEmbedder()) as mem:
                for i in range(60):
                    text = f"message {i} from writer {n}"
                    mem.add(f"writer{n}", text, conversation="c")
                    with lock:
                        confirmed.append(text)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    def forgetter() -> None:
        try:
            with open_memory(path, "t", embedder=HashEmbedder()) as mem:
                while not done.is_set():
                    try:
                        if target == "conversation":
                            report = mem.forget(conversation="c").to_dict()
                        else:
                            rows = mem.conn.execute("select id, source_id from messages order by id").fetchall()
                            if not rows:
                                continue
                            if target == "ids":
                                report = mem.forget(ids=[f"m:{rows[0][0]}"]).to_dict()
                            else:
                                report = mem.forget(source_id=rows[0][1]).to_dict()
                    except Exception as exc:  # noqa: BLE001 - a target gone meanwhile is fine
                        if "no conversation" in str(exc) or "no message" in str(exc) or "no source" in str(exc):
                            continue
                        raise
                    with lock:
                        reported.extend(report["messages"])
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    adders = [threading.Thread(target=adder, args=(n,)) for n in range(3)]
    forgetters = [threading.Thread(target=forgetter) for _ in range(2)]
    for t in adders + forgetters:
        t.start()
    for t in adders:
        t.join(300)
    done.set()
    for t in forgetters:
        t.join(300)
    import traceback

    assert not errors, "".join(traceback.format_exception(errors[0]))
    with open_memory(path, "t", embedder=HashEmbedder()) as mem:
        present = {row[0] for row in mem.conn.execute("select text from messages")}
    assert len(confirmed) == 180 and present <= set(confirmed)
    # Message ids are reused once the highest one is deleted, so the reports are checked by
    # count: every confirmed add is still there, or was one of the messages a report listed.
    assert len(confirmed) == len(present) + len(reported), (len(confirmed), len(present), len(reported))
