"""The systems an evaluation compares, as named presets built from public pieces.

- ``localmem``: :meth:`Memory.ask` as a user runs it.
- ``raw-hybrid``: the plain retrieval a user would otherwise pick: whole raw turns by
  vector + BM25, fused by RRF (no built memory, no sentence parts, no other channel), then
  the same answer prompt, model and token budget (:data:`RAW_TURNS`, a search recipe).
- ``full-context``: no retrieval: the newest turns that fit the model's context window
  (:meth:`Memory.recent` then :meth:`Memory.answer`, which leaves out the oldest).

The baselines are plain unless asked otherwise: without localmem's focus on the person
asked, its someone-else check and the dates written after relative times (:func:`plain`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace
from typing import Callable

from localmem import Answer, Config, Memory, SearchParams
from localmem.config import EVAL_SYSTEMS

RAW_TURNS = SearchParams(
    channels=("vector", "bm25"),
    units=False,
    parts=False,
    promote=False,
    without_speakers=False,
    session_weight=0.0,
    speaker_weight=0.0,
    question_handoff=0.0,
    when_weight=0.0,
)  # plain RAG embeds the question as asked


@dataclass(frozen=True)
class System:
    """How one evaluated system answers a question."""

    name: str
    answer: Callable[[Memory, str, "dt.date | None", str], Answer]  # (memory, question, now, mode)
    plain: bool  # a baseline: runs without localmem's answer-side filters unless asked


def _localmem(mem: Memory, question: str, now: dt.date | None, mode: str) -> Answer:
    return mem.ask(question, mode=mode, now=now)


def _raw_hybrid(mem: Memory, question: str, now: dt.date | None, mode: str) -> Answer:
    return mem.ask(question, mode=mode, now=now, recipe=RAW_TURNS)


def _full_context(mem: Memory, question: str, now: dt.date | None, mode: str) -> Answer:
    # Every evidence line costs at least a few tokens, so n_ctx messages cover what fits.
    return mem.answer(question, mem.recent(mem.config.n_ctx), now=now)


SYSTEMS = {
    s.name: s
    for s in (
        System("localmem", _localmem, plain=False),
        System("raw-hybrid", _raw_hybrid, plain=True),
        System("full-context", _full_context, plain=True),
    )
}
assert tuple(SYSTEMS) == EVAL_SYSTEMS, "the systems the CLI offers are these"


# The answer rules that check who a question and its answer are about (the someone-else check).
WHO_RULES = ("asks_about_someone_else", "someone_else")


def plain(config: Config) -> Config:
    """``config`` without the answer-side filters (focus, someone-else check, dates)."""
    off = ",".join(dict.fromkeys([*config.rules_off(), *WHO_RULES]))
    return replace(config, ask_focus=False, ask_rules_off=off, ask_dates=False)


def someone_else_checked(config: Config) -> bool:
    """Whether ``config`` runs the someone-else check (neither of :data:`WHO_RULES` is off)."""
    return not set(WHO_RULES) & set(config.rules_off())
