"""``mem.extraction`` (localmem/extraction.py): what a stored message sets off, and background
extraction's switch. The extraction itself is tested in tests/pipeline/."""

from __future__ import annotations

import pytest

from localmem.errors import LocalmemError


def test_without_an_llm_a_gap_closes_an_episode_and_nothing_runs_in_the_background(mem):
    mem.add("Ann", "I adopted a puppy called Rex", "2023-05-08T10:00:00")
    mem.add("Ann", "Rex likes the beach", "2023-06-09T10:00:00")  # a month later: a new episode
    assert len(mem.browse.episodes()) == 1  # the first one is closed; the open buffer is not
    assert mem.extraction.segment_without_llm() == 1  # as the end of an ingest closes the last
    assert mem.extraction.status() is None and "background_extraction" not in mem.stats().to_dict()
    mem.extraction.stop()  # nothing running: nothing to do


def test_background_extraction_needs_the_llm_and_consolidation_a_mode(mem):
    with pytest.raises(LocalmemError, match="background extraction needs extract = llm"):
        mem.extraction.in_background()
    with pytest.raises(LocalmemError, match="consolidate needs a mode: fast or full"):
        mem.extraction.consolidate(mode="off")
    with pytest.raises(LocalmemError, match="--consolidate nope is unknown; use one of: off, fast, full"):
        mem.extraction.extract(consolidate="nope")
    with pytest.raises(LocalmemError, match="--workers must be at least 1, got 0"):
        mem.extraction.flush(workers=0)
