"""The answer check (``ask_verify``, off by default; the rule ``verify``): the model's P(yes)
that the items an answer cites state it."""

from __future__ import annotations

import time
from typing import Any, Sequence

from ..models.protocols import Judge
from ..prompts import check as check_prompt
from ..text.words import content_words, stem
from ..types import Answer
from .checks import best_matching

# When the cited items fail the check, at most this many other items are tried as the support.
CHECK_ALTERNATIVES = 2


def check(
    llm: Judge, out: Answer, messages: Sequence[dict[str, str]], reply: dict[str, Any], threshold: float
) -> tuple[list[int] | None, dict[str, Any], float]:
    """The model's P(yes) that the items ``out`` cites state its answer, asked as the next
    turn of the answer's conversation (``messages``, then the model's ``reply``). Under
    ``threshold``, the uncited items sharing most words with the question and answer are asked
    about (one prompt each, in one batch); the first that passes becomes the support.

    Returns the supports (``None``: none passed, the answer is refused), what was tried (the
    answer's ``details["check"]``) and the seconds it took."""
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
    supports: list[int] | None = list(out.supports)
    if not report["passed"]:
        others = _alternatives(out)
        p_others = (
            llm.judge([check_prompt.render(messages, reply, [n], out.answer) for n in others]).p_yes if others else []
        )
        report["tried"] = [{"item": n, "p_yes": round(p, 4)} for n, p in zip(others, p_others)]
        passing = [n for n, p in zip(others, p_others) if p >= threshold]
        if passing:
            report["passed"], report["support"] = True, passing[0]
            supports = [passing[0]]
        else:
            report["answer_before"] = out.answer
            supports = None
    return supports, report, round(time.perf_counter() - started, 3)


def _alternatives(out: Answer) -> list[int]:
    """The uncited items (1-based) sharing most words with the question and answer, best first:
    those an answer the cited items do not state may rest on instead."""
    cited = set(out.supports)
    pool = [h for n, h in enumerate(out.evidence, 1) if n not in cited]
    words = {stem(w) for w in content_words(f"{out.question} {out.answer}")}
    best = best_matching(words, pool)[:CHECK_ALTERNATIVES]
    return [out.evidence.index(h) + 1 for h in best]
