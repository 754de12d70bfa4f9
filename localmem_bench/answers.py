"""End-to-end evaluation on LoCoMo: answer every question with ``Memory.ask`` and score it.

Scores follow LoCoMo's own evaluation code (``task_eval/evaluation.py``):

- answers are normalised (commas dropped, lower case, punctuation and the words a/an/the/and
  removed) and stemmed with Porter's algorithm; the Porter stemmer here is SQLite FTS5's
  (through apsw), not NLTK's, so rare words may stem differently;
- token F1 per question; category 1 (multi-hop) splits both answers on commas and averages,
  over the gold parts, the best F1 of any predicted part; category 3 keeps the gold answer
  before the first ";";
- category 5 (adversarial) scores 1 when the system refuses;
- BLEU-1: clipped unigram precision with the brevity penalty, on the same tokens;
- evidence recall: the share of a question's evidence ``dia_id``s among the answer's citations;
- refusal precision / recall / F1: a refusal is right on a category-5 question and wrong
  elsewhere.

Systems: ``localmem`` (the store as built: messages and, when extracted, memory units) and
``raw-hybrid`` (the same model and token budget, evidence from raw turns by vector + BM25) and
``full-context`` (no retrieval: the newest turns that fit the model's context window, the
oldest cut; the prompt's evidence is the same for every question of a conversation, so the
model's prefix cache evaluates it once). The two baselines are plain: the same answer prompt,
without localmem's focus on the person asked or its someone-else check (both read the
speakers' names the memory resolved) and without the dates written after relative times,
unless ``ask_filters`` gives them those too.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import re
import statistics
import string
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from localmem import Memory
from localmem.config import Config
from localmem.errors import InputError, LocalmemError
from localmem.text.files import read_input
from localmem.text.words import porter_stemmer

from . import retrieval as evaluate
from .baselines import SYSTEMS, plain, someone_else_checked


@dataclass
class _Item:
    namespace: str
    category: int
    question: str
    gold: str
    evidence: list[str]
    result: dict[str, Any] = field(default_factory=dict)


# -- scoring (LoCoMo's rules) -----------------------------------------------------------------
_PUNCTUATION = frozenset(string.punctuation)


def normalise(text: str) -> str:
    text = str(text).replace(",", "").lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = re.sub(r"\b(a|an|the|and)\b", " ", text)
    return " ".join(text.split())


def tokens(text: str) -> list[str]:
    return porter_stemmer()(normalise(text))


def f1_score(prediction: str, gold: str) -> float:
    pred, ref = tokens(prediction), tokens(gold)
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def multi_f1(prediction: str, gold: str) -> float:
    predictions = [p.strip() for p in prediction.split(",")]
    golds = [g.strip() for g in gold.split(",")]
    return sum(max(f1_score(p, g) for p in predictions) for g in golds) / len(golds)


def bleu1(prediction: str, gold: str) -> float:
    pred, ref = tokens(prediction), tokens(gold)
    if not pred or not ref:
        return 0.0
    clipped = sum((Counter(pred) & Counter(ref)).values())
    brevity = 1.0 if len(pred) > len(ref) else math.exp(1 - len(ref) / len(pred))
    return brevity * clipped / len(pred)


def score(category: int, prediction: str, gold: str, refused: bool) -> dict[str, float]:
    if category == 5:
        return {"f1": float(refused), "bleu1": float(refused)}
    if refused:
        return {"f1": 0.0, "bleu1": 0.0}
    if category == 3:
        gold = gold.split(";")[0].strip()
    f1 = multi_f1(prediction, gold) if category == 1 else f1_score(prediction, gold)
    return {"f1": round(f1, 4), "bleu1": round(bleu1(prediction, gold), 4)}


# -- running ----------------------------------------------------------------------------------
def locomo_answers(
    path: Path,
    config: Config,
    conversations: list[str] | None = None,
    limit: int | None = None,
    every: int = 1,
    mode: str = "fast",
    system: str = "localmem",
    embedder: Any = None,
    llm: Any = None,
    ask_filters: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Answer and score every question (all five categories) of a LoCoMo file.

    Each conversation is answered in its own namespace, with "now" at its latest message.
    ``every``: answer only every Nth question of each conversation (LoCoMo lists its questions
    by category, so a stride samples all five in proportion; ``limit`` caps the sample).
    ``ask_filters``: a baseline system keeps the configured focus, someone-else check and
    dates after relative times (by default a baseline runs without them).
    """
    chosen = _checked_system(system, limit, every)
    path = Path(path)
    data = read_input(path)
    doc = evaluate._load_json(path, data)
    if evaluate._detect(path, doc) != "locomo":
        raise InputError(path, "end-to-end evaluation reads LoCoMo files only")
    db_path = evaluate.eval_db_path(config, "locomo")
    items = _items(path, doc, conversations, limit, every)
    if chosen.plain and not ask_filters:
        config = plain(config)
    started = time.perf_counter()
    with Memory(db_path, config=config, embedder=embedder, llm=llm) as mem:
        ingest = mem.ingest(path, format="locomo")
        model = mem.llm.model_id
        for done, item in enumerate(items, 1):
            mem.namespace = item.namespace
            item.result = _scored(item, chosen.answer(mem, item.question, None, mode))
            if progress:
                progress(done, len(items))
    return {
        "benchmark": "locomo",
        "task": "answers",
        "system": system,
        "mode": mode,
        "file": str(path.resolve()),
        "sha256": hashlib.sha256(data).hexdigest(),
        "db": str(db_path),
        "model": model,
        "localmem_version": evaluate._version(),
        "created_at": dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat(),
        "conversations": sorted({i.namespace for i in items}),
        "limit": limit,
        "every": every,
        "ask_focus": config.ask_focus,
        "ask_check": someone_else_checked(config),
        "ask_rules_off": config.ask_rules_off,
        "ask_dates": config.ask_dates,
        "questions": len(items),
        "seconds": round(time.perf_counter() - started, 1),
        "ingest_seconds": round(ingest.seconds, 1),
        "rows": [
            _row(str(c), evaluate.CATEGORY_NAMES[c], [i for i in items if i.category == c])
            for c in sorted({i.category for i in items})
        ],
        "overall": _row("all", "categories 1-4", [i for i in items if i.category in evaluate.SCORED_CATEGORIES]),
        "refusal": _refusal(items),
        "details": [
            {
                "conversation": i.namespace,
                "category": i.category,
                "question": i.question,
                "gold": i.gold,
                "evidence": i.evidence,
                **i.result,
            }
            for i in items
        ],
    }


