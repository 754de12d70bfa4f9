"""Retrieval evaluation: evidence recall@k of search on LoCoMo (and LongMemEval) files, no LLM.

LoCoMo: every sample is ingested into the namespace named by its ``sample_id``;
a question's recall@k is the share of its evidence ``dia_id``s found among the
sources of the top-k hits. Categories are reported by id with LoCoMo's own
mapping (:data:`CATEGORY_NAMES`); the overall row covers categories 1-4 only.

LongMemEval (detected by its keys): every item's haystack is ingested into the
namespace named by its ``question_id``; recall@k is the share of its
``answer_session_ids`` found among the sessions of the top-k hits' sources,
reported per ``question_type``. Abstention items (``_abs`` ids) are skipped, as
in LongMemEval's own retrieval scorer.

Unless a store was given (``--db``, env or config file), evaluation uses its own
store, ``eval-<benchmark>.db`` in the user data dir, so it never touches the
user's memory. Re-running reuses it: re-ingesting a file is a no-op.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import importlib.metadata
import json
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from localmem import Hit, IngestReport, Memory
from localmem.config import Config, StoreLocation, home_dir, user_data_dir
from localmem.errors import InputError, LocalmemError, NotFoundError
from localmem.files import private_dir
from localmem.models.protocols import Embedder
from localmem.text.files import decode, read_input
from localmem.text.times import parse_timestamp

from .baselines import RAW_TURNS

__all__ = ["CATEGORY_NAMES", "locomo_retrieval", "render_markdown", "write_report", "parse_evidence", "eval_db_path"]

CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
SCORED_CATEGORIES = (1, 2, 3, 4)
_EVIDENCE_ID = re.compile(r"D\d+:\d+")
_LONGMEMEVAL_KEYS = (
    "question_id",
    "question_type",
    "question",
    "haystack_sessions",
    "haystack_session_ids",
    "answer_session_ids",
)


@dataclass
class _Question:
    namespace: str
    group: int | str
    text: str
    gold: list[str]
    recall: dict[int, float] = field(default_factory=dict)
    ranks: dict[str, int | None] = field(default_factory=dict)


def parse_evidence(evidence: Any) -> list[str]:
    """The distinct ``D<n>:<k>`` ids in a LoCoMo evidence list, in order; tolerates malformed strings."""
    items = evidence if isinstance(evidence, list) else [evidence] if evidence else []
    found = [m for item in items for m in _EVIDENCE_ID.findall(str(item))]
    return list(dict.fromkeys(found))


def eval_db_path(config: Config, benchmark: str = "locomo") -> StoreLocation:
    """The store to evaluate in: the one given (flag, env, config file or API), else a dedicated one.

    The dedicated store is ``eval-<benchmark>.db`` in the user data dir (``LOCALMEM_HOME``
    if set), so evaluation never writes into the user's own memory. ``Config.load``
    leaves ``db_path`` unset exactly when ``config.origin("db_path") == "default"``.
    """
    if config.db_path is not None:
        return config.resolved_db_path()
    return (home_dir() or user_data_dir()) / f"eval-{benchmark}.db"


def locomo_retrieval(
    path: Path,
    config: Config,
    ks: list[int],
    conversations: list[str] | None = None,
    limit: int | None = None,
    channels: list[str] | None = None,
    *,
    embedder: Embedder | None = None,
    promote: bool = False,
    rerank: str = "auto",
    raw: bool = False,
) -> dict[str, Any]:
    """Evidence recall@k of search for every question of a LoCoMo (or LongMemEval) JSON file.

    ``conversations`` selects sample_ids (LongMemEval: question_ids); ``limit`` caps
    the questions per conversation; ``channels`` restricts search (default: all);
    ``embedder`` overrides the configured one (tests); ``raw``: the raw-turn hybrid baseline
    (whole messages by vector + BM25, whatever the store holds besides). Returns a JSON-able
    report.
    """
    path, ks = Path(path), _checked_sizes(ks, limit)
    data = read_input(path)
    doc = _load_json(path, data)
    benchmark = _detect(path, doc)
    db_path = eval_db_path(config, benchmark)
    with Memory(db_path, config=config, embedder=embedder) as mem:
        chosen = list(mem.search_params(k=ks[-1], channels=channels, rerank=rerank).channels)  # fail early
        if benchmark == "locomo":
            questions, info, ingest = _locomo_prepare(path, doc, mem, conversations, limit)
        else:
            questions, info, ingest = _longmemeval_prepare(path, doc, mem, conversations, limit)
        embedder = mem.embedder
    if raw:
        chosen = ["vector", "bm25"]
    seconds = _run_searches(
        questions,
        db_path,
        config,
        embedder,
        ks,
        chosen,
        "external_id" if benchmark == "locomo" else "session",
        promote,
        rerank,
        raw,
    )
    scored: set[int] | None = set(SCORED_CATEGORIES) if benchmark == "locomo" else None
    rows, overall = _summarise(questions, ks, benchmark, scored)
    return {
        "benchmark": benchmark,
        "task": "retrieval",
        "metric": _METRICS[benchmark],
        "file": str(path.resolve()),
        "sha256": hashlib.sha256(data).hexdigest(),
        "db": str(db_path),
        "eval_store": db_path != config.resolved_db_path(),
        "embedder": embedder.model_id,
        "localmem_version": _version(),
        "created_at": dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat(),
        "channels": chosen,
        "system": "raw-hybrid" if raw else "localmem",
        "promote": promote,
        "rerank": rerank,
        "ks": ks,
        "limit": limit,
        **(_locomo_fields() if benchmark == "locomo" else {}),
        **info,
        "questions": len(questions),
        "rows": rows,
        "overall": overall,
        "search": {
            "seconds": round(seconds, 3),
            "mean_latency_ms": round(1000 * seconds / len(questions), 2) if questions else None,
        },
        "ingest": _ingest_summary(ingest),
        "details": [_detail(q, ks) for q in questions],
    }


_METRICS = {
    "locomo": "evidence recall@k: share of a question's evidence dia_ids among the sources of the top-k hits",
    "longmemeval": "session recall@k: share of answer_session_ids among the sessions of the top-k hits' sources",
}


def _checked_sizes(ks: list[int], limit: int | None) -> list[int]:
    """The sizes of ``--k``, sorted and distinct, once they and ``--limit`` are at least 1."""
    ks = sorted(set(ks))
    if not ks or ks[0] < 1:
        raise LocalmemError("--k needs one or more sizes of at least 1, e.g. --k 5,10,20")
    if limit is not None and limit < 1:
        raise LocalmemError("--limit must be at least 1")
    return ks


def _locomo_fields() -> dict[str, Any]:
    return {"category_names": {str(c): n for c, n in CATEGORY_NAMES.items()}, "overall_covers": list(SCORED_CATEGORIES)}


def _detail(q: Any, ks: list[int]) -> dict[str, Any]:
    """One question's row of the report: where its gold evidence ranked, and its recall@k."""
    return {
        "conversation": q.namespace,
        "category": q.group,
        "question": q.text,
        "gold": q.gold,
        "ranks": q.ranks,
        **{f"recall@{k}": q.recall[k] for k in ks},
    }


