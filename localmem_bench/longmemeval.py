"""End-to-end evaluation on LongMemEval's official JSON format: answer every item and score it.

Each haystack goes into its own namespace, in time order with the session dates, and the
question is asked with "now" at its ``question_date``. Items whose haystacks hold the same
sessions (the same ids, dates and turns; ``has_answer`` marks aside) share one namespace, named
by the ``question_id`` of the first of them in the file: the store is the same either way, and
it is built once, which is what makes ``--extract llm`` affordable on a set that asks many
questions of one history (our assistant set: 51 items, 2 histories). LongMemEval's own items
each differ. An
item whose id ends in ``_abs`` is an abstention item: refusing it is right, answering it wrong.

LongMemEval's own scorer asks GPT-4o whether an answer is right; offline, each answer is scored
by rules instead, and both are reported:

- ``contains``: the answer holds the gold answer: after normalising both (LoCoMo's rules:
  lower case, no punctuation, no a/an/the/and, number words as digits; and dates day first),
  the gold's words in order, or, when it has no digits, all of its (Porter-stemmed) words
  anywhere in the answer ("2 days (11 to 13 August)" does not hold "13 days"). A gold answer's
  parenthesised working ("84 days (22 January to 15 April 2024)") is left out first, and so is
  a leading "about", "around", "roughly" or "approximately" ("About £7,500": "£7,500" is right).
- ``f1``: token F1 against the gold answer, the same normalisation (LoCoMo's metric).

Both are approximate: a right answer in other words ("a month" for "31 days") counts as wrong,
and a long answer that quotes the gold among other things counts as right.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from localmem import Memory
from localmem.config import Config
from localmem.errors import InputError, LocalmemError
from localmem.text.files import read_input
from localmem.text.times import parse_timestamp

from . import retrieval as evaluate
from .answers import f1_score, normalise, tokens
from .baselines import SYSTEMS, plain, someone_else_checked

_NUMBERS = {
    w: str(i)
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty".split()
    )
}
_WORKING = re.compile(r"\s*\([^)]*\)")
_HEDGE = re.compile(r"^(?:about|around|roughly|approximately)\s+", re.I)


@dataclass
class _Item:
    question_id: str
    question_type: str
    question: str
    gold: str
    now: dt.date | None
    abstention: bool
    result: dict[str, Any] = field(default_factory=dict)


_MONTH_FIRST = re.compile(
    r"\b(january|february|march|april|may|june|july|august|september|october|november|"
    r"december) (\d{1,2}) (\d{4})\b"
)


def _numbers_as_digits(text: str) -> str:
    """Number words as digits, and a date written month first ("july 13 2024") day first."""
    return _MONTH_FIRST.sub(r"\2 \1 \3", " ".join(_NUMBERS.get(word, word) for word in text.split()))


def _core(gold: str) -> str:
    """The gold answer without its parenthesised working and a leading "about" or "around"."""
    core = _WORKING.sub("", gold).strip() or gold
    return _HEDGE.sub("", core) or core


def contains(answer: str, gold: str) -> bool:
    """Whether ``answer`` holds ``gold`` (see the module docstring)."""
    core = _core(gold)
    said, wanted = _numbers_as_digits(normalise(answer)), _numbers_as_digits(normalise(core))
    if not wanted:
        return False
    if re.search(rf"(?<!\w){re.escape(wanted)}(?!\w)", said):
        return True
    # Words in any order, but not numbers: "2 days (11 to 13 August)" does not hold "13 days".
    return not re.search(r"\d", wanted) and set(tokens(wanted)) <= set(tokens(said))


def score(item: _Item, answer: str, refused: bool) -> dict[str, float]:
    if item.abstention:
        return {"right": float(refused), "f1": float(refused)}
    if refused:
        return {"right": 0.0, "f1": 0.0}
    core = _core(item.gold)
    return {
        "right": float(contains(answer, item.gold)),
        "f1": round(f1_score(_numbers_as_digits(normalise(answer)), _numbers_as_digits(normalise(core))), 4),
    }


def longmemeval_answers(
    path: Path,
    config: Config,
    questions: list[str] | None = None,
    limit: int | None = None,
    mode: str = "fast",
    system: str = "localmem",
    embedder: Any = None,
    llm: Any = None,
    ask_filters: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Answer and score every item of a LongMemEval JSON file (``questions``: only these ids;
    ``limit``: the first ``limit`` items)."""
    if system not in SYSTEMS:
        raise LocalmemError(f"unknown --system {system!r}", f"available: {', '.join(SYSTEMS)}")
    if limit is not None and limit < 1:
        raise LocalmemError("--limit must be at least 1")
    chosen = SYSTEMS[system]
    path = Path(path)
    data = read_input(path)
    doc = evaluate._load_json(path, data)
    if evaluate._detect(path, doc) != "longmemeval":
        raise InputError(path, "not a LongMemEval file (a list of {question_id, haystack_sessions, ...})")
    raw_items = doc if isinstance(doc, list) else [doc]
    selected = evaluate._select(path, [str(i["question_id"]) for i in raw_items], questions)
    picked = [(i, item) for i, item in enumerate(raw_items) if str(item["question_id"]) in selected][:limit]
    items = [_item(path, index, item) for index, item in picked]
    if chosen.plain and not ask_filters:
        config = plain(config)
    db_path = evaluate.eval_db_path(config, "longmemeval")
    started = time.perf_counter()
    ingest_seconds = 0.0
    with (
        Memory(db_path, config=config, embedder=embedder, llm=llm) as mem,
        tempfile.TemporaryDirectory(prefix="localmem-eval-") as tmp,
    ):
        model = mem.llm.model_id
        # A haystack's namespace is named by the file's first item holding it, whichever items
        # were picked, so that a later run over other --questions finds the store built.
        owners = _haystack_owners(raw_items)
        loaded: set[str] = set()
        for done, ((index, raw), item) in enumerate(zip(picked, items), 1):
            owner = owners[index]
            namespace = str(raw_items[owner]["question_id"])
            if namespace not in loaded:
                loaded.add(namespace)
                haystack = Path(tmp) / f"item-{owner + 1}.jsonl"
                haystack.write_text(evaluate._haystack_jsonl(path, owner, raw_items[owner]), encoding="utf-8")
                ingest_seconds += mem.ingest(haystack, format="jsonl", namespace=namespace).seconds
            mem.namespace = namespace
            item.result = _scored(item, chosen.answer(mem, item.question, item.now, mode))
            if progress:
                progress(done, len(items))
    types = sorted({i.question_type for i in items})
    answerable = [i for i in items if not i.abstention]
    return {
        "benchmark": "longmemeval",
        "task": "answers",
        "system": system,
        "mode": mode,
        "file": str(path.resolve()),
        "sha256": hashlib.sha256(data).hexdigest(),
        "db": str(db_path),
        "model": model,
        "localmem_version": evaluate._version(),
        "created_at": dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat(),
        "ask_focus": config.ask_focus,
        "ask_check": someone_else_checked(config),
        "ask_rules_off": config.ask_rules_off,
        "ask_dates": config.ask_dates,
        "questions": len(items),
        "seconds": round(time.perf_counter() - started, 1),
        "ingest_seconds": round(ingest_seconds, 1),
        "rows": [_row(t, [i for i in items if i.question_type == t and not i.abstention]) for t in types]
        + [_row("abstention", [i for i in items if i.abstention])],
        "overall": _row("all", items),
        "answerable": _row("answerable", answerable),
        "refusal": _refusal(items),
        "details": [_detail(i) for i in items],
    }


