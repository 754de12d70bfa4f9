"""What an answer cites: the source messages of the items the model named, read back from
the store (never generated), and the message that states the answer when the model named its
neighbour (:func:`stating`, :func:`naming`: the rule ``cite_statement``)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Mapping, Sequence

from ..store.engine import Store
from ..store.rows import all_rows
from ..text.words import content_words, stem
from ..types import Citation, Hit
from .question import Question


def citations(conn: Store, hits: Sequence[Hit]) -> list[Citation]:
    """The distinct source messages of ``hits``, in time order."""
    ids = list(dict.fromkeys(s.message_id for h in hits for s in h.sources))
    if not ids:
        return []
    rows = all_rows(conn.run("messages_by_ids", {"ids": json.dumps(ids)}))
    found = [
        Citation(mid, ext, conv, speaker, sent_at, text)
        for mid, ext, conv, _session, speaker, _role, text, sent_at, _att in rows
    ]
    return sorted(found, key=lambda c: (c.time is None, c.time or "", c.message_id))


def renamed(found: list[Citation], names: Mapping[str, str] | None) -> list[Citation]:
    """``found`` with each speaker shown by the name ``names`` gives them (the user's own)."""
    if names:
        for c in found:
            c.speaker = names.get(c.speaker, c.speaker)
    return found


def stating(question: Question, text: str, evidence: Sequence[Hit], supports: Sequence[int]) -> list[int]:
    """The items (1-based) an answer ``text`` rests on, with the message that states it: when
    a message of the evidence holds more of the answer's own words (those not in the question)
    than any cited item, and at least half of them, it is cited too. Of several such messages,
    the one said nearest in time to a cited item: the model found the passage and named its
    neighbour ("I'd start on March 1st", two lines after "I got the offer from the Lisbon
    design studio"); then the one the search ranked highest. An answer without words of its
    own (a date, "Yes"), or whose words neither the cited items nor at least half of another
    message hold, is left to :func:`naming`.
    """
    words = stems(text) - question.words
    if not words:
        return naming(question, evidence, supports)
    in_cited = max((len(words & said_stems(evidence[n - 1])) for n in supports), default=0)
    said = [h for h in evidence if h.kind == "message"]
    held = [len(words & said_stems(h)) for h in said]
    most = max(held, default=0)
    if most <= in_cited or 2 * most < len(words):
        # A cited item holding the answer's words is the one that states it; else see naming.
        return list(supports) if in_cited else naming(question, evidence, supports)
    cited = [t for t in (_when(evidence[n - 1]) for n in supports) if t is not None]

    def distance(hit: Hit) -> float:
        when = _when(hit)
        return min((abs((when - t).total_seconds()) for t in cited), default=0.0) if when else float("inf")

    top = min((h for h, n in zip(said, held) if n == most), key=lambda h: (distance(h), -h.score))
    return sorted({*supports, evidence.index(top) + 1})


def naming(question: Question, evidence: Sequence[Hit], supports: Sequence[int]) -> list[int]:
    """The items (1-based) an answer that no message states in its words (a date, "Yes") rests
    on: when a message said the same day as a cited item names more of the question's words
    than every cited item, and at least two, it is cited too (the one naming most; then the
    search's higher ranked). Such an answer is the day of what the model cited, and the model
    often names a turn beside the one that tells the event ("When did Gina team up with a local
    artist?" citing "So I worked with the artist to make it happen" two turns after "I just
    teamed up with a local artist"). Another day's message is not: its date is not the
    answer's. Nor is a question: it names the asked words and states nothing.
    """
    words = question.words
    cited_days = {h.day for h in (evidence[n - 1] for n in supports) if h.day}
    if not words or not cited_days:
        return list(supports)
    in_cited = max((len(words & said_stems(evidence[n - 1])) for n in supports), default=0)
    same_day = [
        (len(words & said_stems(h)), h)
        for h in evidence
        if h.kind == "message" and h.day in cited_days and not said_text(h).rstrip().endswith("?")
    ]
    most = max((n for n, _ in same_day), default=0)
    if most <= in_cited or most < 2:
        return list(supports)
    top = max((h for n, h in same_day if n == most), key=lambda h: h.score)
    return sorted({*supports, evidence.index(top) + 1})


def _when(hit: Hit) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(hit.time[:19]) if hit.time else None
    except ValueError:
        return None


def stems(text: str) -> set[str]:
    """The stems of ``text``'s content words."""
    return {stem(w) for w in content_words(text)}


def said_text(hit: Hit) -> str:
    """What a message hit said (not its speaker's name, nor an image's caption); a unit's text."""
    return hit.said if hit.kind == "message" and hit.said is not None else hit.text


def said_stems(hit: Hit) -> set[str]:
    """The stems of what ``hit`` said (:func:`said_text`)."""
    return stems(said_text(hit))