# -- loading -------------------------------------------------------------------------
def _load_json(path: Path, data: bytes) -> Any:
    text = decode(path, data)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            path,
            f"not a LoCoMo or LongMemEval JSON file (invalid JSON: {exc.msg})",
            f"line {exc.lineno} col {exc.colno}",
        ) from exc


def _detect(path: Path, doc: Any) -> str:
    items = doc if isinstance(doc, list) else [doc]
    first = items[0] if items and isinstance(items[0], dict) else {}
    if isinstance(first.get("conversation"), dict) and "qa" in first:
        return "locomo"
    if all(key in first for key in _LONGMEMEVAL_KEYS):
        return "longmemeval"
    raise InputError(
        path,
        "not a LoCoMo file (a list of {sample_id, conversation, qa}) nor a "
        "LongMemEval file (a list of {question_id, haystack_sessions, ...})",
        hint="pass a benchmark file",
    )


def _select(path: Path, available: list[str], wanted: list[str] | None) -> set[str]:
    if not wanted:
        return set(available)
    unknown = [w for w in wanted if w not in available]
    if unknown:
        shown = ", ".join(available[:10]) + (", ..." if len(available) > 10 else "")
        raise NotFoundError(f"{path}: no conversation {', '.join(unknown)} in the file", f"available: {shown}")
    return set(wanted)


