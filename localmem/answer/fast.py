"""Answering a question from retrieved memory: evidence → one LLM call → answer, citations
or an honest refusal (REMem-S).

:func:`answer` runs the stage in order: the question read once (:mod:`.question`), the
rules before the model (:mod:`.rules`), the evidence as dated lines (:mod:`.evidence`), one
call, the reply read, the rules after the model, and the citations (:mod:`.citations`): the
source messages of the items the model named, read back from the store, never generated.
Numbers that point to nothing are dropped; an answer left citing nothing is refused
(``no_citation``), never given as a plain answer.
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from .. import progress
from ..config import Config
from ..models.protocols import LLM, Warmable
from ..models.structured import JsonFieldStream, Structured, complete_structured
from ..prompts import answer as prompt
from ..store.engine import Store
from ..types import Answer, Hit, Names, Refusal, Speakers
from . import rules
from .citations import citations, renamed
from .evidence import evidence_line, format_date, in_time_order
from .question import Question


def warm(llm: LLM) -> float | None:
    """Load ``llm`` and evaluate the answer prompt's instructions ahead of the first question
    (seconds spent), when the backend can (:class:`~localmem.models.protocols.Warmable`);
    ``None`` when it cannot (a model server keeps its own model loaded)."""
    if not isinstance(llm, Warmable):
        return None
    return llm.warm(prompt.render("?", [], None))


def is_refusal(text: str) -> bool:
    """Whether the model's answer ``text`` is the prompt's refusal (or empty). Digits count
    as an answer: "2021", "3" and "1:5:5" are answers, not empty replies. (Other ways of
    saying so: the rule ``refusal_phrases``.) Letters of any script count: "北京" and "Москва"
    are answers (:func:`rules.said` keeps a-z only, for the English phrases it matches)."""
    return prompt.REFUSAL in rules.said(text) or not any(ch.isalnum() for ch in text)


@dataclass(frozen=True)
class AnswerOptions:
    """How :func:`answer` writes and checks an answer (from :class:`~localmem.config.Config`).

    ``dates``: the relative times in messages are followed by the dates they mean
    (:func:`times.with_dates`), and the answer's own relative times are given as dates (the
    rule ``absolute_dates``). ``user_name``: shown instead of the user's speaker label in a
    user–assistant chat. ``rules_off``: the rules turned off by name (``ask_rules_off``).
    ``tally``: the kinds of question (count, sum, current, before, at) worked out by code from
    the model's listing (``ask_tally``, :mod:`.tally`)."""

    dates: bool = False
    user_name: str | None = None
    rules_off: frozenset[str] = frozenset()
    tally: frozenset[str] = frozenset()

    @classmethod
    def from_config(cls, config: Config) -> "AnswerOptions":
        return cls(
            tally=frozenset(k.strip() for k in config.ask_tally.split(",") if k.strip() not in ("", "none")),
            dates=config.ask_dates,
            user_name=config.user_name,
            rules_off=frozenset(config.rules_off()),
        )


def answer(
    conn: Store,
    llm: LLM | None,
    question: Question,
    hits: Sequence[Hit],
    options: AnswerOptions,
    today: dt.date | None,
    *,
    on_text: Callable[[str], None] | None = None,
    speakers: Names | None = None,
    pool: Sequence[Hit] = (),
    events: Sequence[Sequence[Hit]] = (),
) -> Answer:
    """Answer ``question`` from ``hits`` (already cut to the token budget) with one call, the
    rules run before and after it (:mod:`.rules`; ``speakers``, the conversation's, ``pool``,
    what the search found besides, and ``events``, the hits of each event of a date question
    searched on its own, are theirs). No evidence: a refusal without the model.
    ``on_text`` receives the answer as the model writes it (a repaired reply is not streamed)."""
    asked = question
    evidence = in_time_order(hits)
    day = format_date(today.isoformat()) if today else None
    out = Answer(asked.text, prompt.REFUSAL, True, None, [], evidence, [], today=day, refusal=Refusal.NO_EVIDENCE)
    if not evidence or llm is None:
        return out
    found = list({h.id: h for h in [*evidence, *pool]}.values())
    ctx = rules.Context(conn, asked, evidence, found, speakers or {}, today, out, llm, options.dates, events=events)
    if rules.run(rules.BEFORE, ctx, options.rules_off):
        return out
    names, who = _who(speakers, options.user_name)
    lines = [evidence_line(h, options.dates, names) for h in evidence]
    if asked.kind is not None and asked.kind in options.tally and _tallied(ctx, lines, day, who):
        out.citations = renamed(citations(conn, [evidence[n - 1] for n in out.supports]), names)
        return out
    ctx.messages = prompt.render(asked.text, lines, day, who, dated=asked.dates is not None, language=asked.language)
    result = _call(llm, ctx.messages, on_text, out)
    if not result.ok:
        out.error, out.refusal = result.error, Refusal.INVALID_REPLY
        return out
    if not _read(ctx, result.data or {}):
        rules.run(rules.AFTER, ctx, options.rules_off)
    if out.refused:
        out.answer, out.supports = prompt.REFUSAL, []
    out.citations = renamed(citations(conn, [evidence[n - 1] for n in out.supports]), names)
    return out


