"""Where ask's time goes, over a file of questions: ``localmem bench ask FILE``.

Each question is asked as ``localmem ask --json`` would; its timings and token counts are
one row, and every column gets its median and 90th percentile. The first question of a run
pays for loading the model (the ``model_load`` column); the others show a warm process.
``wall`` is the call as its caller waits for it (``total``, ask's own clock, starts after
the arguments are checked); ``first_text`` is when the first piece of the answer's text was
written (what ``ask`` shows first on a terminal), on the same clock as ``wall``.

With ``plain``, each answered question is followed by a plain call of the binding with the
same prompt and reply sizes (:meth:`~localmem.models.protocols.SpeedMeter.plain_call`: no
reused prefix, no grammar), so ``ratio`` (``wall`` over ``plain``) is measured back to back
and does not drift with the machine's speed. The plain call clears llama.cpp's cache, so the
next question restores its instruction prefix from the snapshot (counted in its own time).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Sequence

from localmem import Memory
from localmem.errors import LocalmemError
from localmem.models.protocols import SpeedMeter
from localmem.text import questions
from localmem.text.questions import Question

from .bench import _percentile

# (column, unit, where ask's result keeps it)
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("wall", "s", "wall"),
    ("total", "s", "timings.total"),
    ("model_load", "s", "timings.model_load"),
    ("search", "s", "timings.search"),
    ("first_text", "s", "first_text"),
    ("prompt_tokens", "tok", "tokens.prompt"),
    ("reused_tokens", "tok", "tokens.reused"),
    ("prompt_eval", "s", "timings.prompt_eval"),
    ("gen_tokens", "tok", "tokens.completion"),
    ("generation", "s", "timings.generation"),
    ("plain", "s", "plain"),
    ("ratio", "x", "ratio"),
)


def read_questions(path: Path) -> list[Question]:
    """The questions of ``path`` (one a line: plain text, or JSON with ``query`` and optionally
    ``namespace`` and ``now``; see :mod:`localmem.text.questions`); a file without any is refused."""
    found = questions.read_questions(Path(path))
    if not found:
        raise LocalmemError(f"{path}: no questions", "give one question a line, or JSONL with 'query'")
    return found


def _value(result: dict[str, Any], where: str) -> float | None:
    node: Any = result
    for part in where.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return float(node) if isinstance(node, (int, float)) else None


def ask_one(mem: Memory, item: Question, **options: Any) -> dict[str, Any]:
    """Ask ``item``'s question (in its namespace, from its ``now``); the answer's dict with
    ``first_text`` added."""
    if item.namespace:
        mem.namespace = item.namespace
    started = time.perf_counter()
    first: list[float] = []

    def on_text(piece: str) -> None:
        if not first and piece.strip():
            first.append(time.perf_counter() - started)

    result = mem.ask(item.query, now=item.now, on_text=on_text, **options).to_dict()
    result["wall"] = round(time.perf_counter() - started, 3)
    result["first_text"] = round(first[0], 3) if first else None
    return result


def run(
    mem: Memory,
    questions: Sequence[Question],
    progress: Callable[[int, int], None] | None = None,
    plain: bool = False,
) -> dict[str, Any]:
    """Ask every question; the rows and each column's p50 and p90. ``plain``: the plain-call
    yardstick after each answered question (an LLM without :class:`SpeedMeter` is refused)."""
    llm = mem.llm if plain else None
    if llm is not None and not isinstance(llm, SpeedMeter):
        raise LocalmemError(f"the LLM backend {llm.model_id} cannot time a plain call")
    rows = []
    for done, item in enumerate(questions, 1):
        result = ask_one(mem, item)
        prompt, made = _value(result, "tokens.prompt"), _value(result, "tokens.completion")
        if llm is not None and prompt and made:
            result["plain"] = round(llm.plain_call(int(prompt), int(made)), 3)
            result["ratio"] = round(result["wall"] / result["plain"], 3)
        rows.append(
            {
                "query": item.query,
                "namespace": mem.namespace,
                "answer": result.get("answer"),
                "refused": result.get("refused"),
                **{name: _value(result, where) for name, _unit, where in COLUMNS},
            }
        )
        if progress:
            progress(done, len(questions))
    summary = summarise(rows)
    walls = summary["wall"]["p50"]
    plains = summary["plain"]["p50"]
    return {
        "questions": len(rows),
        "summary": summary,
        # the medians' ratio, beside the median of the per-question ratios (column "ratio")
        "p50_ratio": round(walls / plains, 3) if walls and plains else None,
        "rows": rows,
    }


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    out: dict[str, dict[str, float | None]] = {}
    for name, _unit, _where in COLUMNS:
        values = sorted(v for v in (r.get(name) for r in rows) if v is not None)
        out[name] = {
            "p50": round(_percentile(values, 50), 3) if values else None,
            "p90": round(_percentile(values, 90), 3) if values else None,
            "n": len(values),
        }
    return out


def render(report: dict[str, Any]) -> str:
    lines = [f"{'column':<14} {'unit':<4} {'p50':>9} {'p90':>9} {'n':>4}"]
    for name, unit, _where in COLUMNS:
        cell = report["summary"][name]

        def show(v: float | None) -> str:
            return "-" if v is None else (f"{v:.0f}" if unit == "tok" else f"{v:.3f}")  # s and x

        lines.append(f"{name:<14} {unit:<4} {show(cell['p50']):>9} {show(cell['p90']):>9} {cell['n']:>4}")
    if report.get("p50_ratio") is not None:
        lines.append(f"p50 wall / p50 plain call: {report['p50_ratio']:.3f}")
    lines.append(f"({report['questions']} questions; the first one's model_load is the process's)")
    return "\n".join(lines)
