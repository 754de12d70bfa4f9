"""The LLM picks the evidence (``ask_pick``, off by default): one forward pass over the best
candidates, and those it picks go first into the evidence budget.

The search's order decides which messages fit the budget (``ask_max_tokens``, about six
items). A message that answers may rank 8th or 15th: it fits only if something moves it up.
The local model reads the first ``n`` candidates (the question's own focus and excerpts
already applied), each one line, labelled with a letter, and the probabilities of the
letters as its reply's first token say which answer the question (:mod:`..prompts.pick`).
Nothing is generated, and the instructions are the backend's saved prefix.

How the two orders combine: a candidate the model gives at least twice the share a
choice at random would (``2 / n`` of the labels' mass) is *picked*; the picked go first,
most probable first, and every other candidate keeps its place in the search's order after
them. One next-token distribution ranks its first choice well and says little about the rest
(a message that also answers shares the mass with the best one, or gets almost none), so the
model's low probabilities do not reorder the search's list: only the few it stands behind move
ahead, and at most as many of the search's best leave the budget as were picked.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..errors import ConfigError
from ..models.protocols import Chooser
from ..prompts import pick as prompt
from ..types import Hit
from .evidence import evidence_line

# A candidate's line is cut at this many words: the prompt's cost grows with every token of it,
# and the excerpts of long messages (ask_long_tokens) are already about this short.
MAX_WORDS = 60
# A picked candidate has at least this multiple of the share a random choice would give it.
PICKED = 2.0


@dataclass
class Picked:
    """The candidates in their new order, and what the pick saw and cost."""

    hits: list[Hit]
    report: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0


def candidate_line(hit: Hit) -> str:
    """One candidate as the model reads it: date, speaker and text (captions marked as image
    descriptions), at most :data:`MAX_WORDS` words."""
    words = evidence_line(hit).split()
    return " ".join(words[:MAX_WORDS]) + (" …" if len(words) > MAX_WORDS else "")


def pick(llm: object, question: str, hits: Sequence[Hit], n: int) -> Picked:
    """``hits`` reordered by the model's pick among the first ``n`` (see the module docstring).
    ``ConfigError`` when the LLM backend cannot give next-token probabilities."""
    if not isinstance(llm, Chooser):
        raise ConfigError(
            f"ask_pick needs next-token probabilities, which the LLM backend {getattr(llm, 'model_id', '?')} "
            "does not give",
            "set ask_pick to 0, or use the in-process llama.cpp LLM",
        )
    shown = list(hits[: min(n, len(prompt.LABELS))])
    if len(shown) < 2:  # nothing to choose between
        return Picked(list(hits))
    started = time.perf_counter()
    chosen = llm.choose(prompt.render(question, [candidate_line(h) for h in shown]), prompt.LABELS[: len(shown)])
    seconds = time.perf_counter() - started
    mass = sum(chosen.p)
    share = [p / mass for p in chosen.p] if mass > 0 else [0.0] * len(shown)
    picked = sorted((i for i, s in enumerate(share) if s >= PICKED / len(shown)), key=lambda i: -share[i])
    rest = [i for i in range(len(shown)) if i not in picked]
    ordered = [shown[i] for i in picked + rest] + list(hits[len(shown) :])
    report = {
        "version": prompt.VERSION,
        "candidates": len(shown),
        "picked": [shown[i].id for i in picked],
        "p": [round(p, 4) for p in chosen.p],
        "mass": round(mass, 4),
        "prompt_tokens": chosen.prompt_tokens,
        "prefilled": chosen.prefilled,
    }
    return Picked(ordered, report, seconds)
