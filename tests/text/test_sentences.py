"""How much of a message asks rather than says (question_share)."""

from __future__ import annotations

import pytest

from localmem.text.sentences import question_share


@pytest.mark.parametrize(
    ("text", "share"),
    [
        ("What breed is Biscuit?", 1.0),  # breed, biscuit: all asked
        ("Congrats! What breed is Biscuit?", 2 / 3),  # congrats is said, breed and biscuit asked
        ('Did she say "really?"', 1.0),  # a question mark inside closing quotes still asks
        ("I adopted a puppy named Biscuit yesterday!", 0.0),
        ("Why?", 0.0),  # no content words: nothing is asked about
        ("", 0.0),
    ],
)
def test_question_share_counts_the_content_words_in_questions(text, share):
    assert question_share(text) == pytest.approx(share)
