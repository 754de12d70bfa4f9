"""Sentences worth a vector of their own: how a long message is cut into parts."""

from __future__ import annotations

import re

from .words import content_words

# A sentence ends after . ! ? (runs of them, with any closing quotes or brackets) followed
# by a space, or at a line break.
_SENTENCE_END = re.compile(r"[.!?]+[\"')\]]*(?=\s)|\n")
PART_MIN_WORDS = 6
MAX_PARTS = 64


def spans(text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` spans of all of ``text``'s sentences and lines, stripped. A point
    not followed by a space ends nothing: "0.5%", "4.5 to 5.5" and "£7.50" stay whole."""
    out: list[tuple[int, int]] = []
    start = 0
    for end in [m.end() for m in _SENTENCE_END.finditer(text)] + [len(text)]:
        piece = text[start:end]
        if piece.strip():
            first = start + len(piece) - len(piece.lstrip())
            out.append((first, first + len(piece.strip())))
        start = end
    return out


def split(text: str) -> list[str]:
    """``text``'s sentences and lines (see :func:`spans`)."""
    return [text[a:b] for a, b in spans(text)]


def sentence_spans(text: str, min_words: int = PART_MIN_WORDS, max_parts: int = MAX_PARTS) -> list[tuple[int, int]]:
    """The ``(start, end)`` character spans of ``text``'s sentences worth a vector of their own:
    those of at least ``min_words`` words, when there are at least two of them (a message of
    one sentence is its own part), the first ``max_parts``.

    Each is embedded on its own (``message_parts``), so a question about one thing said
    among others matches what was said instead of the whole message's average. Shorter
    sentences stay in the whole message only: embedded as "Priya: Found a flat!", they are
    mostly the speaker's name and match any question naming her (why six words:
    docs/decisions.md#sentence-parts).
    """
    kept = [(a, b) for a, b in spans(text) if len(text[a:b].split()) >= min_words]
    return kept[:max_parts] if len(kept) >= 2 else []


def question_share(text: str) -> float:
    """The share of ``text``'s content words that are in its questions (sentences ending with
    "?"): 1.0 for "What was it called?", 0.0 for a message that asks nothing, in between for
    "Great job! What was it called?" (0.6). A message without content words asks nothing."""
    asked = said = 0
    for sentence in split(text):
        n = len(content_words(sentence))
        said += n
        if sentence.rstrip("\"')] ").endswith("?"):
            asked += n
    return asked / said if said else 0.0
