"""The rules of the answer stage: the named checks that run before and after the model.

Each rule is a small function from a :class:`Context` (the question read once, the evidence,
the answer so far) to a :class:`Verdict`: nothing to say, a refusal whose reason is the
:class:`~localmem.types.Refusal` member named after the rule, or an answer or citations set
right. :func:`run` runs a list of them in order and stops at the first refusal. Each can be
turned off by name (the setting ``ask_rules_off``), and each says which languages it reads:
a rule for English does not run on a question in another language (one whose language
could not be told, "und", is read as it may be English). What each rule is for and what it
changes, measured: docs/answering.md.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Mapping, Sequence

from ..store.engine import Store
from ..text import time_words
from ..text.language import detect
from ..text.times import absolute
from ..types import Answer, Citation, Hit, Names, Refusal, Speakers
from . import checks
from . import dates as date_rules
from .citations import citations, naming, stating
from .evidence import said_day
from .question import ENGLISH, UNDETERMINED, Question

ANY = ("*",)


@dataclass
class Context:
    """What the rules read: the question, the evidence as numbered in the prompt, what the
    search found besides (``found``: the evidence and the pool, each message once), the
    speakers (empty: the checks of who a question is about are off), and the answer so far
    (``out``), with the prompt (``messages``) and the model's ``reply``."""

    conn: Store
    question: Question
    evidence: list[Hit]
    found: list[Hit]
    speakers: Names
    today: dt.date | None
    out: Answer
    llm: object = None
    dates: bool = False
    messages: list[dict[str, str]] = field(default_factory=list)
    reply: dict[str, Any] = field(default_factory=dict)
    events: Sequence[Sequence[Hit]] = ()  # a date question's events, each searched on its own

    def cited(self) -> list[Hit]:
        """The evidence items the answer cites now."""
        return [self.evidence[n - 1] for n in self.out.supports]

    def citations(self) -> list[Citation]:
        """The source messages of the items the answer cites now."""
        return citations(self.conn, self.cited())


@dataclass(frozen=True)
class Verdict:
    """What a rule says. ``refusal``: the answer is refused for this reason (``unsupported``:
    what the model answered is kept in :attr:`Answer.unsupported`); ``answer``, ``supports``:
    set right; ``details``, ``timings``: added to the answer's."""

    refusal: Refusal | None = None
    unsupported: bool = False
    answer: str | None = None
    supports: Sequence[int] | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    timings: Mapping[str, float] = field(default_factory=dict)


PASS = Verdict()


@dataclass(frozen=True)
class Rule:
    """A named rule: ``check`` gives its verdict; ``languages``: the ISO 639-1 codes of the
    questions it reads ("*": any); ``doc``: what it does, in a line (docs/answering.md)."""

    name: str
    languages: tuple[str, ...]
    check: Callable[[Context], Verdict]
    doc: str


def reads(languages: tuple[str, ...], language: str) -> bool:
    """Whether a rule declared for ``languages`` ("*": any) reads a question in ``language``
    (an undetermined one is read as it may be any)."""
    return "*" in languages or language == UNDETERMINED or language in languages


def run(rules: Sequence[Rule], ctx: Context, off: Collection[str] = ()) -> bool:
    """Run ``rules`` in order on ``ctx`` (but those named in ``off``, and those not reading the
    question's language), each verdict applied to ``ctx.out`` before the next; stop at the
    first refusal. Whether the answer is refused."""
    out = ctx.out
    for rule in rules:
        if rule.name in off or not reads(rule.languages, ctx.question.language):
            continue
        verdict = rule.check(ctx)
        out.details.update(verdict.details)
        out.timings.update(verdict.timings)
        if verdict.answer is not None:
            out.answer = verdict.answer
        if verdict.supports is not None:
            out.supports = list(verdict.supports)
        if verdict.refusal is not None:
            if verdict.unsupported:
                out.unsupported = out.answer
            out.refused, out.refusal = True, verdict.refusal
            return True
    return False


# -- before the model -------------------------------------------------------------------------


def asks_about_someone_else(ctx: Context) -> Verdict:
    # No model call: nothing it could say would be about the person asked.
    if (
        ctx.speakers
        and checks.asks_about_someone_else(ctx.question, ctx.found, ctx.speakers)
        and not owner_said_in_another_language(ctx)
    ):
        return Verdict(refusal=Refusal.ASKS_ABOUT_SOMEONE_ELSE)
    return PASS


def owner_said_in_another_language(ctx: Context) -> bool:
    """Whether a question about the store's owner has evidence by the owner in a language other
    than the question's: its words cannot be matched against the question's ("rent" is not
    "alquiler"), so a check by matching words cannot tell that only someone else answers it."""
    speakers, who = ctx.speakers, ctx.question.person
    if not isinstance(speakers, Speakers) or who is None or who not in speakers.owner:
        return False
    mine = {s.lower() for s in speakers.owner}
    asked = ctx.question.language
    for hit in ctx.evidence:
        if hit.kind == "message" and hit.sources and hit.sources[0].speaker.lower() in mine:
            said = detect(hit.text)
            if said not in (asked, UNDETERMINED) and not (asked == UNDETERMINED and said == "en"):
                return True
    return False