def _checked_system(system: str, limit: int | None, every: int) -> Any:
    """The evaluated system named ``system``, once it and ``--limit`` and ``--every`` are valid."""
    if system not in SYSTEMS:
        raise LocalmemError(f"unknown --system {system!r}", f"available: {', '.join(SYSTEMS)}")
    if limit is not None and limit < 1:
        raise LocalmemError("--limit must be at least 1")
    if every < 1:
        raise LocalmemError("--every must be at least 1")
    return SYSTEMS[system]


def _scored(item: _Item, result: Any) -> dict[str, Any]:
    """What ``item``'s report row says of the answer ``result``: the answer, its citations,
    its cost and its scores."""
    cited = {c.external_id for c in result.citations}
    return {
        "answer": result.answer,
        "refused": result.refused,
        "refusal": result.refusal,
        "confidence": result.confidence,
        "citations": sorted(cited),
        "seconds": result.timings.get("total", 0.0),
        "prompt_tokens": result.tokens.get("prompt", 0),
        "completion_tokens": result.tokens.get("completion", 0),
        "error": result.error,
        "timings": result.timings,
        "details": result.details,
        "evidence_recall": round(sum(e in cited for e in item.evidence) / len(item.evidence), 4)
        if item.evidence
        else None,
        **score(item.category, result.answer, item.gold, result.refused),
    }


