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
from typing import Any, Callable, Mapping, Sequence

from .extract import content_words, stem
from .llm import LLM, JsonFieldStream, complete_structured
from .prompts import answer as prompt
from .queries import q
from .search import Hit, hydrate
from .times import absolute, day_text, with_dates

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
    return day_text(day)


def evidence_line(hit: Hit, dates: bool = False) -> str:
    """One dated line per hit (a message hit's text already starts with its speaker);
    ``dates``: a message's relative times are followed by the dates they mean."""
    return f"{format_date(hit.time)} - {evidence_text(hit, dates)}"


def evidence_text(hit: Hit, dates: bool = False) -> str:
    """A hit's text on one line, marked when a newer unit replaced it."""
    replaced = " (no longer true: replaced later)" if hit.superseded_by else ""
    text = " ".join(hit.text.split())
    said_on = _said_on([hit]) if dates else None
    if said_on is not None:
        text = with_dates(text, said_on)
    return f"{text}{replaced}"




def in_time_order(hits: Sequence[Hit]) -> list[Hit]:
    """Oldest first; undated hits last, in their rank order (sorted() is stable)."""
    return sorted(hits, key=lambda h: (h.time is None, h.time or ""))


# A gist or fact resting on more messages than this is a summary: it is shown as itself.
SOURCE_MESSAGES = 2


