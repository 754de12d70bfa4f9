"""Answering a question from retrieved memory: evidence → one LLM call → answer, citations
or an honest refusal (REMem-S).

The evidence goes to the model in time order, each item with its absolute date. The model
names the items it used; numbers that point to nothing are dropped, and the citations are
the source messages of the items that remain, read back from the store, never generated.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import re
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

from .llm import LLM, JsonFieldStream, complete_structured
from .prompts import answer as prompt
from .queries import q
from .search import Hit, hydrate

_REFUSALS = (prompt.REFUSAL, "no information available", "not mentioned", "no information")


@dataclass
class Citation:
    """A stored message an answer rests on."""

    message_id: int
    external_id: str
    conversation: str
    speaker: str
    time: str | None
    text: str


@dataclass
class Answer:
    """What :meth:`Memory.ask` returns."""

    question: str
    answer: str
    refused: bool
    confidence: float | None
    citations: list[Citation]
    evidence: list[Hit]  # as numbered in the prompt: time order
    supports: list[int]  # the valid item numbers the model named (1-based)
    mode: str = "fast"
    today: str | None = None
    timings: dict[str, float] = field(default_factory=dict)  # seconds: search, answer, total
    tokens: dict[str, int] = field(default_factory=dict)  # prompt, completion (LLM calls)
    calls: int = 0
    error: str | None = None  # the model's reply stayed invalid after the repair retry
    refusal: str | None = None  # why: "model" (it said so), "no evidence", "invalid reply", "someone else"
    prompt_version: str = prompt.VERSION
    steps: list[dict[str, Any]] = field(default_factory=list)  # agentic mode: each tool call

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def format_date(iso: str | None) -> str:
    """``2023-05-08T13:56:00`` → ``8 May 2023`` (unknown dates say so)."""
    if not iso:
        return "date unknown"
    try:
        day = dt.date.fromisoformat(iso[:10])
    except ValueError:
        return iso
    return f"{day.day} {day.strftime('%B')} {day.year}"


def evidence_line(hit: Hit) -> str:
    """One dated line per hit (a message hit's text already starts with its speaker)."""
    replaced = " (no longer true: replaced later)" if hit.superseded_by else ""
    return f"{format_date(hit.time)} - {' '.join(hit.text.split())}{replaced}"


def in_time_order(hits: Sequence[Hit]) -> list[Hit]:
    """Oldest first; undated hits last, in their rank order (sorted() is stable)."""
    return sorted(hits, key=lambda h: (h.time is None, h.time or ""))


# A gist or fact resting on more messages than this is a summary: it is shown as itself.
SOURCE_MESSAGES = 2


def as_messages(conn: Any, hits: Sequence[Hit], per_unit: int = SOURCE_MESSAGES) -> list[Hit]:
    """The evidence in the speakers' words: each gist or fact replaced, at its rank, by the
    messages it rests on (when there are at most ``per_unit``); messages already shown are not
    repeated; episodes and broader units stay as they are."""
    wanted = [s.message_id for h in hits if h.kind in ("gist", "fact") and 0 < len(h.sources) <= per_unit
              for s in h.sources]
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
    return out


def recent_messages(conn: Any, ns: str, budget: int, count: Callable[[str], int]) -> list[Hit]:
    """The namespace's newest messages whose evidence lines fit ``budget`` tokens, oldest
    first: the "full-context" baseline (as much of the conversation as the context holds,
    the oldest part cut)."""
    out: list[Hit] = []
    used = 0
    rows = iter(conn.execute(q("namespace_messages_newest"), {"ns": ns}))
    while batch := [row[0] for row in itertools.islice(rows, 200)]:
        found = hydrate(conn, [("m", mid) for mid in batch])
        for mid in batch:
            hit = found.get(("m", mid))
            if hit is None:
                continue
            tokens = count(evidence_line(hit)) + 4  # "[n] " and the line break
            if used + tokens > budget:
                return out[::-1]
            out.append(hit)
            used += tokens
    return out[::-1]


# Room kept for the question. A fixed allowance (not the question's own length) gives every
# question of a conversation the same evidence, so the model's prefix cache holds it once.
QUESTION_TOKENS = 96


def context_budget(n_ctx: int, count: Callable[[str], int], question: str) -> int:
    """Evidence tokens that fit the model's context next to the answer prompt and reply."""
    fixed = count(prompt.SYSTEM) + max(QUESTION_TOKENS, count(question)) + 48  # template, "Today is …"
    return max(0, n_ctx - fixed - prompt.MAX_TOKENS)


def is_refusal(text: str) -> bool:
    said = re.sub(r"[^a-z ]", " ", text.lower())
    said = " ".join(said.split())
    return not said or any(phrase in said for phrase in _REFUSALS)


def answer(conn: Any, llm: LLM | None, question: str, hits: Sequence[Hit], today: dt.date | None,
           on_text: Callable[[str], None] | None = None, speakers: Sequence[str] = ()) -> Answer:
    """Answer ``question`` from ``hits`` (already cut to the token budget) with one call.

    No evidence means a refusal without calling the model. ``on_text`` receives the answer
    text as the model writes it (the first attempt's; a repaired reply is not streamed).
    ``speakers``: the conversation's speakers, for the check that an answer about one of them
    rests on something they said or something said about them (:func:`about_someone_else`).
    """
    evidence = in_time_order(hits)
    day = format_date(today.isoformat()) if today else None
    out = Answer(question=question, answer=prompt.REFUSAL, refused=True, confidence=None, citations=[],
                 evidence=evidence, supports=[], today=day, refusal="no evidence")
    if not evidence or llm is None:
        return out
    started = time.perf_counter()
    result = complete_structured(llm, prompt.build(question, [evidence_line(h) for h in evidence], day),
                                 prompt.SCHEMA, prompt.MAX_TOKENS,
                                 on_text=JsonFieldStream("answer", on_text) if on_text else None)
    out.timings["answer"] = round(time.perf_counter() - started, 3)
    out.tokens = {"prompt": result.prompt_tokens, "completion": result.completion_tokens}
    out.calls = result.calls
    if not result.ok:
        out.error, out.refusal = result.error, "invalid reply"
        return out
    data = result.data or {}
    text = " ".join(str(data["answer"]).split())
    out.confidence = round(float(data["confidence"]), 3)
    out.supports = sorted({n for n in data["supports"] if 1 <= n <= len(evidence)})
    out.refused = is_refusal(text)
    out.refusal = "model" if out.refused else None
    out.answer = prompt.REFUSAL if out.refused else text
    if out.refused:
        out.supports = []
    out.citations = citations(conn, [evidence[n - 1] for n in out.supports])
    if not out.refused and about_someone_else(question, out.citations, speakers):
        out.refused, out.refusal, out.answer = True, "someone else", prompt.REFUSAL
        out.supports, out.citations = [], []
    return out


def about_someone_else(question: str, cited: Sequence[Citation], speakers: Sequence[str]) -> bool:
    """True when the question asks about exactly one of the conversation's speakers and no
    cited message is by them or names them: the answer then rests on what someone else did.
    (A small model answers "What did Caroline realize after her race?" with Melanie's race.)"""
    named = [s for s in speakers if s and re.search(rf"\b{re.escape(s)}\b", question, re.I)]
    if len(named) != 1 or not cited:
        return False
    who = named[0]
    return not any(c.speaker.lower() == who.lower() or re.search(rf"\b{re.escape(who)}\b", c.text, re.I)
                   for c in cited)


def citations(conn: Any, hits: Sequence[Hit]) -> list[Citation]:
    """The distinct source messages of ``hits``, in time order."""
    ids = list(dict.fromkeys(s.message_id for h in hits for s in h.sources))
    if not ids:
        return []
    rows = conn.execute(q("messages_by_ids"), {"ids": json.dumps(ids)}).fetchall()
    found = [Citation(mid, ext, conv, speaker, sent_at, text)
             for mid, ext, conv, _session, speaker, _role, text, sent_at, _att in rows]
    return sorted(found, key=lambda c: (c.time is None, c.time or "", c.message_id))