def _haystack_owners(raw_items: list[Any]) -> list[int]:
    """For each item, the index of the file's first item with the same haystack."""
    first: dict[str, int] = {}
    return [first.setdefault(_haystack_key(raw), index) for index, raw in enumerate(raw_items)]


def _scored(item: Any, result: Any) -> dict[str, Any]:
    """What ``item``'s report row says of the answer ``result``: the answer, its citations,
    its cost and its scores."""
    return {
        "answer": result.answer,
        "refused": result.refused,
        "refusal": result.refusal,
        "citations": [c.external_id for c in result.citations],
        "seconds": result.timings.get("total", 0.0),
        "prompt_tokens": result.tokens.get("prompt", 0),
        "error": result.error,
        "timings": result.timings,
        "details": result.details,
        **score(item, result.answer, result.refused),
    }


def _detail(i: Any) -> dict[str, Any]:
    """One item's row of the report's details."""
    return {
        "question_id": i.question_id,
        "question_type": i.question_type,
        "question": i.question,
        "gold": i.gold,
        "now": i.now.isoformat() if i.now else None,
        "abstention": i.abstention,
        **i.result,
    }


def _haystack_key(raw: dict[str, Any]) -> str:
    """What an item's haystack holds (session ids, dates, roles and texts), as a digest."""
    sessions = [
        [[t.get("role"), t.get("content")] if isinstance(t, dict) else t for t in session]
        if isinstance(session, list)
        else session
        for session in raw.get("haystack_sessions") or []
    ]
    held = [raw.get("haystack_session_ids"), raw.get("haystack_dates"), sessions]
    return hashlib.sha256(json.dumps(held, sort_keys=True, default=str).encode()).hexdigest()


