"""retrieval.batch.SearchArgs: the keywords search, search_many, search_params and ask share,
checked once (checked_params)."""

from __future__ import annotations

import pytest

from localmem.errors import LocalmemError


def test_the_same_keywords_shape_search_params_and_ask(mem):
    mem.add("Ann", "I adopted a puppy called Rex", "2023-05-08T10:00:00", conversation="c")
    mem.add("Bob", "Rex likes the beach", "2023-05-09T10:00:00", conversation="c")
    params = mem.search_params(k=3, channels=["bm25"], speaker="Bob", since="2023-05-01")
    assert (params.k, params.channels) == (3, ("bm25",))
    assert params.filters is not None and (params.filters.speaker, params.filters.since) == ("Bob", "2023-05-01")
    assert mem.search_params().filters is None and mem.search_params().k == 10
    assert [h.text for h in mem.search("Rex", k=5, channels=["bm25"], speaker="Bob")] == ["Bob: Rex likes the beach"]
    [found] = mem.search_many(["Rex"], k=5, channels=["bm25"], speaker="Ann")
    assert [h.text for h in found] == ["Ann: I adopted a puppy called Rex"]


def test_an_unknown_keyword_is_a_type_error_and_a_bad_value_one_line(mem):
    with pytest.raises(TypeError, match="unexpected keyword argument 'speakr'"):
        mem.search("Rex", speakr="Bob")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'conversations'"):
        mem.forget(conversations="c")  # type: ignore[call-arg]
    with pytest.raises(LocalmemError, match="k must be at least 1"):
        mem.search("Rex", k=0)
    with pytest.raises(LocalmemError, match="unknown ask mode 'slow'"):
        mem.ask("Where is Rex?", mode="slow")
    with pytest.raises(LocalmemError, match="work with ask's fast mode"):
        mem.ask("Where is Rex?", mode="agentic", speaker="Ann")
