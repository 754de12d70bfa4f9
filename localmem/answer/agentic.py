"""Agentic answering (REMem-I with MRAgent's cue → tag → content tool): a bounded tool loop.

Step 0 retrieves for the question itself, so the model starts from evidence. Each step the
model keeps the useful results and names the next tool; ``answer`` (or the step limit) ends
the loop, and the answer is written from everything kept by the same call fast mode uses
(:func:`answer.answer`), so citations and refusals work alike in both modes.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from .. import progress
from ..config import DEFAULTS
from ..models.protocols import LLM
from ..models.structured import complete_structured
from ..prompts import agent as prompt
from ..retrieval.hits import hydrate
from ..retrieval.search import mark_supersession
from ..store.engine import Store
from ..store.rows import all_rows
from ..text.names import normalise
from ..types import Answer, Hit, Names
from . import fast as answer_mod
from .evidence import evidence_line, format_date
from .question import Question

RESULTS_PER_STEP = 6
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass
class Step:
    """One tool call: what the model asked for, what it got and what it kept."""

    number: int
    tool: str
    args: dict[str, Any]
    results: list[str]  # "<hit id> <dated line>" as shown to the model
    kept: list[str] = field(default_factory=list)  # hit ids kept from the previous step's results
    note: str | None = None  # a count, or why the call did nothing
    seconds: float = 0.0


@dataclass
class Tools:
    """What the loop may call: search with a channel set (Memory's, bound to a namespace)
    and the store for the entity and episode tools."""

    conn: Store
    ns: str
    retrieve: Callable[[str, Sequence[str], int], list[Hit]]
    speakers: Names = field(default_factory=dict)


def run(
    tools: Tools,
    llm: LLM,
    question: str,
    today: dt.date | None,
    steps: int = 4,
    trace: Callable[[Step], None] | None = None,
    on_text: Callable[[str], None] | None = None,
    dates: bool = False,
) -> Answer:
    """Answer ``question`` with at most ``steps`` tool calls chosen by the model (``dates``:
    as :func:`answer.answer`'s)."""
    started = time.perf_counter()
    day = format_date(today.isoformat()) if today else None
    kept: list[Hit] = []
    tokens = {"prompt": 0, "completion": 0}
    calls = 0
    current = Step(0, "semantic_retrieve", {"query": question}, [])
    results = _call(tools, current, kept)
    history = [current]
    if trace:
        trace(current)
    for number in range(1, steps + 1):
        progress.stage(progress.SEARCH, f"looking through memory (step {number} of at most {steps})")
        messages = prompt.render(
            question,
            day,
            [evidence_line(h, dates) for h in kept],
            [evidence_line(h, dates) for h in results],
            _describe(current),
            number,
            steps,
        )
        reply = complete_structured(llm, messages, prompt.SCHEMA, prompt.MAX_TOKENS)
        calls += reply.calls
        tokens["prompt"] += reply.prompt_tokens
        tokens["completion"] += reply.completion_tokens
        if not reply.ok:
            break  # answer from what is kept
        data = reply.data or {}
        chosen = [results[n - 1] for n in data.get("keep", []) if 1 <= n <= len(results)]
        known = {h.id for h in kept}
        for hit in chosen:
            if hit.id not in known:
                kept.append(hit)
                known.add(hit.id)
        history[-1].kept = [h.id for h in chosen]
        if data["tool"] == "answer":
            break
        current = Step(number, data["tool"], {k: v for k, v in data.items() if k not in ("keep", "tool")}, [])
        results = _call(tools, current, kept)
        history.append(current)
        if trace:
            trace(current)
    # Nothing kept means nothing judged useful: the answer call is skipped and it is a refusal.
    out = answer_mod.answer(
        tools.conn,
        llm if kept else None,
        Question.parse(question, tools.speakers),
        kept,
        answer_mod.AnswerOptions(dates=dates),
        today,
        on_text=on_text,
        speakers=tools.speakers,
    )
    out.mode = "agentic"
    out.calls += calls
    out.tokens = {k: tokens[k] + out.tokens.get(k, 0) for k in tokens}
    out.timings["agent"] = round(time.perf_counter() - started, 3)
    out.steps = [dict(s.__dict__) for s in history]
    return out


def _describe(step: Step) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in step.args.items() if v not in (None, "", False))
    return f"{step.tool}({args})"


def _call(tools: Tools, step: Step, kept: Sequence[Hit]) -> list[Hit]:
    """Run one tool; the step records the result lines (and a note when there is none)."""
    started = time.perf_counter()
    args = step.args
    start, end = _date(args.get("start")), _date(args.get("end"))
    hits: list[Hit] = []
    if step.tool in ("semantic_retrieve", "lexical_retrieve"):
        query = (args.get("query") or "").strip()
        if query:
            channels = ["vector"] if step.tool == "semantic_retrieve" else ["bm25"]
            found = tools.retrieve(query, channels, DEFAULTS.ask_candidates)  # as many as fast mode's search
            hits = [h for h in found if _within(h, start, end)][:RESULTS_PER_STEP]
    elif step.tool == "entity_units":
        hits = _entity_units(tools, args, start, end, step)
    elif step.tool == "episode_context":
        hits = _episode_context(tools, args.get("item"), kept, step)
    elif step.tool == "personal_knowledge":
        hits = _personal_knowledge(tools, args, step)
    known = {h.id for h in kept}
    hits = [h for h in hits if h.id not in known]
    step.results = [f"{h.id} {evidence_line(h)[:160]}" for h in hits]
    if not hits and step.note is None:
        step.note = "no results"
    step.seconds = round(time.perf_counter() - started, 3)
    return hits


def _entity_units(tools: Tools, args: dict[str, Any], start: str | None, end: str | None, step: Step) -> list[Hit]:
    name = normalise(args.get("entity") or "")
    if not name:
        step.note = "no entity named"
        return []
    tag = (args.get("tag") or "").strip().lower() or None
    order = args.get("order") if args.get("order") in ("oldest", "newest") else "newest"
    params = {"ns": tools.ns, "name": name, "tag": tag, "start": start, "end": end, "order": order}
    if args.get("count"):
        total = len(all_rows(tools.conn.run("agent_entity_units", {**params, "limit": 10_000})))
        step.note = f"count: {total}"
    rows = all_rows(tools.conn.run("agent_entity_units", {**params, "limit": RESULTS_PER_STEP}))
    found = hydrate(tools.conn, [("u", r[0]) for r in rows])
    return [found[("u", r[0])] for r in rows if ("u", r[0]) in found]


def _personal_knowledge(tools: Tools, args: dict[str, Any], step: Step) -> list[Hit]:
    """MRAgent's person → aspect → statement: consolidated knowledge about a person, current
    statements first; without an aspect the note lists the aspects memory has for them."""
    name = normalise(args.get("entity") or "")
    if not name:
        step.note = "no person named"
        return []
    aspect = (args.get("tag") or "").strip().lower() or None
    params = {"ns": tools.ns, "name": name}
    aspects = all_rows(tools.conn.run("agent_person_aspects", params))
    if not aspects:
        step.note = "no lasting knowledge about them (not consolidated)"
        return []
    if aspect is None or aspect not in {a for a, _n in aspects}:
        step.note = "aspects: " + ", ".join(f"{a} ({n})" for a, n in aspects)
        aspect = None
    rows = all_rows(tools.conn.run("agent_person_knowledge", {**params, "aspect": aspect, "limit": RESULTS_PER_STEP}))
    found = hydrate(tools.conn, [("u", r[0]) for r in rows])
    return mark_supersession(tools.conn, [found[("u", r[0])] for r in rows if ("u", r[0]) in found])


def _episode_context(tools: Tools, item: Any, kept: Sequence[Hit], step: Step) -> list[Hit]:
    if not isinstance(item, int) or not 1 <= item <= len(kept):
        step.note = "no such kept item"
        return []
    kind, raw_id = kept[item - 1].id.split(":")
    row = tools.conn.run("agent_episode_of", {"kind": kind, "id": int(raw_id)}).fetchone()
    if not row or row[0] is None:
        step.note = "not part of an episode"
        return []
    episode = int(row[0])
    keys = [("u", episode)]
    keys += [(k, int(i)) for k, i in tools.conn.run("agent_episode_neighbours", {"id": episode})]
    keys += [("m", int(r[0])) for r in tools.conn.run("agent_episode_messages", {"id": episode})]
    found = hydrate(tools.conn, keys)
    return [found[k] for k in keys if k in found][: RESULTS_PER_STEP * 2]


def _date(value: Any) -> str | None:
    return value if isinstance(value, str) and _DATE.match(value) else None


def _within(hit: Hit, start: str | None, end: str | None) -> bool:
    if hit.day is None:
        return start is None and end is None
    day = hit.day.isoformat()
    return (start is None or day >= start) and (end is None or day <= end)
