"""The evidence an answer reads: which hits, in what order, and each as one dated line.

The evidence goes to the model in time order, each item with its absolute date, its text on
one line without brackets of its own (:func:`~localmem.prompts.item_text`: a stored message
cannot open an item or imitate a reply). A message is shown from its parts
(:class:`~localmem.types.Hit`): its speaker, what was said, and the captions of its images
marked as image descriptions, not as what the speaker said.
"""

from __future__ import annotations

import datetime as dt
from typing import Callable, Mapping, Sequence

from ..prompts import answer as prompt
from ..prompts import item_text
from ..retrieval.hits import hydrate
from ..store.engine import Store
from ..text import time_words
from ..text.language import detect
from ..text.times import day_text, with_dates
from ..types import Hit


def format_date(iso: str | None) -> str:
    """``2023-05-08T13:56:00`` → ``8 May 2023`` (unknown dates say so)."""
    if not iso:
        return "date unknown"
    try:
        day = dt.date.fromisoformat(iso[:10])
    except ValueError:
        return iso
    return day_text(day)


def evidence_line(hit: Hit, dates: bool = False, names: Mapping[str, str] | None = None) -> str:
    """One dated line per hit (a message's starts with its speaker); ``dates``: a message's
    relative times are followed by the dates they mean; ``names``: a speaker shown by another
    name (the user's own name instead of "user")."""
    return f"{format_date(hit.time)} - {evidence_text(hit, dates, names)}"


def evidence_text(hit: Hit, dates: bool = False, names: Mapping[str, str] | None = None) -> str:
    """A hit's text on one line, marked when a newer unit replaced it."""
    replaced = " (no longer true: replaced later)" if hit.superseded_by else ""
    if hit.kind == "message" and hit.said is not None:
        speaker = hit.speaker or ""
        text, captions = f"{(names or {}).get(speaker, speaker)}: {hit.said}", hit.captions
    else:
        text, captions = hit.text, []
    text = item_text(text)  # before the dates are added: their brackets are the only ones
    said_on = said_day([hit]) if dates else None
    if said_on is not None:
        text = with_dates(text, said_on)
        # A message in another language gets its own time words dated too ("gestern", "上周"):
        # the small model otherwise reckons them itself, or copies the word as the answer.
        if detect(hit.said or hit.text) in time_words.SUPPORTED:
            text = time_words.with_dates(text, said_on)
    # A caption describes the image the speaker shared; it is not what they said (prompts/answer).
    shown = "".join(f" ({prompt.IMAGE_DESCRIPTION}: {item_text(c)})" for c in captions)
    return f"{text}{shown}{replaced}"


def said_day(hits: Sequence[Hit]) -> dt.date | None:
    """The day the first message among ``hits`` was said (what its relative times count from);
    ``None`` when none is a message with a date."""
    for hit in hits:
        if hit.kind == "message" and hit.time:
            return hit.day  # None: a time that is not a date
    return None


def in_time_order(hits: Sequence[Hit]) -> list[Hit]:
    """Oldest first; undated hits last, in their rank order (sorted() is stable)."""
    return sorted(hits, key=lambda h: (h.time is None, h.time or ""))


# A gist or fact resting on more messages than this is a summary: it is shown as itself.
SOURCE_MESSAGES = 2


def as_messages(conn: Store, hits: Sequence[Hit], per_unit: int = SOURCE_MESSAGES) -> list[Hit]:
    """The evidence in the speakers' words: each gist or fact replaced, at its rank, by the
    messages it rests on (when there are at most ``per_unit``); messages already shown are not
    repeated. Episodes and broader units stay as they are, after all the messages: a token
    budget filled in this order gives the model what was said, with its date, before summaries.

    (A summary covers an asked-about message more often than it says the detail asked for:
    docs/decisions.md#messages-first.)"""
    wanted = [
        s.message_id for h in hits if h.kind in ("gist", "fact") and 0 < len(h.sources) <= per_unit for s in h.sources
    ]
    messages = hydrate(conn, [("m", mid) for mid in wanted])
    out: list[Hit] = []
    shown: set[str] = set()
    for hit in hits:
        if hit.kind in ("gist", "fact") and 0 < len(hit.sources) <= per_unit:
            expanded = [messages[("m", s.message_id)] for s in hit.sources if ("m", s.message_id) in messages]
        else:
            expanded = [hit]
        for item in expanded:
            if item.id not in shown:
                shown.add(item.id)
                if item is not hit:
                    item.score, item.channels = hit.score, hit.channels
                out.append(item)
    return [h for h in out if h.kind == "message"] + [h for h in out if h.kind != "message"]


# Room kept for the question. A fixed allowance (not the question's own length) gives every
# question of a conversation the same evidence, so the model's prefix cache holds it once.
QUESTION_TOKENS = 96


def context_budget(n_ctx: int, count: Callable[[str], int], question: str) -> int:
    """Evidence tokens that fit the model's context next to the answer prompt and reply."""
    fixed = count(prompt.SYSTEM) + max(QUESTION_TOKENS, count(question)) + 48  # template, "Today is …"
    return max(0, n_ctx - fixed - prompt.MAX_TOKENS)


def fit_context(hits: Sequence[Hit], n_ctx: int, count: Callable[[str], int], question: str) -> list[Hit]:
    """``hits`` in time order, without the oldest whose evidence lines do not fit the model's
    context next to the answer prompt and reply (the newest are kept: with every message of
    a conversation, this is the "full-context" baseline, the oldest part cut)."""
    budget = context_budget(n_ctx, count, question)
    ordered = in_time_order(hits)
    used, start = 0, len(ordered)
    for index in range(len(ordered) - 1, -1, -1):
        tokens = count(evidence_line(ordered[index])) + 4  # "[n] " and the line break
        if used + tokens > budget:
            break
        used += tokens
        start = index
    return ordered[start:]


def session_diverse(hits: Sequence[Hit]) -> list[Hit]:
    """``hits`` with each session's best first: the best hit of every session in rank order,
    then every session's second best, and so on. A count ("how many …") rests on messages spread
    over sessions, and a budget filled in rank order holds the few best of one or two of them
    (issue 51: the things to count were told in three or more sessions)."""
    rounds: dict[tuple[str, str], int] = {}
    keyed = []
    for index, hit in enumerate(hits):
        source = hit.sources[0] if hit.sources else None
        session = (source.conversation, source.session) if source else ("", hit.id)
        rounds[session] = rounds.get(session, -1) + 1
        keyed.append((rounds[session], index, hit))
    return [hit for _round, _index, hit in sorted(keyed, key=lambda k: (k[0], k[1]))]
