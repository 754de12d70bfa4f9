"""Answering a question from retrieved memory: evidence → one LLM call → answer, citations
or an honest refusal (REMem-S).

The evidence goes to the model in time order, each item with its absolute date, its text on
one line without brackets of its own (:func:`~localmem.prompts.item_text`: a stored message
cannot open an item or imitate a reply). The model names the items it used; numbers that point
to nothing are dropped, and the citations are the source messages of the items that remain,
read back from the store, never generated. An answer left citing nothing is refused
(``refusal="no citation"``), never given as a plain answer.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import apsw

from ..config import Config
from ..models.protocols import LLM, Judge, Warmable
from ..models.structured import JsonFieldStream, complete_structured
from ..prompts import answer as prompt
from ..prompts import check as check_prompt
from ..prompts import item_text
from ..retrieval.search import hydrate, split_captions
from ..store.queries import q
from ..store.rows import all_rows
from ..text.language import detect
from ..text.times import absolute, day_text, with_dates
from ..text.words import content_words, stem
from ..types import Answer, Citation, Hit, Names, Speakers
from . import dates as date_rules
from .checks import about_someone_else, asks_about_someone_else, best_matching, from_image_descriptions

_REFUSALS = (prompt.REFUSAL, "no information available", "not mentioned", "no information")


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
    """One dated line per hit (a message hit's text already starts with its speaker);
    ``dates``: a message's relative times are followed by the dates they mean; ``names``: a
    speaker shown by another name (the user's own name instead of "user")."""
    return f"{format_date(hit.time)} - {evidence_text(hit, dates, names)}"


def evidence_text(hit: Hit, dates: bool = False, names: Mapping[str, str] | None = None) -> str:
    """A hit's text on one line, marked when a newer unit replaced it."""
    replaced = " (no longer true: replaced later)" if hit.superseded_by else ""
    text = hit.text
    if names and hit.kind == "message" and hit.sources and hit.sources[0].speaker in names:
        speaker = hit.sources[0].speaker
        if text.startswith(f"{speaker}: "):
            text = f"{names[speaker]}: {text[len(speaker) + 2 :]}"
    text, captions = split_captions(text) if hit.kind == "message" else (text, [])
    text = item_text(text)  # before the dates are added: their brackets are the only ones
    said_on = _said_on([hit]) if dates else None
    if said_on is not None:
        text = with_dates(text, said_on)
    # A caption describes the image the speaker shared; it is not what they said (prompts/answer).
    shown = "".join(f" ({prompt.IMAGE_DESCRIPTION}: {item_text(c)})" for c in captions)
    return f"{text}{shown}{replaced}"


def in_time_order(hits: Sequence[Hit]) -> list[Hit]:
    """Oldest first; undated hits last, in their rank order (sorted() is stable)."""
    return sorted(hits, key=lambda h: (h.time is None, h.time or ""))


# A gist or fact resting on more messages than this is a summary: it is shown as itself.
SOURCE_MESSAGES = 2


def as_messages(conn: apsw.Connection, hits: Sequence[Hit], per_unit: int = SOURCE_MESSAGES) -> list[Hit]:
    """The evidence in the speakers' words: each gist or fact replaced, at its rank, by the
    messages it rests on (when there are at most ``per_unit``); messages already shown are not
    repeated. Episodes and broader units stay as they are, after all the messages: a token
    budget filled in this order gives the model what was said, with its date, before summaries.

    (A summary covers a gold message more often than it says the detail asked for: on the
    LoCoMo dev split, before sentence parts existed, putting episodes last raised the share
    of gold messages in the 320 evidence tokens from 54.8/54.7/65.4 to 69.4/69.0/74.4 on
    conv-26/30/41.)"""
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


def warm(llm: LLM) -> float | None:
    """Load ``llm`` and evaluate the answer prompt's instructions ahead of the first question
    (seconds spent), when the backend can (:class:`~localmem.models.protocols.Warmable`);
    ``None`` when it cannot (a model server keeps its own model loaded)."""
    if not isinstance(llm, Warmable):
        return None
    return llm.warm(prompt.render("?", [], None))


def is_refusal(text: str) -> bool:
    """Whether the model's answer ``text`` says it does not know. Digits count as an answer:
    "2021", "3" and "1:5:5" are answers, not empty replies."""
    said = re.sub(r"[^a-z0-9 ]", " ", text.lower())
    said = " ".join(said.split())
    return not said or any(phrase in said for phrase in _REFUSALS)


@dataclass(frozen=True)
class AnswerOptions:
    """How :func:`answer` writes and checks an answer (from :class:`~localmem.config.Config`).

    ``dates``: the relative times in messages are followed by the dates they mean
    (:func:`times.with_dates`), and the answer's own relative times are given as dates
    (:func:`times.absolute`). ``user_name``: shown instead of the user's speaker label in a
    user–assistant chat. ``verify``: the least P(yes) the model may give that the cited items
    state the answer (:func:`check`); 0 skips the check."""

    dates: bool = False
    user_name: str | None = None
    verify: float = 0.0

    @classmethod
    def from_config(cls, config: Config) -> "AnswerOptions":
        return cls(dates=config.ask_dates, user_name=config.user_name, verify=config.ask_verify)


def answer(
    conn: apsw.Connection,
    llm: LLM | None,
    question: str,
    hits: Sequence[Hit],
    options: AnswerOptions,
    today: dt.date | None,
    *,
    on_text: Callable[[str], None] | None = None,
    speakers: Names | None = None,
    pool: Sequence[Hit] = (),
) -> Answer:
    """Answer ``question`` from ``hits`` (already cut to the token budget) with one call.

    No evidence means a refusal without calling the model. ``on_text`` receives the answer
    text as the model writes it (the first attempt's; a repaired reply is not streamed).
    ``speakers``: the conversation's speakers and their names, for two checks over the
    evidence and ``pool`` (what the search found before the evidence was cut to the budget
    or focused on one person): a question about one of them that only someone else's
    messages answer is refused without calling the model (:func:`asks_about_someone_else`),
    and an answer must rest on something they said or something said about them
    (:func:`about_someone_else`); in a user–assistant chat (:class:`Speakers`) the prompt
    says who "I" and "you" are, and ``user_name`` is shown instead of the user's speaker
    label (``options``, :class:`AnswerOptions`, also says whether dates are added and the
    answer is checked). A date question ("how many days ago", "which came first") is
    counted by :mod:`answer.dates` from the items the model cites, not by the model.
    A model without the :class:`Judge` capability is not checked.
    """
    dates, user_name, verify = options.dates, options.user_name, options.verify
    evidence = in_time_order(hits)
    day = format_date(today.isoformat()) if today else None
    out = Answer(
        question=question,
        answer=prompt.REFUSAL,
        refused=True,
        confidence=None,
        citations=[],
        evidence=evidence,
        supports=[],
        today=day,
        refusal="no evidence",
    )
    if not evidence or llm is None:
        return out
    # Both checks read the evidence and what the search found besides (each message once).
    found = list({h.id: h for h in [*evidence, *pool]}.values())
    if speakers and asks_about_someone_else(question, found, speakers):
        out.refusal = "asks about someone else"  # no model call: nothing it could say would be about them
        return out
    # In a user–assistant chat (Speakers.chat: both are known), who is who.
    user = speakers.user if isinstance(speakers, Speakers) and speakers.chat else None
    assistant = speakers.assistant if isinstance(speakers, Speakers) and speakers.chat else None
    names = {user: user_name} if user is not None and user_name and user != user_name else None
    lines = [evidence_line(h, dates, names) for h in evidence]
    who = (user_name or user, assistant) if user is not None and assistant is not None else None
    started = time.perf_counter()
    asked_dates = date_rules.classify(question)
    messages = prompt.render(question, lines, day, who, dated=asked_dates is not None, language=detect(question))
    result = complete_structured(
        llm, messages, prompt.SCHEMA, prompt.MAX_TOKENS, on_text=JsonFieldStream("answer", on_text) if on_text else None
    )
    out.timings["answer"] = round(time.perf_counter() - started, 3)
    # Where the answer's time went: the prompt's evaluation (what the cache did not hold), then generation.
    out.timings["prompt_eval"] = round(result.prompt_seconds, 3)
    out.timings["generation"] = round(result.seconds - result.prompt_seconds, 3)
    out.tokens = {"prompt": result.prompt_tokens, "reused": result.reused, "completion": result.completion_tokens}
    if result.drafted:  # prompt-lookup decoding (llm_lookup)
        out.tokens.update(drafted=result.drafted, kept=result.kept)
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
    elif not out.refused and from_image_descriptions(question, text, evidence, speakers or {}):
        # The answer's words are only in what a captioner said an image shows: a photo of "a
        # group of people at a table" does not say what was celebrated there.
        out.refused, out.refusal, out.unsupported, out.answer = True, "image description", text, prompt.REFUSAL
    elif not out.refused and not out.citations:
        # An answer that names no item it rests on is not given: nothing shows where it came
        # from (the model's own knowledge, or a message imitating a reply, as in the forgery
        # trials of tests/trials/forgery.py). What the model said is kept in ``unsupported``.
        out.refused, out.refusal, out.unsupported, out.answer = True, "no citation", text, prompt.REFUSAL
    if not out.refused:
        worked = (
            date_rules.work_out(
                asked_dates,
                [evidence[n - 1] for n in out.supports],
                today,
                [h for n, h in enumerate(evidence, 1) if n not in out.supports],
            )
            if asked_dates is not None
            else None
        )
        if worked is not None:  # the model picked the events; the rules count
            out.details["dates"] = {**worked.to_dict(), "model_answer": out.answer}
            out.answer = worked.answer
            counted = {e["id"] for e in worked.events}  # an event found outside what was cited is cited too
            out.supports = sorted({*out.supports, *(n for n, h in enumerate(evidence, 1) if h.id in counted)})
            out.supports = naming(question, evidence, out.supports)
        else:
            if verify > 0 and isinstance(llm, Judge):
                check(llm, out, messages, data, verify)
            if not out.refused:
                out.supports = stating(question, out.answer, evidence, out.supports)
    if out.refused:
        out.supports = []
    out.citations = _renamed(citations(conn, [evidence[n - 1] for n in out.supports]), names)
    return out


def stating(question: str, text: str, evidence: Sequence[Hit], supports: Sequence[int]) -> list[int]:
    """The items (1-based) an answer ``text`` rests on, with the message that states it: when
    a message of the evidence holds more of the answer's own words (those not in the question)
    than any cited item, and at least half of them, it is cited too. Of several such messages,
    the one said nearest in time to a cited item: the model found the passage and named its
    neighbour ("I'd start on March 1st", two lines after "I got the offer from the Lisbon
    design studio"); then the one the search ranked highest. An answer without words of its
    own (a date, "Yes"), or whose words neither the cited items nor at least half of another
    message hold, is left to :func:`naming`.

    (The README's demo: "Where did Priya move for her new job?" was answered "Lisbon" citing
    only "I'd start on March 1st, so I need to find a flat there by February.")
    """
    words = _said_words(text) - _said_words(question)
    if not words:
        return naming(question, evidence, supports)
    in_cited = max((len(words & _said_words(evidence[n - 1].text, evidence[n - 1])) for n in supports), default=0)
    said = [h for h in evidence if h.kind == "message"]
    held = [len(words & _said_words(h.text, h)) for h in said]
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


def naming(question: str, evidence: Sequence[Hit], supports: Sequence[int]) -> list[int]:
    """The items (1-based) an answer that no message states in its words (a date, "Yes") rests
    on: when a message said the same day as a cited item names more of the question's words
    than every cited item, and at least two, it is cited too (the one naming most; then the
    search's higher ranked). Such an answer is the day of what the model cited, and the model
    often names a turn beside the one that tells the event ("When did Gina team up with a local
    artist?" citing "So I worked with the artist to make it happen" two turns after "I just
    teamed up with a local artist"). Another day's message is not: its date is not the
    answer's. Nor is a question: it names the asked words and states nothing.
    """
    asked = _said_words(question)
    cited_days = {h.time[:10] for h in (evidence[n - 1] for n in supports) if h.time}
    if not asked or not cited_days:
        return list(supports)
    in_cited = max((len(asked & _said_words(evidence[n - 1].text, evidence[n - 1])) for n in supports), default=0)
    same_day = [
        (len(asked & _said_words(h.text, h)), h)
        for h in evidence
        if h.kind == "message" and h.time and h.time[:10] in cited_days and not _asks(h)
    ]
    most = max((n for n, _ in same_day), default=0)
    if most <= in_cited or most < 2:
        return list(supports)
    top = max((h for n, h in same_day if n == most), key=lambda h: h.score)
    return sorted({*supports, evidence.index(top) + 1})


def _asks(hit: Hit) -> bool:
    """Whether what a message said (not an image's caption) ends in a question."""
    return split_captions(hit.text)[0].rstrip().endswith("?")


def _when(hit: Hit) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(hit.time[:19]) if hit.time else None
    except ValueError:
        return None


def _said_words(text: str, hit: Hit | None = None) -> set[str]:
    """The stems of ``text``'s content words; of a message ``hit``, those of what was said
    (not its speaker's name, nor an image's caption)."""
    if hit is not None and hit.kind == "message":
        speaker = hit.sources[0].speaker if hit.sources else ""
        if speaker and text.startswith(f"{speaker}:"):
            text = text[len(speaker) + 1 :]
        text = split_captions(text)[0]
    return {stem(w) for w in content_words(text)}


# When the cited items fail the check, at most this many other items are tried as the support.
CHECK_ALTERNATIVES = 2


def check(llm: Judge, out: Answer, messages: Sequence[dict[str, str]], reply: dict[str, Any], threshold: float) -> None:
    """The answer check: the model's P(yes) that the items ``out`` cites state its answer,
    asked as the next turn of the answer's conversation (``messages``, then the model's
    ``reply``). Under ``threshold``, the uncited items sharing most words with the question and
    answer are asked about (one prompt each, in one batch); the first that passes becomes
    the support, and without one the answer is refused. What was tried is kept in
    ``out.details["check"]``; ``out.timings["check"]`` is its cost."""
    started = time.perf_counter()
    judged = llm.judge([check_prompt.render(messages, reply, out.supports, out.answer)])
    p_cited = judged.p_yes[0]
    report: dict[str, Any] = {
        "version": check_prompt.VERSION,
        "threshold": threshold,
        "p_yes": round(p_cited, 4),
        "passed": p_cited >= threshold,
        "prefilled": judged.prefilled,
    }
    if not report["passed"]:
        others = _alternatives(out)
        p_others = (
            llm.judge([check_prompt.render(messages, reply, [n], out.answer) for n in others]).p_yes if others else []
        )
        report["tried"] = [{"item": n, "p_yes": round(p, 4)} for n, p in zip(others, p_others)]
        passing = [n for n, p in zip(others, p_others) if p >= threshold]
        if passing:
            report["passed"], report["support"] = True, passing[0]
            out.supports = [passing[0]]
        else:
            report["answer_before"] = out.answer
            out.refused, out.refusal, out.answer = True, "unchecked", prompt.REFUSAL
    out.details["check"] = report
    out.timings["check"] = round(time.perf_counter() - started, 3)


def _alternatives(out: Answer) -> list[int]:
    """The uncited items (1-based) sharing most words with the question and answer, best first:
    those an answer the cited items do not state may rest on instead."""
    cited = set(out.supports)
    pool = [h for n, h in enumerate(out.evidence, 1) if n not in cited]
    words = {stem(w) for w in content_words(f"{out.question} {out.answer}")}
    best = best_matching(words, pool)[:CHECK_ALTERNATIVES]
    return [out.evidence.index(h) + 1 for h in best]


def _renamed(found: list[Citation], names: Mapping[str, str] | None) -> list[Citation]:
    if names:
        for c in found:
            c.speaker = names.get(c.speaker, c.speaker)
    return found


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


def citations(conn: apsw.Connection, hits: Sequence[Hit]) -> list[Citation]:
    """The distinct source messages of ``hits``, in time order."""
    ids = list(dict.fromkeys(s.message_id for h in hits for s in h.sources))
    if not ids:
        return []
    rows = all_rows(conn.execute(q("messages_by_ids"), {"ids": json.dumps(ids)}))
    found = [
        Citation(mid, ext, conv, speaker, sent_at, text)
        for mid, ext, conv, _session, speaker, _role, text, sent_at, _att in rows
    ]
    return sorted(found, key=lambda c: (c.time is None, c.time or "", c.message_id))