# The rules that still read an answer composed by code (:mod:`.tally`): it cites what it
# counted, and what it rests on must exist. The others read a model's free answer.
TALLY_RULES = ("no_citation",)


def _tallied(ctx: rules.Context, lines: Sequence[str], day: str | None, who: tuple[str, str] | None) -> bool:
    """Answer a question of one of the kinds code works out (count, sum, current, before) from
    the model's listing (:mod:`.tally`); whether it was (``False``: nothing was listed, the
    usual answer call follows)."""
    from ..prompts import tally as listing
    from . import tally

    asked, out = ctx.question, ctx.out
    kind = asked.kind or ""
    started = time.perf_counter()
    progress.stage(progress.ANSWER)
    messages = listing.render(
        tally.system(kind), asked.text, lines, day, prompt.who_line(who), prompt.language_hint(asked.language)
    )
    result, data = tally.call(ctx.llm, messages, kind)
    seconds = round(time.perf_counter() - started, 3)
    out.timings["tally"] = seconds
    out.tokens = {"prompt": result.prompt_tokens, "reused": result.reused, "completion": result.completion_tokens}
    out.calls = result.calls
    until = None
    if kind in ("at", "count", "sum"):
        from ..retrieval.query_time import parse_query_time

        today = ctx.today or dt.date.today()
        named = parse_query_time(asked.text, today)
        # "at": the value then; a count of a time that has ended ("how many bikes did I own in
        # April?"): what had been said by its end. "This year" has not ended: no bound.
        if named is not None and (kind == "at" or named.end < today):
            until = named.end
    # The user's own speaker label (not the name shown for it): whose words outrank a restatement.
    chat = isinstance(ctx.speakers, Speakers) and ctx.speakers.chat
    user = ctx.speakers.user if chat else None  # type: ignore[union-attr]
    worked = tally.work_out(kind, data or {}, ctx.evidence, asked.language, user, until)
    if worked is None:  # nothing listed, or nothing to work out: the usual answer call
        out.details["tally"] = {"kind": kind, "listed": data, "error": result.error, "answered_by": "model"}
        return False
    ctx.messages = messages
    out.answer, out.supports, out.confidence = worked.answer, worked.supports, None
    out.refused, out.refusal = False, None
    out.details["tally"] = {**worked.details, "prompt_version": listing.VERSION}
    out.timings["answer"] = seconds
    rules.run([r for r in rules.AFTER if r.name in TALLY_RULES], ctx)
    if out.refused:
        out.answer, out.supports = prompt.REFUSAL, []
    return True


def _who(speakers: Names | None, user_name: str | None) -> tuple[Mapping[str, str] | None, tuple[str, str] | None]:
    """In a user–assistant chat (:class:`Speakers` with both known): the user's speaker label
    shown as ``user_name`` (``names``; without one, as the owner's name in the store's other
    sources, so that "user" and "Daniel Ruiz" read as one person), and who "I" and "you" are
    in the prompt (``who``)."""
    chat = isinstance(speakers, Speakers) and speakers.chat
    user = speakers.user if chat else None  # type: ignore[union-attr]
    if chat and not user_name:  # the owner's name in their other sources ("Daniel Ruiz" on WhatsApp)
        user_name = next((s for s in speakers.owner if s != user), None)  # type: ignore[union-attr]
    assistant = speakers.assistant if chat else None  # type: ignore[union-attr]
    names = {user: user_name} if user is not None and user_name and user != user_name else None
    who = (user_name or user, assistant) if user is not None and assistant is not None else None
    return names, who


def _call(
    llm: LLM, messages: Sequence[dict[str, str]], on_text: Callable[[str], None] | None, out: Answer
) -> Structured:
    """The answer call; its time and tokens recorded in ``out``."""
    started = time.perf_counter()
    progress.stage(progress.ANSWER)
    stream = JsonFieldStream("answer", on_text) if on_text else None
    result = complete_structured(llm, messages, prompt.SCHEMA, prompt.MAX_TOKENS, on_text=stream)
    out.timings["answer"] = round(time.perf_counter() - started, 3)
    # Where the answer's time went: the prompt's evaluation (what the cache did not hold), then generation.
    out.timings["prompt_eval"] = round(result.prompt_seconds, 3)
    out.timings["generation"] = round(result.seconds - result.prompt_seconds, 3)
    out.tokens = {"prompt": result.prompt_tokens, "reused": result.reused, "completion": result.completion_tokens}
    out.calls = result.calls
    return result


def _read(ctx: rules.Context, data: dict[str, Any]) -> bool:
    """The model's reply into the answer: its text on one line, confidence, the item numbers
    that point to evidence, and whether it says it does not know (returned)."""
    ctx.reply, out = data, ctx.out
    text = " ".join(str(data["answer"]).split())
    out.confidence = round(float(data["confidence"]), 3)
    out.supports = sorted({n for n in data["supports"] if 1 <= n <= len(out.evidence)})
    out.refused = is_refusal(text)
    out.answer, out.refusal = text, Refusal.MODEL if out.refused else None
    return out.refused
