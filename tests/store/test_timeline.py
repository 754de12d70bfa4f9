"""Browse.timeline, period, context and conversation: the views `localmem serve` draws."""

from __future__ import annotations

import pytest

from localmem.errors import LocalmemError, NotFoundError
from tests.fakes import HashEmbedder
from tests.helpers import open_memory


@pytest.fixture
def mem(tmp_path):
    with open_memory(tmp_path / "t.db", embedder=HashEmbedder()) as memory:
        for i, (when, conv) in enumerate(
            [("2023-12-31T23:00", "a"), ("2024-01-01T09:00", "a"), ("2024-01-07T12:00", "b"), ("2024-03-15T08:00", "a")]
        ):
            memory.add("Ann", f"message {i}", time=when, conversation=conv, id=f"x{i}")
        yield memory


def test_months_and_weeks_include_the_empty_ones(mem):
    months = mem.browse.timeline("month")
    assert [(p.start, p.end, p.messages) for p in months] == [
        ("2023-12-01", "2024-01-01", 1),
        ("2024-01-01", "2024-02-01", 2),
        ("2024-02-01", "2024-03-01", 0),
        ("2024-03-01", "2024-04-01", 1),
    ]
    weeks = mem.browse.timeline("week")
    assert weeks[0].start == "2023-12-25" and weeks[1].start == "2024-01-01"  # Mondays
    assert weeks[1].messages == 2  # Monday 1 January and Sunday 7 January
    assert sum(p.messages for p in weeks) == 4 and all(p.end > p.start for p in weeks)
    with pytest.raises(LocalmemError, match="period"):
        mem.browse.timeline("year")


def test_a_speakers_timeline_and_who_speaks(mem):
    mem.add("Bob", "hello", time="2024-01-02T10:00", conversation="b", id="y1")
    assert [(p.start, p.messages) for p in mem.browse.timeline("month", speaker="Bob")] == [("2024-01-01", 1)]
    assert mem.browse.timeline("month", speaker="Nobody") == []
    assert [(s.speaker, s.messages) for s in mem.browse.speakers()] == [("Ann", 4), ("Bob", 1)]


def test_a_period_lists_its_conversations(mem):
    found = mem.browse.period("2024-01-01", "2024-02-01").to_dict()
    assert [(c["conversation"], c["messages"]) for c in found["conversations"]] == [("a", 1), ("b", 1)]
    assert mem.browse.period("2025-01-01", "2025-02-01").conversations == []


def test_context_and_conversation_windows(mem):
    first = mem.browse.conversation("a", 0, 10).to_dict()
    ids = [m["id"] for m in first["messages"]]
    assert len(ids) == 3 and not first["more_before"] and not first["more_after"]
    around = mem.browse.context(ids[1], around=1).to_dict()
    assert [m["id"] for m in around["messages"]] == ids and around["focus"] == ids[1]
    alone = mem.browse.context(ids[0], around=0).to_dict()
    assert [m["id"] for m in alone["messages"]] == ids[:1] and alone["more_after"]
    with pytest.raises(NotFoundError):
        mem.browse.conversation("nope")
    with pytest.raises(NotFoundError):
        mem.browse.context("m:9999")