def as_messages(conn: Any, hits: Sequence[Hit], per_unit: int = SOURCE_MESSAGES) -> list[Hit]:
    """The evidence in the speakers' words: each gist or fact replaced, at its rank, by the
    messages it rests on (when there are at most ``per_unit``); messages already shown are not
    repeated. Episodes and broader units stay as they are, after all the messages: a token
    budget filled in this order gives the model what was said, with its date, before summaries.

    (A summary covers a gold message more often than it says the detail asked for: on the
    LoCoMo dev split, before sentence parts existed, putting episodes last raised the share
    of gold messages in the 320 evidence tokens from 54.8/54.7/65.4 to 69.4/69.0/74.4 on
    conv-26/30/41.)"""
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
    return [h for h in out if h.kind == "message"] + [h for h in out if h.kind != "message"]


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
           on_text: Callable[[str], None] | None = None, speakers: Names | None = None,
           pool: Sequence[Hit] = (), dates: bool = False) -> Answer:
    """Answer ``question`` from ``hits`` (already cut to the token budget) with one call.

    No evidence means a refusal without calling the model. ``on_text`` receives the answer
    text as the model writes it (the first attempt's; a repaired reply is not streamed).
    ``speakers``: the conversation's speakers and their names, for two checks over the
    evidence and ``pool`` (what the search found before the evidence was cut to the budget
    or focused on one person): a question about one of them that only someone else's
    messages answer is refused without calling the model (:func:`asks_about_someone_else`),
    and an answer must rest on something they said or something said about them
    (:func:`about_someone_else`). ``dates``: the relative times in messages are followed by
    the dates they mean (:func:`times.with_dates`), and the answer's own relative times are
    given as dates (:func:`times.absolute`).
    """
    evidence = in_time_order(hits)
    day = format_date(today.isoformat()) if today else None
    out = Answer(question=question, answer=prompt.REFUSAL, refused=True, confidence=None, citations=[],
                 evidence=evidence, supports=[], today=day, refusal="no evidence")
    if not evidence or llm is None:
        return out
    # Both checks read the evidence and what the search found besides (each message once).
    found = list({h.id: h for h in [*evidence, *pool]}.values())
    if speakers and asks_about_someone_else(question, found, speakers):
        out.refusal = "asks about someone else"  # no model call: nothing it could say would be about them
        return out
    started = time.perf_counter()
    result = complete_structured(llm, prompt.build(question, [evidence_line(h, dates) for h in evidence], day),
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
    if dates and not out.refused:
        text = absolute(text, _said_on([evidence[n - 1] for n in out.supports]))
    out.answer = prompt.REFUSAL if out.refused else text
    if out.refused:
        out.supports = []
    out.citations = citations(conn, [evidence[n - 1] for n in out.supports])
    if not out.refused and about_someone_else(question, text, found, out.citations, speakers or {}):
        out.refused, out.refusal, out.answer = True, "someone else", prompt.REFUSAL
        out.supports, out.citations = [], []
    return out


def _said_on(hits: Sequence[Hit]) -> dt.date | None:
    """The day the first message among ``hits`` was said (what its relative times count from);
    ``None`` when none is a message with a date."""
    for hit in hits:
        if hit.kind == "message" and hit.time:
            try:
                return dt.date.fromisoformat(hit.time[:10])
            except ValueError:
                return None  # a time that is not a date
    return None


Names = Mapping[str, Sequence[str]]  # a speaker -> the names they go by, their own first


def person_asked(question: str, speakers: Names) -> str | None:
    """The one speaker ``question`` names, or ``None`` (it names none of them, or several)."""
    named = [s for s, names in speakers.items() if _names(question, names)]
    return named[0] if len(named) == 1 else None


def _names(text: str, names: Sequence[str]) -> bool:
    return any(re.search(rf"\b{re.escape(n)}\b", text, re.I) for n in names if n)


# "Thanks, Mel!", "Hey Caroline," -- a name that only addresses the listener says nothing about them.
_GREETING = re.compile(r"(?:^|[,.!?]|\b(?:hey|hi|hello|thanks|thank you|wow|oh|yeah|yes|congrats|aw+))\s*$", re.I)


def names_not_only_addressing(text: str, names: Sequence[str]) -> bool:
    """Whether ``text`` names the person other than by addressing them."""
    for name in names:
        for found in re.finditer(rf"\b{re.escape(name)}\b", text, re.I) if name else ():
            after = text[found.end():].lstrip()
            if not (_GREETING.search(text[:found.start()]) and (not after or after[0] in ",.!?")):
                return True
    return False


def _words(hit: Hit) -> str:
    """A hit's text without the "Speaker: " a message starts with."""
    if hit.kind == "message" and hit.sources and hit.text.startswith(f"{hit.sources[0].speaker}:"):
        return hit.text[len(hit.sources[0].speaker) + 1:]
    return hit.text


_SENTENCE = re.compile(r"[^.!?]+[.!?]*")
_YOU = re.compile(r"\byou(?:r|rs|'re|'ve|'d|'ll)?\b", re.I)


def only_asks(text: str) -> bool:
    """Whether ``text`` only asks the listener about themselves: every sentence of three
    words or more is a question to "you" ("Tom! That's huge. Are you moving to Berlin then?").

    Such a message tells about the listener, not its writer: in the LoCoMo dev split, 23 of
    1,451 messages are like this, and none is the only evidence from its writer for an
    answerable question about them.
    """
    sentences = [s.strip() for s in _SENTENCE.findall(text)]
    said = [s for s in sentences if len(s.split()) >= 3]
    return bool(said) and all(s.endswith("?") and _YOU.search(s) for s in said)


def about(hit: Hit, who: str, names: Sequence[str]) -> bool:
    """Whether ``hit`` is by or about ``who``: a message they wrote (unless it only asks the
    listener about themselves) or one naming them (not only addressing them), a unit whose
    text names them."""
    if hit.kind == "message":
        return said_by_or_about(hit.sources[0].speaker if hit.sources else "", _words(hit), who, names)
    return _names(hit.text, names)


def said_by_or_about(speaker: str, text: str, who: str, names: Sequence[str]) -> bool:
    """Whether a message ``text`` written by ``speaker`` is by ``who`` (unless it only asks
    the listener about themselves) or names them other than by addressing them."""
    return (speaker.lower() == who.lower() and not only_asks(text)) or names_not_only_addressing(text, names)


def focus(question: str, hits: Sequence[Hit], speakers: Names) -> list[Hit]:
    """When ``question`` asks about one speaker of the conversation, the hits by or about
    them; otherwise ``hits`` as they are.

    What one person did is nearly always said in their own words (in LoCoMo, 335 of 344
    answerable questions naming one speaker rest on that speaker's messages), while the
    adversarial questions ask about one person with what another did: a small model given
    the other's words answers with them.
    """
    who = person_asked(question, speakers)
    return list(hits) if who is None else [h for h in hits if about(h, who, speakers[who])]


def about_someone_else(question: str, reply: str, pool: Sequence[Hit], cited: Sequence[Citation],
                       speakers: Names) -> bool:
    """True when ``question`` asks about one speaker and the reply rests on someone else:
    the messages whose words best match the reply's own words (those not in the question)
    are none of them by or about that speaker, or, when no message has those words (or the
    reply has none: a date, "Yes"), no cited message is.

    Only messages are matched: they say who did what in the speakers' own words, while an
    episode's summary names both speakers whatever it tells (matching summaries too let
    14 of conv-26's 47 adversarial questions through that matching messages alone catch:
    refusal F1 0.36 against 0.47, with the same F1 on the answerable ones).

    (A small model answers "What did Caroline realize after her race?" with Melanie's race.)
    """
    who = person_asked(question, speakers)
    if who is None:
        return False
    names = speakers[who]
    asked = {stem(w) for w in content_words(question)} | _all_names(speakers)
    best = best_matching(({stem(w) for w in content_words(reply)} - asked), pool)
    if best:
        return not any(about(h, who, names) for h in best)
    if not cited:
        return False
    return not any(said_by_or_about(c.speaker, c.text, who, names) for c in cited)


# Words that shape a question rather than say what it is about.
_ASKING = frozenset(stem(w) for w in (
    "kind type like likely many much recent recently favorite think feel".split()))


def asks_about_someone_else(question: str, pool: Sequence[Hit], speakers: Names) -> bool:
    """True when ``question`` asks about one speaker something only someone else's messages
    tell: the messages whose words best match the question's own (its words other than
    names and question words) are none of them by or about that speaker.

    A message by someone else counts as about the speaker asked when the sentence with those
    words asks something or addresses "you" ("How long have you been married?"): in a
    conversation it is the listener's life it asks about. LoCoMo's adversarial questions
    ask one person about what the other did ("What did Caroline see at the council
    meeting?" when Melanie went). Built on conv-26's questions, where it refuses 26 of the 47
    adversarial ones and 2 of 152 answerable ones (both answered wrongly without it: refusal
    F1 0.45 → 0.65, the same F1 on the rest); on conv-30 and conv-41, not looked at while
    building it, it flags 29 of 65 adversarial questions and 6 of 233 answerable ones.
    """
    who = person_asked(question, speakers)
    if who is None:
        return False
    names = speakers[who]
    words = {stem(w) for w in content_words(question)} - _all_names(speakers) - _ASKING
    best = best_matching(words, pool)
    if not best:
        return False
    return not any(about(h, who, names) or _asks_listener(h, who, words) for h in best)


def _asks_listener(hit: Hit, who: str, words: set[str]) -> bool:
    """Whether a message by someone other than ``who`` asks or tells the listener about
    ``words``: a sentence holding some of them is a question or addresses "you"."""
    if not hit.sources or hit.sources[0].speaker.lower() == who.lower():
        return False
    return any(words & {stem(w) for w in content_words(s)} and (s.strip().endswith("?") or _YOU.search(s))
               for s in _SENTENCE.findall(_words(hit)))


def best_matching(words: set[str], pool: Sequence[Hit]) -> list[Hit]:
    """The messages of ``pool`` sharing the most of ``words`` (stems), when they share at
    least half of them; else none."""
    if not words:
        return []
    said = [h for h in pool if h.kind == "message"]
    scores = [len(words & {stem(w) for w in content_words(_words(h))}) for h in said]
    best = max(scores, default=0)
    if best < max(1, (len(words) + 1) // 2):
        return []
    return [h for h, score in zip(said, scores) if score == best]


def _all_names(speakers: Names) -> set[str]:
    return {stem(n.lower()) for names in speakers.values() for n in names}


def citations(conn: Any, hits: Sequence[Hit]) -> list[Citation]:
    """The distinct source messages of ``hits``, in time order."""
    ids = list(dict.fromkeys(s.message_id for h in hits for s in h.sources))
    if not ids:
        return []
    rows = conn.execute(q("messages_by_ids"), {"ids": json.dumps(ids)}).fetchall()
    found = [Citation(mid, ext, conv, speaker, sent_at, text)
             for mid, ext, conv, _session, speaker, _role, text, sent_at, _att in rows]
    return sorted(found, key=lambda c: (c.time is None, c.time or "", c.message_id))
