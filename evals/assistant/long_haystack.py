"""The assistant set with long histories, as LongMemEval's S variant has them: retrieval only.

Each history of ``dev.json`` (h1, h2) is padded with unrelated sessions: every session of the
other dev history, and two-person chats from a LoCoMo file (``--pad``; its first speaker is
taken as the user, the second as the assistant), at least :data:`MIN_PADDING` in all. The
padding sessions are spread evenly over the history's own date span, between its sessions,
so time alone does not tell them apart. The test half is never read.

For every answerable question (abstention items skipped) the script searches its history's
namespace, plain and padded, and reports recall@k at two levels:

- message: the share of the question's ``has_answer`` turns among the sources of the top-k hits;
- session: the share of its ``answer_session_ids`` among the sessions of those sources.

The padded set is built in memory (LoCoMo text is never written into the repository); the
stores are ``eval-assistant-plain.db`` and ``eval-assistant-long.db`` under ``LOCALMEM_HOME``
(reused: a history already ingested is not ingested again)::

    python evals/assistant/long_haystack.py --pad ../shared/data/locomo/locomo-dev.json \
        [--params '{"session_weight": 0.2}'] [--json out.json] [--write /tmp/long-dev.json]

``--write`` also writes the padded dev set in LongMemEval's layout, so the answers can be
measured on it too: ``localmem -q --db FILE eval longmemeval /tmp/long-dev.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from localmem import Memory
from localmem.config import Config
from localmem.retrieval.search import SearchParams
from localmem_bench.retrieval import _haystack_jsonl, eval_db_path

HERE = Path(__file__).resolve().parent
MIN_PADDING = 40
KS = (5, 10)
_DATE = "%Y/%m/%d (%a) %H:%M"


def histories(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """History name (``h1``) → its haystack: session ids, dates and sessions (shared by its items)."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        name = item["question_id"].split("-")[1]
        out.setdefault(
            name,
            {
                "ids": list(item["haystack_session_ids"]),
                "dates": list(item["haystack_dates"]),
                "sessions": item["haystack_sessions"],
            },
        )
    return out


def locomo_sessions(path: Path) -> list[tuple[str, list[dict[str, str]]]]:
    """Every session of a LoCoMo file as (id, user/assistant turns), in file order."""
    out = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        conv = sample["conversation"]
        first = conv["speaker_a"]
        for key in sorted((k for k in conv if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1])):
            turns = [
                {"role": "user" if t["speaker"] == first else "assistant", "content": t["text"]}
                for t in conv[key]
                if isinstance(t, dict) and t.get("text")
            ]
            if turns:
                out.append((f"pad-{sample['sample_id']}-{key.split('_')[1]}", turns))
    return out


def padded(history: dict[str, Any], padding: list[tuple[str, list[dict[str, str]]]]) -> dict[str, Any]:
    """``history`` with ``padding`` spread evenly over its date span, all sessions in date order."""
    dates = [dt.datetime.strptime(d, _DATE) for d in history["dates"]]
    start, end = dates[0], dates[-1]
    step = (end - start) / (len(padding) + 1)
    rows = list(zip(history["ids"], dates, history["sessions"]))
    for i, (sid, turns) in enumerate(padding, 1):
        rows.append((sid, start + step * i + dt.timedelta(minutes=7), turns))
    rows.sort(key=lambda r: r[1])
    return {
        "ids": [r[0] for r in rows],
        "dates": [r[1].strftime(_DATE) for r in rows],
        "sessions": [r[2] for r in rows],
    }