def _locomo_prepare(
    path: Path, doc: Any, mem: Memory, conversations: list[str] | None, limit: int | None
) -> tuple[list[_Question], dict[str, Any], IngestReport]:
    samples = doc if isinstance(doc, list) else [doc]
    ids = [str(s.get("sample_id") or f"sample-{i + 1}") if isinstance(s, dict) else "" for i, s in enumerate(samples)]
    selected = _select(path, ids, conversations)
    questions: list[_Question] = []
    per_conv: list[dict[str, Any]] = []
    for si, (sid, sample) in enumerate(zip(ids, samples)):
        if sid not in selected:
            continue
        qa = sample.get("qa")
        if not isinstance(qa, list):
            raise InputError(path, "'qa' must be a list of questions", f"sample {si + 1} ({sid})")
        dia_ids = {
            t.get("dia_id")
            for key, turns in sample["conversation"].items()
            if re.fullmatch(r"session_\d+", key) and isinstance(turns, list)
            for t in turns
            if isinstance(t, dict)
        }
        taken = skipped = unknown = 0
        for qi, item in enumerate(qa):
            where = f"sample {si + 1} ({sid}) qa {qi + 1}"
            if (
                not isinstance(item, dict)
                or not isinstance(item.get("question"), str)
                or not isinstance(item.get("category"), int)
            ):
                raise InputError(path, "a QA item needs a string 'question' and an integer 'category'", where)
            if limit is not None and taken >= limit:
                break
            gold = parse_evidence(item.get("evidence"))
            if not gold:
                skipped += 1
                continue
            unknown += sum(g not in dia_ids for g in gold)
            questions.append(_Question(sid, item["category"], item["question"], gold))
            taken += 1
        per_conv.append(
            {"conversation": sid, "questions": taken, "skipped_no_evidence": skipped, "unknown_evidence_ids": unknown}
        )
    ingest = mem.ingest(path, format="locomo")
    info = {
        "conversations": [c["conversation"] for c in per_conv],
        "skipped_no_evidence": sum(c["skipped_no_evidence"] for c in per_conv),
        "unknown_evidence_ids": sum(c["unknown_evidence_ids"] for c in per_conv),
        "per_conversation": per_conv,
    }
    return questions, info, ingest


def _longmemeval_prepare(
    path: Path, doc: Any, mem: Memory, conversations: list[str] | None, limit: int | None
) -> tuple[list[_Question], dict[str, Any], IngestReport]:
    items = doc if isinstance(doc, list) else [doc]
    for i, item in enumerate(items):
        if not isinstance(item, dict) or any(key not in item for key in _LONGMEMEVAL_KEYS):
            raise InputError(path, f"a LongMemEval item needs {', '.join(_LONGMEMEVAL_KEYS)}", f"item {i + 1}")
    selected = _select(path, [str(item["question_id"]) for item in items], conversations)
    questions: list[_Question] = []
    total = IngestReport(path=str(path.resolve()), format="longmemeval", sha256="")
    abstention = no_evidence = 0
    with tempfile.TemporaryDirectory(prefix="localmem-eval-") as tmp:
        for i, item in enumerate(items):
            qid = str(item["question_id"])
            if qid not in selected:
                continue
            if qid.endswith("_abs"):
                abstention += 1
                continue
            gold = list(dict.fromkeys(str(s) for s in item["answer_session_ids"] or ()))
            if not gold:
                no_evidence += 1
                continue
            haystack = Path(tmp) / f"item-{i + 1}.jsonl"
            haystack.write_text(_haystack_jsonl(path, i, item), encoding="utf-8")
            report = mem.ingest(haystack, format="jsonl", namespace=qid)
            total.namespaces += report.namespaces
            total.seconds += report.seconds
            total.embed_seconds += report.embed_seconds
            questions.append(_Question(qid, str(item["question_type"]), str(item["question"]), gold))
    info = {
        "conversations": [q.namespace for q in questions],
        "skipped_abstention": abstention,
        "skipped_no_evidence": no_evidence,
    }
    return questions, info, total