# -- after the model --------------------------------------------------------------------------

# Other ways a model says it does not know than the prompt's own phrase (prompts/answer.REFUSAL).
_REFUSAL_PHRASES = ("no information available", "not mentioned", "no information")


def said(text: str) -> str:
    """``text`` lower-cased, with only letters, digits and single spaces."""
    return " ".join(re.sub(r"[^a-z0-9 ]", " ", text.lower()).split())


def refusal_phrases(ctx: Context) -> Verdict:
    if any(phrase in said(ctx.out.answer) for phrase in _REFUSAL_PHRASES):
        return Verdict(refusal=Refusal.REFUSAL_PHRASES)
    return PASS


def absolute_dates(ctx: Context) -> Verdict:
    if not ctx.dates:  # ask_dates: off, the evidence had no dates to copy either
        return PASS
    said_on = said_day(ctx.cited())
    answer = absolute(ctx.out.answer, said_on)
    if ctx.question.language in time_words.SUPPORTED:  # "gestern [18 March 2024]", "ayer"
        answer = time_words.absolute(answer, said_on)
    return Verdict(answer=answer)


def someone_else(ctx: Context) -> Verdict:
    if ctx.speakers and checks.about_someone_else(
        ctx.question, ctx.out.answer, ctx.found, ctx.citations(), ctx.speakers
    ):
        return Verdict(refusal=Refusal.SOMEONE_ELSE)
    return PASS


def image_description(ctx: Context) -> Verdict:
    # A photo of "a group of people at a table" does not say what was celebrated there.
    if checks.from_image_descriptions(ctx.question, ctx.out.answer, ctx.evidence, ctx.speakers):
        return Verdict(refusal=Refusal.IMAGE_DESCRIPTION, unsupported=True)
    return PASS


def no_citation(ctx: Context) -> Verdict:
    # Nothing shows where an uncited answer came from: the model's own knowledge, or a message
    # imitating a reply (tests/trials/forgery.py).
    if not ctx.citations():
        return Verdict(refusal=Refusal.NO_CITATION, unsupported=True)
    return PASS


def date_arithmetic(ctx: Context) -> Verdict:
    asked, out = ctx.question.dates, ctx.out
    if asked is None:
        return PASS
    uncited = [h for n, h in enumerate(ctx.evidence, 1) if n not in out.supports]
    english = ctx.question.language in (*ENGLISH, UNDETERMINED)
    # Each event is looked for among its own search's hits (those shown in the evidence, read
    # whole), what was cited and the rest of the evidence (dates.work_out).
    shown = {h.id: h for h in ctx.evidence}
    own = [[h for h in hits if h.id in shown] for hits in ctx.events]
    close = [[shown[h.id] for h in hits] for hits in own]
    worked = date_rules.work_out(asked, ctx.cited(), ctx.today, uncited, english, own, close)
    if worked is None:
        return PASS
    # The model picked the events; the rules count. An event found outside what was cited is cited too.
    counted = {e["id"] for e in worked.events}
    supports = sorted({*out.supports, *(n for n, h in enumerate(ctx.evidence, 1) if h.id in counted)})
    details = {"dates": {**worked.to_dict(), "model_answer": out.answer}}
    return Verdict(answer=worked.answer, supports=supports, details=details)


def _counted(ctx: Context) -> bool:
    return "dates" in ctx.out.details


def cite_statement(ctx: Context) -> Verdict:
    out = ctx.out
    if _counted(ctx):  # a counted date rests on the days of what was cited
        return Verdict(supports=naming(ctx.question, ctx.evidence, out.supports))
    return Verdict(supports=stating(ctx.question, out.answer, ctx.evidence, out.supports))


BEFORE = (
    Rule(
        "asks_about_someone_else",
        ENGLISH,
        asks_about_someone_else,
        "A question about one speaker that only someone else's messages answer is refused before the model.",
    ),
)
AFTER = (
    Rule(
        "refusal_phrases",
        ENGLISH,
        refusal_phrases,
        "An answer saying 'not mentioned' or 'no information' is the model's refusal.",
    ),
    Rule(
        "absolute_dates",
        (*ENGLISH, *time_words.SUPPORTED),
        absolute_dates,
        "With ask_dates, the answer's relative times ('yesterday') are given as the dates they mean.",
    ),
    Rule(
        "someone_else",
        ENGLISH,
        someone_else,
        "An answer about one speaker whose words come from someone else's messages is refused.",
    ),
    Rule(
        "image_description",
        ENGLISH,
        image_description,
        "An answer whose words are only in image captions (not in what was said) is refused.",
    ),
    Rule("no_citation", ANY, no_citation, "An answer citing none of the evidence is refused."),
    Rule(
        "date_arithmetic",
        (*ENGLISH, *date_rules.LANGUAGES),
        date_arithmetic,
        "A date question (how long ago, between, which first, how old) is counted from the cited days.",
    ),
    Rule(
        "cite_statement",
        ENGLISH,
        cite_statement,
        "The message stating the answer (or naming the question's words that day) is cited too.",
    ),
)
RULES = BEFORE + AFTER
