"""A question naming a time prefers what was said then, or told of then (search.time_fusion)."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

from localmem.retrieval import channels
from localmem.retrieval.query_time import EARLIEST, Range
from localmem.retrieval.search import SearchParams


def _said(mem):
    return {
        "may1": mem.add("Joanna", "Movie night at home, popcorn and blankets.", time="2022-05-01T20:00:00"),
        "told": mem.add("Joanna", "I watched The Lord of the Rings last night!", time="2022-05-02T11:54:00"),
        "june": mem.add("Joanna", "What movie did I watch? Inception, what a movie!", time="2022-06-10T09:00:00"),
        "later": mem.add("Joanna", "Yesterday I watched a movie with Nate.", time="2022-06-11T09:00:00"),
    }


def test_told_of_finds_a_later_message_telling_of_the_named_day(mem):
    said = _said(mem)
    may1 = Range(dt.date(2022, 5, 1), dt.date(2022, 5, 1), "on 1 May, 2022")
    assert channels.told_of(mem.conn, "test", may1) == {("m", said["told"].id)}  # not "yesterday" of 10 June
    # "before May" names no time of its own: nothing is told of it.
    assert channels.told_of(mem.conn, "test", Range(EARLIEST, dt.date(2022, 5, 1), "before May")) == set()


def test_a_question_naming_a_day_ranks_what_was_said_or_told_of_then_first(mem):
    said = _said(mem)
    question = "What movie did Joanna watch on 1 May, 2022?"
    ids = [h.id for h in mem.search(question, k=4)]
    assert {ids[0], ids[1]} == {f"m:{said['may1'].id}", f"m:{said['told'].id}"}, ids
    # Without the time's weight the June messages, which repeat the question's words, rank above it.
    plain = [h.id for h in mem.search(question, k=4, recipe=replace(SearchParams(), range_weight=0.0))]
    assert plain.index(f"m:{said['told'].id}") > plain.index(f"m:{said['june'].id}"), plain
