"""What the vector channels embed for a query: the question without its speakers' names.

A message is embedded with who said it ("Caroline: I'm reading "Becoming Nicole"…",
:func:`localmem.models.embedding.message_text`), so the name in "What book is Caroline
reading?" is close to every message Caroline wrote and to every one that addresses her, and
closest to the short ones where the name is most of the text ("Thanks, Caroline!"). It says
nothing about the topic, and the person is already taken care of elsewhere: BM25 still
matches the name, and ask's focus keeps the evidence to the person asked about. Embedded
without the name, the question is near the messages about its topic.

Measured: docs/decisions.md#speaker-free-query.
"""

from __future__ import annotations

import re
from typing import Iterable


def speaker_names(names: Iterable[str]) -> list[str]:
    """The names worth taking out of a query: those written with a capital letter. Role-named
    speakers of chat exports ("user", "assistant") are ordinary words in a question ("what did
    the assistant suggest?") and stay."""
    return [name for name in names if name[:1].isupper() and name.strip()]


def without_names(query: str, names: Iterable[str]) -> str:
    """``query`` without ``names`` (whole words, as written, with a possessive "'s"), spaces
    tidied; the query itself when nothing else would be left."""
    chosen = sorted({name.strip() for name in names if name.strip()}, key=len, reverse=True)
    if not chosen:
        return query
    pattern = re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, chosen)) + r")(?:['’]s)?(?!\w)")
    stripped = " ".join(pattern.sub(" ", query).split())
    # A question that is only a name ("Caroline?") keeps it: there is nothing else to embed.
    return stripped if re.search(r"\w", stripped) else query
