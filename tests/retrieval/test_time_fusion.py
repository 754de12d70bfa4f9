"""A question naming a time prefers what was said then (search.time_fusion)."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

import pytest

from localmem.retrieval.query_time import EARLIEST, Range
from localmem.retrieval.search import SearchParams, time_fusion


def _said(mem):
    return {
        "may": mem.add("Nate", "Looky here, I got this new pup for you!", time="2022-05-25T15:00:00"),
        "june": mem.add("Nate", "What did I do for Joanna? I baked her a cake!", time="2022-06-10T09:00:00"),
    }


def test_what_was_said_in_the_named_time_counts_double(mem):
    said = _said(mem)
    may, june = ("m", said["may"].id), ("m", said["june"].id)
    day = Range(dt.date(2022, 5, 25), dt.date(2022, 5, 25), "on 25 May, 2022")
    fused = time_fusion(mem.conn, day, [(june, 1.0, {"bm25": 1}), (may, 0.6, {"temporal": 1})], 1.0)
    assert fused == [(may, pytest.approx(1.2), {"temporal": 1}), (june, 1.0, {"bm25": 1})]


def test_search_weighs_the_time_a_question_names(mem):
    said = _said(mem)
    question = "What did Nate do for Joanna on 25 May, 2022?"
    score = {h.id: h.score for h in mem.search(question, k=2)}
    plain = {h.id: h.score for h in mem.search(question, k=2, recipe=replace(SearchParams(), range_weight=0.0))}
    may, june = f"m:{said['may'].id}", f"m:{said['june'].id}"
    assert score[may] == pytest.approx(2 * plain[may]) and score[june] == pytest.approx(plain[june])


def test_only_a_closed_range_weighs():
    fused = [(("m", 1), 1.0, {}), (("m", 2), 0.9, {})]
    before = Range(EARLIEST, dt.date(2022, 5, 25), "before 25 May")  # names no time of its own
    assert time_fusion(None, before, fused, 1.0) == fused  # type: ignore[arg-type]  # no query made
