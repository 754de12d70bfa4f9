"""``mem.browse`` (localmem/browse.py): the read-only views share the Memory's connection and
lock, check their arguments, and stop with the Memory."""

from __future__ import annotations

import threading

import pytest

from localmem.errors import LocalmemError


def test_browse_calls_take_turns_with_the_memorys_own(mem):
    mem.add("Ann", "I adopted a puppy called Rex", "2023-05-08T10:00:00")
    done = threading.Event()

    def browse() -> None:
        mem.browse.episodes()
        done.set()

    with mem._lock:  # a call of the Memory in progress
        reader = threading.Thread(target=browse)
        reader.start()
        assert not done.wait(0.3)  # it waits for the Memory's call to return
    assert done.wait(10)
    reader.join()


def test_browse_reads_what_the_memory_just_wrote_and_stops_with_it(mem):
    added = mem.add("Ann", "I adopted a puppy called Rex", "2023-05-08T10:00:00")
    assert mem.browse.get(added.ref).text == "I adopted a puppy called Rex"  # one connection: no lag
    assert mem.browse.show(added.ref) == mem.browse.get(added.ref)
    mem.close()
    with pytest.raises(LocalmemError, match="closed"):
        mem.browse.episodes()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda b: b.timeline("year"), "period year is unknown; use one of: week, month"),
        (lambda b: b.context("m:1", around=201), "around must be a number from 0 to 200"),
        (lambda b: b.conversation("c", 10, 5), "a conversation window is 1 to 1,000 messages long"),
        (lambda b: b.conversation("c", 0, 1001), "a conversation window is 1 to 1,000 messages long"),
        (lambda b: b.period("", "2024-01-01"), "a period needs a start and an end"),
        (lambda b: b.period("2024-01-01", "not a date"), "end"),
    ],
)
def test_browse_refuses_bad_arguments_before_reading(mem, call, message):
    with pytest.raises(LocalmemError, match=message):
        call(mem.browse)
