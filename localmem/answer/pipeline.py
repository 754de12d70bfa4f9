"""Asking: from a question to an :class:`~localmem.types.Answer`, in the order the steps run.

Fast mode (REMem-S), :func:`ask`: one search; the units found replaced by the messages they
rest on (``ask_evidence = messages``); the hits focused on the person asked about
(``ask_focus``); long messages shortened to their matching sentences (``ask_long_tokens``);
the hits that fit the evidence budget (``ask_max_tokens``); then one answer call
(:func:`localmem.answer.fast.answer`). Nothing found means a refusal without loading the LLM.
Agentic mode, :func:`ask_agentic`: the tool loop of :mod:`localmem.answer.agentic`.
:func:`answer_from` answers from evidence the caller chose.

The settings these steps read are an :class:`AskOptions`, built from the config; the
models come from a :class:`~localmem.models.factory.Models`, loaded on first use.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

from .. import progress
from ..config import ASK_MODES, MAX_AGENT_STEPS, Config
from ..errors import LocalmemError
from ..store.engine import Store
from .fast import AnswerOptions

if TYPE_CHECKING:
    from ..models.factory import Models
    from ..retrieval.batch import SearchArgs, SpeakerNames
    from ..retrieval.search import SearchParams
    from ..types import Answer, Hit
    from .question import Question


def _configured_search(config: Config) -> "SearchParams":
    from ..retrieval.search import SearchParams  # numpy and apsw: only once an ask is made

    return SearchParams.from_config(config)


@dataclass(frozen=True)
class AskOptions:
    """The settings of asking (each from the config setting named in brackets).

    ``candidates`` (``ask_candidates``): hits searched for; ``max_tokens``
    (``ask_max_tokens``): evidence tokens given to the model; ``evidence`` (``ask_evidence``):
    "messages" puts the messages a unit rests on in its place; ``focus`` (``ask_focus``): keep
    the hits about the person asked about; ``long_tokens`` (``ask_long_tokens``): messages
    longer than this are shown as their matching sentences (0: whole); ``tally_tokens``
    (``ask_tally_tokens``): evidence tokens of a count or sum question; ``n_ctx``: the
    model's context window (what :func:`answer_from` fits evidence to); ``answer``: how the
    answer is written and checked; ``search``: what the search takes from the config."""

    candidates: int
    max_tokens: int
    evidence: str
    focus: bool
    long_tokens: int
    tally_tokens: int
    n_ctx: int
    user_name: str | None
    answer: AnswerOptions
    search: "SearchParams"

    @classmethod
    def from_config(cls, config: Config) -> "AskOptions":
        return cls(
            candidates=config.ask_candidates,
            max_tokens=config.ask_max_tokens,
            evidence=config.ask_evidence,
            focus=config.ask_focus,
            long_tokens=config.ask_long_tokens,
            tally_tokens=config.ask_tally_tokens,
            n_ctx=config.n_ctx,
            user_name=config.user_name,
            answer=AnswerOptions.from_config(config),
            search=_configured_search(config),
        )


def question_text(question: str, mode: str = "fast", steps: int = 1) -> str:
    """``question`` checked (non-empty text) and stripped, a lone surrogate replaced; first, the
    ``mode`` and ``steps`` it is to be asked with (:func:`ask_in_mode`)."""
    from ..text.files import without_surrogates

    if mode not in ASK_MODES:
        raise LocalmemError(f"unknown ask mode {mode!r}", f"available: {', '.join(ASK_MODES)}")
    if not 1 <= steps <= MAX_AGENT_STEPS:
        raise LocalmemError(f"steps must be between 1 and {MAX_AGENT_STEPS}")
    if not isinstance(question, str) or not question.strip():
        raise LocalmemError("ask() needs a non-empty question")
    return without_surrogates(question.strip())


def today(conn: "Store", namespace: str, now: dt.date | str | None) -> dt.date:
    """The day relative questions count from: ``now`` (a date, or text starting with one), or
    else the day of the namespace's latest message (today's date when it has none)."""
    from ..retrieval.channels import latest_time

    try:
        day = dt.date.fromisoformat(now[:10]) if isinstance(now, str) else now
    except ValueError as exc:
        raise LocalmemError(f"--now must be a date like 2023-05-08, got {now!r}") from exc
    return day or latest_time(conn, namespace)


def ask_question(
    conn: "Store",
    namespace: str,
    models: "Models",
    config: Config,
    question: str,
    search: "SearchArgs",
    *,
    mode: str,
    now: dt.date | str | None,
    steps: int,
    max_tokens: int | None = None,
    trace: Callable[[Any], None] | None = None,
    on_text: Callable[[str], None] | None = None,
    on_progress: Callable[[str, str], None] | None = None,
    names: "SpeakerNames | None" = None,
) -> "Answer":
    """What :meth:`Memory.ask <localmem.Memory.ask>` does: ``question`` checked (with ``mode``
    and ``steps`` first), the day relative times count from (``now``; asked ``as_of`` a day,
    that day; else the latest message's), then :func:`ask_in_mode`, telling ``on_progress``
    each stage as it starts (:func:`localmem.progress.reporting`)."""
    from ..retrieval.filters import as_of_bound

    started, options = time.perf_counter(), AskOptions.from_config(config)
    question = question_text(question, mode, steps)
    known = as_of_bound(None, search.get("as_of"))[1]  # asked as of a day: "today" is that day
    day = today(conn, namespace, now if now is not None or known is None else known)
    with progress.reporting(on_progress) if on_progress is not None else contextlib.nullcontext():
        return ask_in_mode(
            conn,
            namespace,
            models,
            question,
            search,
            day,
            options,
            mode=mode,
            steps=steps,
            max_tokens=max_tokens,
            trace=trace,
            on_text=on_text,
            started=started,
            names=names,
        )


def ask_in_mode(
    conn: "Store",
    namespace: str,
    models: "Models",
    question: str,
    search: "SearchArgs",
    today: dt.date,
    options: AskOptions,
    *,
    mode: str,
    steps: int,
    max_tokens: int | None = None,
    trace: Callable[[Any], None] | None = None,
    on_text: Callable[[str], None] | None = None,
    started: float | None = None,
    names: "SpeakerNames | None" = None,
) -> "Answer":
    """Answer ``question`` (checked by :func:`question_text`, with ``mode`` and ``steps``) in
    ``mode``: "fast" (:func:`ask`, searching as ``search`` says, ``k`` defaulting to
    ``options.candidates``) or "agentic" (:func:`ask_agentic`, at most ``steps`` tool calls; no
    filters), counting relative times from ``today``."""
    from ..retrieval.batch import checked_params

    params = checked_params(options.search, today, **{**search, "k": search.get("k") or options.candidates})
    if mode == "fast":
        return ask(
            conn,
            namespace,
            models,
            question,
            params,
            today,
            options,
            max_tokens=max_tokens,
            on_text=on_text,
            started=started,
            names=names,
        )
    if params.filters is not None:
        raise LocalmemError(
            "filters (since, until, as_of, speaker, conversation, meta) work with ask's fast mode",
            "use --mode fast, or leave the filters out",
        )
    return ask_agentic(
        conn,
        namespace,
        models,
        question,
        today,
        options,
        steps=steps,
        trace=trace,
        on_text=on_text,
        started=started,
        names=names,
    )


def ask(
    conn: "Store",
    namespace: str,
    models: "Models",
    question: str,
    params: "SearchParams",
    today: dt.date,
    options: AskOptions,
    *,
    max_tokens: int | None = None,
    on_text: Callable[[str], None] | None = None,
    started: float | None = None,
    names: "SpeakerNames | None" = None,
) -> "Answer":
    """Answer ``question`` in fast mode (see the module docstring): search with ``params``,
    then one answer call over the best hits that fit ``max_tokens`` (default
    ``options.max_tokens``). ``started``: when the caller's clock started (``perf_counter``),
    for the timings; ``names``: the speakers' names kept between searches."""
    from ..retrieval.batch import search_one, vector_texts
    from ..retrieval.search import fit_budget
    from ..retrieval.speakers import speakers as speakers_of
    from . import checks
    from . import fast as answer_mod
    from .evidence import as_messages, session_diverse
    from .question import COUNT, SUM, Question

    started = time.perf_counter() if started is None else started
    progress.stage(progress.SEARCH)
    speakers = speakers_of(conn, namespace, options.user_name)
    asked = Question.parse(question, speakers)  # read once: every step and rule below reads this
    query, params = _as_of_asked(asked, question, params, today)
    hits = search_one(conn, namespace, models, query, params, names=names)
    events = _event_hits(conn, namespace, models, asked, params, names, options)
    if options.evidence == "messages":
        hits = as_messages(conn, hits)
    pool = hits
    if options.focus:
        hits = checks.focus(asked, hits, speakers)
    searched = time.perf_counter() - started
    llm = models.llm if hits else None  # nothing found: refuse without loading a model
    loaded = getattr(llm, "load_seconds", 0.0) is not None  # loaded before this question
    # Loaded first, so the evidence the model reads is counted by its own tokenizer.
    count = models.counter()[0]
    if options.long_tokens and hits:
        from . import excerpts

        query_vec = (
            models.embedder.embed(
                vector_texts(conn, namespace, [question], params, options.user_name, names), role="query"
            )[0]
            if conn.has_vectors()
            else None
        )
        # A count reads one thing a session: each long message as its best sentence alone, so
        # more sessions fit the budget (evals/timeq_recall.py).
        tight = asked.kind in (COUNT, SUM) and asked.kind in options.answer.tally
        hits = excerpts.shorten(conn, hits, query_vec, count, options.long_tokens, *((0, 1) if tight else ()))
    budget = max_tokens or options.max_tokens
    if asked.kind in (COUNT, SUM) and asked.kind in options.answer.tally:
        # A count rests on messages spread over sessions: each session's best first, more room.
        hits = session_diverse(hits)
        budget = max_tokens or options.tally_tokens or budget
    if events:
        hits = _events_first(conn, models, namespace, asked, events, hits, params, options, count, names)
    hits = fit_budget(hits, budget, count)
    result = answer_mod.answer(
        conn,
        llm if hits else None,
        asked,
        hits,
        options.answer,
        today,
        on_text=on_text,
        speakers=speakers,
        pool=pool,
        events=events,
    )
    result.timings["search"] = round(searched, 3)
    # Loading the model counts apart (it happens once a process, while counting tokens or answering).
    result.timings["model_load"] = round(0.0 if loaded else getattr(llm, "load_seconds", None) or 0.0, 3)
    result.timings["total"] = round(time.perf_counter() - started, 3)
    return result


# How many of each event's own best hits a date question's evidence starts with.
EVENT_HITS = 2
# What a birth is said with, searched for "how old was I when …" (the question's language).
_BIRTH_QUERY = {
    "en": "I was born on",
    "de": "ich bin geboren am",
    "es": "nací el",
    "fr": "je suis né le",
    "pt": "eu nasci em",
    "zh": "我出生于",
    "ja": "私は生まれ",
}


def _by_events(asked: "Question") -> bool:
    """Whether the date rules count ``asked`` between events its evidence must each hold."""
    return asked.dates is not None and (len(asked.dates.events) >= 2 or asked.dates.kind == "age")


def _event_queries(asked: "Question") -> list[str]:
    """What :func:`_event_hits` searches for: each event's phrase, then the birth for "age"."""
    if asked.dates is None or not _by_events(asked):
        return []
    queries = [*asked.dates.events]
    if asked.dates.kind == "age":
        queries.append(_BIRTH_QUERY.get(asked.language, _BIRTH_QUERY["en"]))
    return queries


def _event_hits(
    conn: "Store",
    namespace: str,
    models: "Models",
    asked: "Question",
    params: "SearchParams",
    names: "SpeakerNames | None",
    options: AskOptions,
) -> list[list["Hit"]]:
    """For a question the date rules count between two events ("how many days after X did Y",
    "which came first, X or Y") or from a birth ("how old was I when X"): the best
    :data:`EVENT_HITS` messages of a search for each event (and for the birth) on its own, in
    the order of :func:`_event_queries`; else nothing. One search for the whole question finds
    the event it says most about and often not the other, told in another session."""
    from ..retrieval.batch import search_batch
    from .evidence import as_messages

    queries = _event_queries(asked)
    if not queries:
        return []
    found = search_batch(conn, namespace, models, queries, params, names=names)
    return [(as_messages(conn, hits) if options.evidence == "messages" else hits)[:EVENT_HITS] for hits in found]


def _events_first(
    conn: "Store",
    models: "Models",
    namespace: str,
    asked: "Question",
    events: list[list["Hit"]],
    hits: list["Hit"],
    params: "SearchParams",
    options: AskOptions,
    count: Callable[[str], int],
    names: "SpeakerNames | None",
) -> list["Hit"]:
    """``hits`` led by each event's hits, a long message shown as its sentence that best
    matches that event (not the whole question): the budget then holds every event."""
    from ..retrieval.batch import vector_texts
    from . import excerpts

    shown: list["Hit"] = []
    if options.long_tokens and conn.has_vectors():
        phrases = _event_queries(asked)
        vecs = models.embedder.embed(
            vector_texts(conn, namespace, phrases, params, options.user_name, names), role="query"
        )
        for vec, found in zip(vecs, events):
            shown += excerpts.shorten(conn, found, vec, count, options.long_tokens, 0, 1)
    else:
        shown = [hit for found in events for hit in found]
    seen: set[str] = set()
    out = []
    for hit in [*shown, *hits]:
        if hit.id not in seen:
            seen.add(hit.id)
            out.append(hit)
    return out


def _as_of_asked(
    asked: "Question", question: str, params: "SearchParams", today: dt.date
) -> tuple[str, "SearchParams"]:
    """The search for a question about a state at a time it names ("where did I live in March
    2024?", kind ``at``): what had been said by the end of that time, searched without the
    time's words. The state then was said when it began (a January message: "I live in
    Ancoats"), not in the month named, which the time's words would otherwise favour; and what
    was said after that time (the later move) is not the answer. Any other question: as asked."""
    from dataclasses import replace

    from ..retrieval.filters import Filters, time_bounds
    from ..retrieval.query_time import parse_query_time
    from .question import AT

    if asked.kind != AT:
        return question, params
    named = parse_query_time(question, today)
    if named is None or named.end >= today:
        return question, params
    until = time_bounds(None, named.end.isoformat())[1]
    held = params.filters or Filters()
    if held.until is not None and held.until <= (until or ""):
        until = held.until  # asked as of an earlier day already
    query = " ".join(question.replace(named.phrase, " ").split()) if named.phrase else question
    return query or question, replace(params, filters=replace(held, until=until))


def answer_from(
    conn: "Store",
    namespace: str,
    models: "Models",
    config: Config,
    question: str,
    evidence: Sequence["Hit"],
    now: dt.date | str | None,
    *,
    on_text: Callable[[str], None] | None = None,
) -> "Answer":
    """Answer ``question`` (checked here) from exactly ``evidence`` (no search, no focus),
    counting relative times from ``now`` (default: the latest message's day); evidence that
    does not fit the model's context window is left out, oldest first."""
    from ..retrieval.speakers import speakers as speakers_of
    from . import fast as answer_mod
    from .evidence import fit_context
    from .question import Question

    started, options = time.perf_counter(), AskOptions.from_config(config)
    question, day = question_text(question), today(conn, namespace, now)
    llm = models.llm if evidence else None
    kept = fit_context(list(evidence), options.n_ctx, models.counter()[0], question)
    speakers = speakers_of(conn, namespace, options.user_name)
    asked = Question.parse(question, speakers)
    result = answer_mod.answer(conn, llm, asked, kept, options.answer, day, on_text=on_text, speakers=speakers)
    result.timings["total"] = round(time.perf_counter() - started, 3)
    return result


def ask_agentic(
    conn: "Store",
    namespace: str,
    models: "Models",
    question: str,
    today: dt.date,
    options: AskOptions,
    *,
    steps: int,
    trace: Callable[[Any], None] | None = None,
    on_text: Callable[[str], None] | None = None,
    started: float | None = None,
    names: "SpeakerNames | None" = None,
) -> "Answer":
    """Answer ``question`` in agentic mode: at most ``steps`` tool calls chosen by the model
    (:mod:`localmem.answer.agentic`), each search counting from ``today``."""
    from ..retrieval.batch import search_batch, search_params
    from ..retrieval.speakers import speakers
    from . import agentic

    started = time.perf_counter() if started is None else started
    progress.stage(progress.SEARCH)

    def retrieve(query: str, channels: Sequence[str], k: int) -> list["Hit"]:
        params = search_params(options.search, k, channels=channels, now=today)
        found = search_batch(conn, namespace, models, [query], params, names=names)
        return next(iter(found))

    tools = agentic.Tools(conn, namespace, retrieve, speakers(conn, namespace, options.user_name))
    result = agentic.run(
        tools, models.llm, question, today, steps=steps, trace=trace, on_text=on_text, dates=options.answer.dates
    )
    result.timings["total"] = round(time.perf_counter() - started, 3)
    return result
