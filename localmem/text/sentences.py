"""Sentences worth a vector of their own: how a long message is cut into parts."""

from __future__ import annotations

import re

# A sentence ends after . ! ? (runs of them, with any closing quotes or brackets) followed
# by a space, or at a line break.
_SENTENCE_END = re.compile(r"[.!?]+[\"')\]]*(?=\s)|\n")
PART_MIN_WORDS = 6
MAX_PARTS = 64


def sentence_spans(text: str, min_words: int = PART_MIN_WORDS, max_parts: int = MAX_PARTS
                   ) -> list[tuple[int, int]]:
    """The ``(start, end)`` character spans of ``text``'s sentences worth a vector of their own:
    those of at least ``min_words`` words, when there are at least two of them (a message of
    one sentence is its own part), the first ``max_parts``.

    Each is embedded on its own (``message_parts``), so a question about one thing said
    among others matches what was said instead of the whole message's average. Shorter
    sentences stay in the whole message only: embedded as "Priya: Found a flat!", they are
    mostly the speaker's name and match any question naming her (simulated on the LoCoMo dev split,
    pooled recall@10 was 82.2 with parts of three words or more, 84.1 with six, 82.7 with ten).
    """
    spans: list[tuple[int, int]] = []
    start = 0
    for end in [m.end() for m in _SENTENCE_END.finditer(text)] + [len(text)]:
        piece = text[start:end]
        stripped = piece.strip()
        if len(stripped.split()) >= min_words:
            first = start + len(piece) - len(piece.lstrip())
            spans.append((first, first + len(stripped)))
        start = end
    return spans[:max_parts] if len(spans) >= 2 else []
