"""All-recall of counting questions: the share whose every evidence session is in the prompt.

Counting across sessions fails on breadth (issue 51): a "how many" question is answered right
only when every session that tells of one of the things counted is in the evidence the model
reads. This asks every multi-session question of a LongMemEval-format file (and every other
question the answer stage reads as a count or sum) with a recording model in place of the LLM,
and reports, per question, which of its evidence sessions (``answer_session_ids``) the prompt
held: **all-recall** (every one), **any-recall** (at least one). No LLM runs, so two versions of
the code can be compared on one machine in a minute.

usage: PYTHONPATH=<tree> python evals/timeq_recall.py evals/assistant/dev.json STORE.db [--json] [--dates]
(``--dates``: the date questions instead, those the date rules count: "how many days between
X and Y", "which came first", "how old was I when": both events must be in the prompt.)
(the settings are read as the CLI reads them: ``LOCALMEM_ASK_TALLY=count,sum`` asks with counts
and sums worked out by code, whose evidence is each session's best first; the store is made with the default embedder when it does not hold the file's histories yet;
``localmem eval longmemeval`` makes the same one.)
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from localmem import Memory
from localmem.config import Config
from localmem.models.protocols import Completion
from localmem_bench.longmemeval import _haystack_owners, _item
from localmem_bench.retrieval import _haystack_jsonl


class Recorder:
    """A stand-in LLM: a valid, empty-handed reply to every schema (the evidence is what counts)."""

    model_id = "recorder"

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def complete_json(self, messages, schema, max_tokens, on_text=None):
        props = schema.get("properties", {})
        if "answer" in props:
            reply = {"answer": "not in memory", "supports": [], "confidence": 0.5}
        else:
            reply = {name: [] for name in props}
        text = json.dumps(reply)
        return Completion(text=text, prompt_tokens=1, completion_tokens=1)


def _kind(question: str) -> str | None:
    """The kind the answer stage reads ``question`` as (``None`` in code older than the kinds)."""
    try:
        from localmem.answer.question import Question
    except ImportError:
        return None
    return getattr(Question.parse(question, {}), "kind", None)


def _dated(question: str) -> bool:
    """Whether the date rules count ``question`` (its days found by code: ``--dates``)."""
    from localmem.answer.question import Question

    return Question.parse(question, {}).dates is not None


def main(data_path: str, store: str, as_json: bool = False, dates: bool = False) -> None:
    # The questions are picked by the current kinds on every version, so both ask the same ones.
    picked = {"count", "sum"}
    path = Path(data_path)
    raw = json.loads(path.read_text())
    owners = _haystack_owners(raw)
    rows = []
    with Memory(store, config=Config.load(), llm=Recorder()) as mem, tempfile.TemporaryDirectory() as tmp:
        loaded: set[str] = set()
        for index, item in enumerate(raw):
            kind = _kind(item["question"])
            if dates:
                if not _dated(item["question"]):
                    continue
            elif item["question_type"] != "multi-session" and not (
                kind in picked or item["question"].lower().startswith(("how many", "how much"))
            ):
                continue
            if not item.get("answer_session_ids"):
                continue  # an abstention item: no evidence to find
            namespace = str(raw[owners[index]]["question_id"])
            if namespace not in loaded:
                loaded.add(namespace)
                jsonl = Path(tmp) / f"{namespace}.jsonl"
                jsonl.write_text(_haystack_jsonl(path, owners[index], raw[owners[index]]), encoding="utf-8")
                mem.ingest(jsonl, format="jsonl", namespace=namespace)
            mem.namespace = namespace
            asked = _item(path, index, item)
            result = mem.ask(item["question"], now=asked.now)
            shown = {s.external_id.split(":")[0] for h in result.evidence for s in h.sources}
            gold = set(item["answer_session_ids"])
            rows.append(
                {
                    "question_id": item["question_id"],
                    "kind": kind,
                    "sessions": len(gold),
                    "found": len(gold & shown),
                    "all": gold <= shown,
                    "evidence_items": len(result.evidence),
                }
            )
    n = len(rows)
    summary = {
        "questions": n,
        "all_recall": round(100 * sum(r["all"] for r in rows) / n, 1) if n else None,
        "any_recall": round(100 * sum(r["found"] > 0 for r in rows) / n, 1) if n else None,
        "sessions_found": f"{sum(r['found'] for r in rows)} of {sum(r['sessions'] for r in rows)}",
    }
    if as_json:
        print(json.dumps({"summary": summary, "rows": rows}, indent=1))
        return
    for r in rows:
        print(f"{r['question_id']:<18} {r['kind'] or '-':<6} {r['found']}/{r['sessions']} sessions"
              f"{'  all' if r['all'] else ''}  ({r['evidence_items']} items)")  # fmt: skip
    print(
        f"all-recall {summary['all_recall']}%  any-recall {summary['any_recall']}%  "
        f"sessions {summary['sessions_found']}  ({n} questions)"
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], "--json" in sys.argv[3:], "--dates" in sys.argv[3:])