def _items(path: Path, doc: Any, conversations: list[str] | None, limit: int | None, every: int = 1) -> list[_Item]:
    samples = doc if isinstance(doc, list) else [doc]
    ids = [str(s.get("sample_id") or f"sample-{i + 1}") if isinstance(s, dict) else "" for i, s in enumerate(samples)]
    selected = evaluate._select(path, ids, conversations)
    out: list[_Item] = []
    for si, (sid, sample) in enumerate(zip(ids, samples)):
        if sid not in selected:
            continue
        taken = 0
        for qi, item in enumerate(sample.get("qa") or []):
            if limit is not None and taken >= limit:
                break
            if (
                not isinstance(item, dict)
                or not isinstance(item.get("question"), str)
                or item.get("category") not in evaluate.CATEGORY_NAMES
            ):
                raise InputError(
                    path,
                    "a QA item needs a string 'question' and a category 1-5",
                    f"sample {si + 1} ({sid}) qa {qi + 1}",
                )
            if qi % every:
                continue
            gold = item.get("answer", item.get("adversarial_answer", ""))
            out.append(
                _Item(sid, item["category"], item["question"], str(gold), evaluate.parse_evidence(item.get("evidence")))
            )
            taken += 1
    return out


def _row(category: str, name: str, items: Sequence[_Item]) -> dict[str, Any]:
    def mean(key: str) -> float | None:
        values = [i.result[key] for i in items if i.result.get(key) is not None]
        return round(statistics.fmean(values), 4) if values else None

    seconds = sorted(i.result["seconds"] for i in items)
    return {
        "category": category,
        "name": name,
        "n": len(items),
        "f1": mean("f1"),
        "bleu1": mean("bleu1"),
        "evidence_recall": mean("evidence_recall") if category != "5" else None,
        "refused": round(sum(i.result["refused"] for i in items) / len(items), 4) if items else None,
        "p50_s": _quantile(seconds, 0.5),
        "p95_s": _quantile(seconds, 0.95),
        "prompt_tokens": mean("prompt_tokens"),
        "completion_tokens": mean("completion_tokens"),
    }


def _quantile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    return round(values[min(len(values) - 1, int(q * len(values)))], 2)


def _refusal(items: Sequence[_Item]) -> dict[str, Any]:
    refused = [i for i in items if i.result["refused"]]
    right = sum(i.category == 5 for i in refused)
    adversarial = sum(i.category == 5 for i in items)
    precision = right / len(refused) if refused else None
    recall = right / adversarial if adversarial else None
    f1 = (2 * precision * recall / (precision + recall)) if precision and recall else 0.0
    return {
        "refusals": len(refused),
        "adversarial": adversarial,
        "precision": _round(precision),
        "recall": _round(recall),
        "f1": round(f1, 4),
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


# -- output -----------------------------------------------------------------------------------
def render_markdown(report: dict[str, Any]) -> str:
    lines = [
        f"**LoCoMo answers** — system `{report['system']}`, mode {report['mode']}, model "
        f"{report['model']}, conversations: {', '.join(report['conversations'])}; focus on the "
        f"person asked {_on(report.get('ask_focus'))}, someone-else check {_on(report.get('ask_check'))}, "
        f"dates after relative times {_on(report.get('ask_dates'))}",
        "",
        "| category | n | F1 | BLEU-1 | evidence recall | refused | p50 s | p95 s | prompt tok | gen tok |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in [*report["rows"], report["overall"]]:
        label = f"**{row['name']}**" if row["category"] == "all" else f"{row['category']} {row['name']}"
        lines.append(
            f"| {label} | {row['n']} | {_pct(row['f1'])} | {_pct(row['bleu1'])} | "
            f"{_pct(row['evidence_recall'])} | {_pct(row['refused'])} | {row['p50_s']} | "
            f"{row['p95_s']} | {row['prompt_tokens']} | {row['completion_tokens']} |"
        )
    r = report["refusal"]
    lines += [
        "",
        f"Refusal on category 5: precision {_pct(r['precision'])}, recall {_pct(r['recall'])}, "
        f"F1 {r['f1']:.2f} ({r['refusals']} refusals, {r['adversarial']} adversarial questions). "
        "Category 5 counts a refusal as correct; the overall row covers categories 1-4.",
    ]
    return "\n".join(lines) + "\n"


def _on(value: bool | None) -> str:
    return "?" if value is None else ("on" if value else "off")


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}"


def write_report(report: dict[str, Any], out_dir: Path) -> None:
    """Write ``answers.json`` and ``answers.md`` into ``out_dir``."""
    evaluate.write_report(report, out_dir, stem="answers", render=render_markdown)