def _item(path: Path, index: int, raw: dict[str, Any]) -> _Item:
    where = f"item {index + 1} ({raw.get('question_id')})"
    try:
        when = parse_timestamp(raw.get("question_date")) if raw.get("question_date") else None
    except ValueError as exc:
        raise InputError(path, f"cannot read the question_date {raw.get('question_date')!r}", where) from exc
    qid = str(raw["question_id"])
    return _Item(
        qid,
        str(raw["question_type"]),
        str(raw["question"]),
        str(raw.get("answer", "")),
        dt.date.fromisoformat(when[:10]) if when else None,
        qid.endswith("_abs"),
    )


def _row(name: str, items: Sequence[_Item]) -> dict[str, Any]:
    seconds = sorted(i.result["seconds"] for i in items)
    return {
        "name": name,
        "n": len(items),
        "right": round(statistics.fmean(i.result["right"] for i in items), 4) if items else None,
        "f1": round(statistics.fmean(i.result["f1"] for i in items), 4) if items else None,
        "refused": round(sum(i.result["refused"] for i in items) / len(items), 4) if items else None,
        "p50_s": round(seconds[len(seconds) // 2], 2) if seconds else None,
    }


def _refusal(items: Sequence[_Item]) -> dict[str, Any]:
    refused = [i for i in items if i.result["refused"]]
    right = sum(i.abstention for i in refused)
    abstentions = sum(i.abstention for i in items)
    precision = right / len(refused) if refused else None
    recall = right / abstentions if abstentions else None
    f1 = (2 * precision * recall / (precision + recall)) if precision and recall else 0.0
    return {
        "refusals": len(refused),
        "abstention": abstentions,
        "precision": None if precision is None else round(precision, 4),
        "recall": None if recall is None else round(recall, 4),
        "f1": round(f1, 4),
    }


def render_markdown(report: dict[str, Any]) -> str:
    lines = [
        f"**LongMemEval answers** — file `{Path(report['file']).name}`, system `{report['system']}`, "
        f"mode {report['mode']}, model {report['model']}, {report['questions']} questions",
        "",
        "| question type | n | right | F1 | refused | p50 s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in [*report["rows"], report["answerable"], report["overall"]]:
        label = f"**{row['name']}**" if row["name"] in ("all", "answerable") else row["name"]
        lines.append(
            f"| {label} | {row['n']} | {_pct(row['right'])} | {_pct(row['f1'])} | "
            f"{_pct(row['refused'])} | {row['p50_s']} |"
        )
    r = report["refusal"]
    lines += [
        "",
        f"Abstention: precision {_pct(r['precision'])}, recall {_pct(r['recall'])}, F1 {r['f1']:.2f} "
        f'({r["refusals"]} refusals, {r["abstention"]} abstention items). "right": the answer '
        "contains the gold answer (rules, not an LLM judge); an abstention item is right when refused.",
    ]
    return "\n".join(lines) + "\n"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}"


def write_report(report: dict[str, Any], out_dir: Path) -> None:
    """Write ``answers.json`` and ``answers.md`` into ``out_dir``."""
    evaluate.write_report(report, out_dir, stem="answers", render=render_markdown)
