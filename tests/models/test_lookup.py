"""Prompt lookup's draft: what followed the last generated tokens earlier in the context."""

from __future__ import annotations

from localmem.models.backends.llama_private import draft


def test_the_longest_recent_match_gives_the_tokens_that_followed_it():
    context = [1, 2, 3, 4, 5, 9, 2, 3, 7, 8, 2, 3]
    # "2 3" occurred twice before; the latest one was followed by 7 8
    assert draft(context, max_ngram=3, length=2) == [7, 8]
    # a three-token match beats a later two-token one
    assert draft([5, 1, 2, 3, 6, 6, 2, 3, 9, 1, 2, 3], max_ngram=3, length=3) == [6, 6, 2]


def test_no_match_or_nothing_after_it_gives_no_draft():
    assert draft([1, 2, 3, 4], max_ngram=3, length=4) == []
    assert draft([7], max_ngram=3, length=4) == []
    assert draft([], max_ngram=3, length=4) == []
    # the draft stops where the context ends
    assert draft([4, 5, 4], max_ngram=2, length=4) == [5, 4]