def _haystack_jsonl(path: Path, index: int, item: dict[str, Any]) -> str:
    """One LongMemEval haystack as localmem JSONL: ids ``<session_id>:<turn>``, times from haystack_dates."""
    qid, where = str(item["question_id"]), f"item {index + 1} ({item['question_id']})"
    sessions, session_ids = item["haystack_sessions"], item["haystack_session_ids"]
    dates = item.get("haystack_dates") or [None] * len(sessions)
    if not (isinstance(sessions, list) and len(sessions) == len(session_ids) == len(dates)):
        raise InputError(
            path, "haystack_sessions, haystack_session_ids and haystack_dates must be lists of the same length", where
        )
    lines: list[str] = []
    seen: set[str] = set()
    for si, (sid, session, date) in enumerate(zip(session_ids, sessions, dates)):
        sid = str(sid)
        if sid in seen:
            continue
        seen.add(sid)
        try:
            when = parse_timestamp(date)
        except ValueError as exc:
            raise InputError(path, f"cannot read the time {date!r}", f"{where} haystack_dates[{si}]") from exc
        for ti, turn in enumerate(session if isinstance(session, list) else ()):
            if not isinstance(turn, dict) or not isinstance(turn.get("content"), str):
                raise InputError(path, "a turn needs a string 'content'", f"{where} haystack_sessions[{si}][{ti}]")
            role = str(turn.get("role") or "user")
            # A turn of a chat between people (evals/timeq's WhatsApp sessions) names its
            # speaker; only the owner's turns keep a role ("user"), as a WhatsApp import has none.
            named = turn.get("speaker") if isinstance(turn.get("speaker"), str) else None
            lines.append(
                json.dumps(
                    {
                        "conversation": qid,
                        "session": sid,
                        "id": f"{sid}:{ti}",
                        "speaker": named or role,
                        "role": role if not named or role == "user" else None,
                        "text": turn["content"],
                        "time": when,
                    },
                    ensure_ascii=False,
                )
            )
    if not lines:
        raise InputError(path, "the haystack has no turns", where)
    return "\n".join(lines) + "\n"


# -- searching and scoring -------------------------------------------------------------------
def _run_searches(
    questions: list[_Question],
    db_path: StoreLocation,
    config: Config,
    embedder: Embedder,
    ks: list[int],
    channels: list[str],
    attr: str,
    promote: bool = False,
    rerank: str = "auto",
    raw: bool = False,
) -> float:
    """Search every question in its namespace, fill in recall and ranks; total search seconds."""
    by_namespace: dict[str, list[_Question]] = {}
    for question in questions:
        by_namespace.setdefault(question.namespace, []).append(question)
    seconds = 0.0
    for namespace, group in by_namespace.items():
        with Memory(db_path, namespace=namespace, config=config, embedder=embedder) as mem:
            started = time.perf_counter()
            results = mem.search_many(
                [q.text for q in group],
                k=ks[-1],
                channels=channels,
                promote=promote,
                rerank=rerank,
                recipe=RAW_TURNS if raw else None,
            )
            for question, hits in zip(group, results):
                _score(question, hits, ks, attr)
            seconds += time.perf_counter() - started
    return seconds


def _score(question: _Question, hits: list[Hit], ks: list[int], attr: str) -> None:
    first: dict[str, int] = {}
    for rank, hit in enumerate(hits, 1):
        for source in hit.sources:
            first.setdefault(str(getattr(source, attr)), rank)
    question.ranks = {g: first.get(g) for g in question.gold}
    for k in ks:
        found = sum(1 for r in question.ranks.values() if r is not None and r <= k)
        question.recall[k] = round(found / len(question.gold), 4)


