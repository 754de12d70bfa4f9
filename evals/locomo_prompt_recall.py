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

``--pick N`` turns ``ask_pick`` on: the real LLM (as configured) runs the pick step, one
forward pass a question, while the answer is still recorded, not generated; budgets are still
counted by the embedder's tokenizer, so both arms fit evidence alike. ``--every N`` asks only
every Nth question of each conversation (as ``localmem eval locomo --every``: by the
question's place in the file); search recall is measured on the same questions.

Usage (the store is the eval's own, ``eval-locomo.db`` under ``LOCALMEM_HOME``; a file
already ingested is not ingested again)::

    python evals/locomo_prompt_recall.py ../shared/data/locomo/locomo-dev.json \
        ../shared/data/locomo/locomo-dev-more.json [--conversations conv-26,...] [--json out.json] \
        [--params '{"session_weight": 0.1}'] [--every 3] [--pick 20]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from localmem import Memory
from localmem.config import Config
from localmem.models.protocols import Chooser, Chosen, Completion
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


class PickingRecorder(PromptRecorder):
    """A recorder whose pick step (``choose``) is the real LLM's: the answer is not generated."""

    def __init__(self, llm: Chooser) -> None:
        super().__init__()
        self.llm = llm

    def choose(self, messages: Any, labels: Any) -> Chosen:
        return self.llm.choose(messages, labels)


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
    picker: Chooser | None = None,
) -> list[dict[str, Any]]:
    """One row per question: search recall@k and whether gold evidence reached the prompt
    (``recipe``: the search parameters both use; default: the default search; ``every``: only
    every Nth question; ``picker``: the LLM that runs the pick step when ``ask_pick`` is on)."""
    db = eval_db_path(config)
    rows: list[dict[str, Any]] = []
    with Memory(db, config=config) as mem:
        embedder = mem.embedder
        for path in files:
            mem.ingest(path, format="locomo")
    for path in files:
        for sid, items in questions(path, wanted, every).items():
            recorder = PickingRecorder(picker) if picker is not None else PromptRecorder()
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
                            **_picked(result, gold),
                        }
                    )
                    if picker is not None:  # a long run: say how far it is
                        print(sid, len(rows), rows[-1].get("pick_seconds"), file=sys.stderr, flush=True)
    return rows


def _picked(result: Any, gold: set[str] | list[str]) -> dict[str, Any]:
    """What the pick step did for one question (nothing when it did not run)."""
    report = result.details.get("pick")
    if not report:
        return {}
    by_id = {h.id: h for h in result.evidence}
    top = report["picked"][:1]
    return {
        "pick_seconds": result.timings.get("pick"),
        "pick_prompt_tokens": report["prompt_tokens"],
        "pick_prefilled": report["prefilled"],
        "pick_mass": report["mass"],
        "picked": len(report["picked"]),
        # the model's first pick is a gold message (it is always in the evidence: it goes first)
        "pick_top_gold": bool(top) and top[0] in by_id and any(s.external_id in gold for s in by_id[top[0]].sources),
    }


def timing(rows: list[dict[str, Any]]) -> str:
    """p50/p90 of the pick step's seconds and prompt tokens (rows where it ran)."""
    ran = [r for r in rows if r.get("pick_seconds") is not None]
    if not ran:
        return ""

    def p(values: list[float], q: int) -> float:
        return statistics.quantiles(values, n=10, method="inclusive")[q // 10 - 1] if len(values) > 1 else values[0]

    secs = [float(r["pick_seconds"]) for r in ran]
    toks = [float(r["pick_prompt_tokens"]) for r in ran]
    fresh = [float(r["pick_prefilled"]) for r in ran]
    top = sum(bool(r["pick_top_gold"]) for r in ran) / len(ran)
    return (
        f"pick: {len(ran)} questions; seconds p50 {p(secs, 50):.2f} p90 {p(secs, 90):.2f}; prompt tokens "
        f"p50 {p(toks, 50):.0f} p90 {p(toks, 90):.0f} (evaluated p50 {p(fresh, 50):.0f}); "
        f"picked per question mean {statistics.mean(r['picked'] for r in ran):.2f}; "
        f"first pick is gold {100 * top:.1f}%"
    )


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
    parser.add_argument("--pick", type=int, default=0, help="ask_pick: the real LLM picks among this many candidates")
    args = parser.parse_args(argv)
    wanted = set(args.conversations.split(",")) if args.conversations else None
    recipe = SearchParams(**json.loads(args.params)) if args.params else None
    config = Config.load()
    picker = None
    if args.pick:
        from localmem.models.factory import create

        config = dataclasses.replace(config, ask_pick=args.pick)
        picker = create("llm", config)
    rows = measure(args.files, wanted, config, recipe, args.every, picker)
    print(table(rows))
    if picker is not None:
        print(timing(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
