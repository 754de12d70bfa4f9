"""Evidence in the prompt, without an LLM: for every LoCoMo question (categories 1-4), does a
gold evidence message reach the answer prompt that ``Memory.ask`` (fast mode) builds?

``ask`` runs as it is (search, focus, excerpts, token budget, the someone-else check) with a
recorder in place of the LLM: it keeps the evidence the prompt was given and replies with a
refusal, so nothing is generated. A question counts as reached when one of its gold ``dia_id``s
is the source of an evidence item (``Answer.evidence``; a question the someone-else check
refuses before the model is called is judged on the evidence it would have been given). The
same run also measures search recall@k (as ``localmem eval locomo --retrieval-only``: the
share of a question's gold ids among the top-k hits' sources), so one run gives both.

Budgets are counted by the embedder's tokenizer (the LLM is never loaded), so the evidence
that fits can differ slightly from what the bundled LLM's own tokenizer lets in.

``--every N`` asks only
every Nth question of each conversation (as ``localmem eval locomo --every``: by the
question's place in the file); search recall is measured on the same questions.

Usage (the store is the eval's own, ``eval-locomo.db`` under ``LOCALMEM_HOME``; a file
already ingested is not ingested again)::

    python evals/locomo_prompt_recall.py ../shared/data/locomo/locomo-dev.json \
        ../shared/data/locomo/locomo-dev-more.json [--conversations conv-26,...] [--json out.json] \
        [--params '{"session_weight": 0.1}'] [--every 3]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from localmem import Memory
from localmem.config import Config
from localmem.models.protocols import Completion
from localmem.retrieval.search import SearchParams
from localmem_bench.retrieval import eval_db_path, parse_evidence

SCORED = (1, 2, 3, 4)
KS = (5, 10, 20)


class PromptRecorder:
    """An LLM stand-in: records the messages of every prompt and refuses."""

    model_id = "prompt-recorder"

    def __init__(self) -> None:
        self.calls: list[list[dict[str, str]]] = []

    def complete_json(self, messages: Any, schema: Any, max_tokens: int, on_text: Any = None) -> Completion:
        self.calls.append([dict(m) for m in messages])
        return Completion(text=json.dumps({"answer": "not in memory", "supports": [], "confidence": 0.9}))


def questions(path: Path, wanted: set[str] | None, every: int = 1) -> dict[str, list[dict[str, Any]]]:
    """sample_id → its questions with evidence: {question, category, gold}. Every category is
    searched, as the retrieval eval does: the int8 embedder's query vectors depend slightly on
    the batch they are embedded in, so the same batches give the eval's recall exactly.
    ``asked``: the question's place in the file is a multiple of ``every``."""
    out: dict[str, list[dict[str, Any]]] = {}
    for sample in json.loads(path.read_text(encoding="utf-8")):
        sid = sample["sample_id"]
        if wanted and sid not in wanted:
            continue
        for qi, item in enumerate(sample["qa"]):
            gold = parse_evidence(item.get("evidence"))
            if gold:
                out.setdefault(sid, []).append(
                    {"question": item["question"], "category": item["category"], "gold": gold, "asked": qi % every == 0}
                )
    return out


def measure(
    files: list[Path],
    wanted: set[str] | None,
    config: Config,
    recipe: SearchParams | None = None,
    every: int = 1,
) -> list[dict[str, Any]]:
    """One row per question: search recall@k and whether gold evidence reached the prompt
    (``recipe``: the search parameters both use; default: the default search; ``every``: only
    every Nth question)."""
    db = eval_db_path(config)
    rows: list[dict[str, Any]] = []
    with Memory(db, config=config) as mem:
        embedder = mem.embedder
        for path in files:
            mem.ingest(path, format="locomo")
    for path in files:
        for sid, items in questions(path, wanted, every).items():
            recorder = PromptRecorder()
            with Memory(db, namespace=sid, config=config, embedder=embedder, llm=recorder) as mem:
                searched = list(mem.search_many([i["question"] for i in items], k=max(KS), recipe=recipe))
                for item, hits in zip(items, searched):
                    if item["category"] not in SCORED or not item.pop("asked"):
                        continue
                    first: dict[str, int] = {}
                    for rank, hit in enumerate(hits, 1):
                        for source in hit.sources:
                            first.setdefault(source.external_id, rank)
                    result = mem.ask(item["question"], recipe=recipe)
                    shown = {s.external_id for h in result.evidence for s in h.sources}
                    gold = item["gold"]
                    rows.append(
                        {
                            "conversation": sid,
                            **item,
                            **{f"recall@{k}": sum(first.get(g, k + 1) <= k for g in gold) / len(gold) for k in KS},
                            "in_prompt": any(g in shown for g in gold),
                            "prompt_share": sum(g in shown for g in gold) / len(gold),
                            "refusal": result.refusal,
                            "items": len(result.evidence),
                        }
                    )
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    by: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by.setdefault(row["conversation"], []).append(row)
    head = "| conversation | n | " + " | ".join(f"recall@{k}" for k in KS) + " | in prompt | gold share in prompt |"
    lines = [head, "|---|---:|" + "---:|" * (len(KS) + 2)]

    def line(name: str, members: list[dict[str, Any]]) -> str:
        def mean(key: str) -> str:
            return f"{100 * sum(float(m[key]) for m in members) / len(members):.1f}"

        cells = [mean(f"recall@{k}") for k in KS] + [mean("in_prompt"), mean("prompt_share")]
        return f"| {name} | {len(members)} | " + " | ".join(cells) + " |"

    for sid in sorted(by):
        lines.append(line(sid, by[sid]))
    lines.append(line("**pooled**", rows))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--conversations", help="comma-separated sample_ids (default: all)")
    parser.add_argument("--json", type=Path, help="write every question's row here")
    parser.add_argument("--params", help="SearchParams fields to change, as JSON: '{\"session_weight\": 0.1}'")
    parser.add_argument("--every", type=int, default=1, help="ask only every Nth question of each conversation")
    args = parser.parse_args(argv)
    wanted = set(args.conversations.split(",")) if args.conversations else None
    recipe = SearchParams(**json.loads(args.params)) if args.params else None
    config = Config.load()
    rows = measure(args.files, wanted, config, recipe, args.every)
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