def _summarise(
    questions: list[_Question], ks: list[int], benchmark: str, scored: set[int] | None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    def row(key: Any, name: str, members: list[_Question]) -> dict[str, Any]:
        out: dict[str, Any] = {"category": key, "name": name, "n": len(members)}
        for k in ks:
            out[f"recall@{k}"] = round(sum(q.recall[k] for q in members) / len(members), 4) if members else None
        return out

    groups: dict[Any, list[_Question]] = {}
    for question in questions:
        groups.setdefault(question.group, []).append(question)
    if benchmark == "locomo":
        keys = sorted(set(groups) | set(CATEGORY_NAMES))
        rows = [row(key, CATEGORY_NAMES.get(key, "unknown"), groups.get(key, [])) for key in keys]
        counted = [q for q in questions if q.group in (scored or ())]
        return rows, row("all", "all 1–4", counted)
    rows = [row(key, str(key), groups[key]) for key in sorted(groups)]
    return rows, row("all", "all", questions)


def _ingest_summary(report: IngestReport) -> dict[str, Any]:
    return {
        "seconds": round(report.seconds, 3),
        "embed_seconds": round(report.embed_seconds, 3),
        "added": report.added,
        "skipped": report.skipped,
        "already_loaded": bool(report.namespaces) and all(n.already_loaded for n in report.namespaces),
    }


def _version() -> str:
    try:
        return importlib.metadata.version("localmem")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - a source checkout
        return "unknown"


# -- output ------------------------------------------------------------------------------------
def render_markdown(report: dict[str, Any]) -> str:
    """The report as a Markdown table: one row per category and an overall row, recall@k in percent."""
    ks: Sequence[int] = report["ks"]
    locomo = report["benchmark"] == "locomo"
    convs = report.get("conversations") or []
    shown = ", ".join(convs[:10]) + (f", ... ({len(convs)} in all)" if len(convs) > 10 else "")
    title = "LoCoMo" if locomo else "LongMemEval"
    name = Path(report["file"]).name
    lines = [
        f"**{title} retrieval** — file `{name}` (sha256 {report['sha256'][:12]}), "
        f"conversations: {shown or 'none'}; channels: {', '.join(report['channels'])}"
        + (" over whole raw messages alone (raw-turn hybrid)" if report.get("system") == "raw-hybrid" else ""),
        "",
        "| " + " | ".join(["category" if locomo else "question type", "n"] + [f"recall@{k}" for k in ks]) + " |",
        "|---|---:|" + "---:|" * len(ks),
    ]
    for row in [*report["rows"], report["overall"]]:
        if row["category"] == "all":
            label = f"**{row['name']}**"
        else:
            label = f"{row['category']} {row['name']}" if locomo else row["name"]
        cells = [_percent(row[f"recall@{k}"]) for k in ks]
        lines.append(f"| {label} | {row['n']} | " + " | ".join(cells) + " |")
    notes = [f"{report.get('skipped_no_evidence', 0)} question(s) without evidence skipped"]
    if report.get("skipped_abstention"):
        notes.append(f"{report['skipped_abstention']} abstention question(s) skipped")
    if report.get("unknown_evidence_ids"):
        notes.append(f"{report['unknown_evidence_ids']} evidence id(s) not in the conversation")
    latency = report["search"]["mean_latency_ms"]
    if latency is not None:
        notes.append(f"mean search latency {latency:.1f} ms/question")
    notes.append(f"ingest {report['ingest']['seconds']:.1f} s; embedder {report['embedder']}")
    lines += ["", "; ".join(notes) + "."]
    if locomo:
        lines.append(
            "Categories by LoCoMo id: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, "
            "5 adversarial (not in the overall row)."
        )
    return "\n".join(lines) + "\n"


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def write_report(
    report: dict[str, Any], out_dir: Path, stem: str = "report", render: Callable[[dict[str, Any]], str] | None = None
) -> None:
    """Write ``<stem>.json`` and ``<stem>.md`` (``render``, default :func:`render_markdown`)
    into ``out_dir`` (created if needed)."""
    out_dir = Path(out_dir)
    try:
        private_dir(out_dir)
        (out_dir / f"{stem}.json").write_text(json.dumps(report, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        (out_dir / f"{stem}.md").write_text((render or render_markdown)(report), encoding="utf-8")
    except OSError as exc:
        raise LocalmemError(
            f"cannot write the report to {out_dir}: {exc.strerror or exc}", "pass another --out folder"
        ) from exc