def with_haystacks(items: list[dict[str, Any]], haystacks: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """``items`` with each history's haystack replaced by ``haystacks``' (the padded one)."""
    out = []
    for item in items:
        hay = haystacks[item["question_id"].split("-")[1]]
        out.append(
            {
                **item,
                "haystack_session_ids": hay["ids"],
                "haystack_dates": hay["dates"],
                "haystack_sessions": hay["sessions"],
            }
        )
    return out


def measure(
    items: list[dict[str, Any]], haystacks: dict[str, dict[str, Any]], db: Path, config: Config, recipe: Any
) -> list[dict[str, Any]]:
    """Recall@k per answerable question, each searched in its history's namespace."""
    rows = []
    with Memory(db, config=config) as mem, tempfile.TemporaryDirectory(prefix="localmem-long-") as tmp:
        embedder = mem.embedder
        for name, hay in haystacks.items():
            item = {
                "question_id": name,
                "haystack_session_ids": hay["ids"],
                "haystack_dates": hay["dates"],
                "haystack_sessions": hay["sessions"],
            }
            path = Path(tmp) / f"{name}.jsonl"
            path.write_text(_haystack_jsonl(path, 0, item), encoding="utf-8")
            mem.ingest(path, format="jsonl", namespace=name)
    for name in haystacks:
        asked = [i for i in items if i["question_id"].split("-")[1] == name and not i["question_id"].endswith("_abs")]
        with Memory(db, namespace=name, config=config, embedder=embedder) as mem:
            results = mem.search_many([i["question"] for i in asked], k=max(KS), recipe=recipe)
            for item, hits in zip(asked, results):
                turns = [
                    f"{sid}:{ti}"
                    for sid, session in zip(item["haystack_session_ids"], item["haystack_sessions"])
                    for ti, turn in enumerate(session)
                    if turn.get("has_answer")
                ]
                row: dict[str, Any] = {"question_id": item["question_id"], "type": item["question_type"]}
                for k in KS:
                    sources = [s for h in hits[:k] for s in h.sources]
                    found = {s.external_id for s in sources}
                    sessions = {s.session for s in sources}
                    row[f"message@{k}"] = sum(t in found for t in turns) / len(turns)
                    row[f"session@{k}"] = sum(s in sessions for s in item["answer_session_ids"]) / len(
                        item["answer_session_ids"]
                    )
                rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pad", type=Path, required=True, help="a LoCoMo JSON file whose sessions pad the histories")
    parser.add_argument("--dev", type=Path, default=HERE / "dev.json")
    parser.add_argument("--params", help="SearchParams fields to change, as JSON")
    parser.add_argument("--json", type=Path, help="write every question's rows here")
    parser.add_argument(
        "--write",
        type=Path,
        help="also write the padded dev set here, in LongMemEval's layout, for `localmem eval longmemeval` "
        "(it holds LoCoMo text: keep it out of the repository)",
    )
    args = parser.parse_args(argv)
    config = Config.load()
    recipe = SearchParams(**json.loads(args.params)) if args.params else None
    items = json.loads(args.dev.read_text(encoding="utf-8"))
    plain = histories(items)
    chats = locomo_sessions(args.pad)
    long = {}
    for name, hay in plain.items():
        others = [(sid, s) for other, h in plain.items() if other != name for sid, s in zip(h["ids"], h["sessions"])]
        padding = others + chats[: max(0, MIN_PADDING + 4 - len(others))]
        long[name] = padded(hay, padding)
    if args.write:
        args.write.write_text(json.dumps(with_haystacks(items, long), indent=1), encoding="utf-8")
    home = eval_db_path(config, "assistant").parent
    out = {
        "plain": measure(items, plain, home / "eval-assistant-plain.db", config, recipe),
        "long": measure(items, long, home / "eval-assistant-long.db", config, recipe),
    }
    sessions = {name: len(h["ids"]) for name, h in long.items()}
    print(f"sessions per history: plain {[len(h['ids']) for h in plain.values()]}, long {list(sessions.values())}")
    cols = [f"{level}@{k}" for level in ("message", "session") for k in KS]
    print("| variant | n | " + " | ".join(cols) + " |")
    print("|---|---:|" + "---:|" * len(cols))
    for variant, rows in out.items():
        cells = [f"{100 * sum(r[c] for r in rows) / len(rows):.1f}" for c in cols]
        print(f"| {variant} | {len(rows)} | " + " | ".join(cells) + " |")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
