"""Each rule of the answer stage, measured without the LLM: answer F1 and refusal F1 with every
rule on, and with each rule (or those named with ``--without``) turned off.

The real ``Memory.ask`` runs once per question (search, focus, excerpts, budget) with a scripted
model in place of the LLM; the answer stage (:func:`localmem.answer.fast.answer`) is then run
again on the same evidence for each arm, with ``ask_rules_off`` naming the rule(s) off. The
scripted model gives fixed replies:

- a question with a ``reply`` (the fixture's): that answer, citing the prompt items holding the
  messages it names (``cites``);
- otherwise, a question to answer (categories 1-4): the gold answer citing the items that hold
  a gold message, or the prompt's refusal when none reached the prompt; a question to refuse
  (category 5, LoCoMo's adversarial ones): the adversarial answer (what a model that falls for
  it says), citing the items holding a gold message (the first item when none did).

So a rule's effect here is what it does to replies that are right when the evidence allows and
wrong when the question is a trap; a real model's replies differ (evals/replay_answers.py
replays recorded ones). Answer F1: the mean SQuAD-style token F1 over the questions to answer
(a refusal scores 0); "holds gold": the share of them answered with every word of the gold
answer (token F1 counts a date answer's working, "13 days (7 May 2023 to 20 May 2023)", as
wrong words); refusal F1: of refusing the category-5 questions; "cites gold": the share of
answered questions to answer whose citations hold a gold message.

usage: PYTHONPATH=<tree> python evals/answer_rules.py [FILE ...] [--without RULE ...] [--by-conversation]
    FILE: LoCoMo-layout JSON (default: tests/fixtures/answering/conversations.json); a file
    outside the fixture is ingested into the eval store (``eval-locomo.db`` under LOCALMEM_HOME,
    as evals/locomo_prompt_recall.py does), the fixture into a temporary store.
"""

from __future__ import annotations

import argparse
import json
import string
import sys
import tempfile
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

from localmem import Memory
from localmem.answer import fast
from localmem.answer.evidence import in_time_order
from localmem.config import ANSWER_RULES, Config
from localmem.models.protocols import Completion
from localmem.prompts import answer as prompt

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "answering" / "conversations.json"


class Scripted:
    """An LLM stand-in answering each question with its fixed reply (see the module docstring);
    ``items``: the external ids of each prompt item's source messages, set before each call."""

    model_id = "scripted"

    def __init__(self) -> None:
        self.item: dict[str, Any] = {}
        self.items: list[set[str]] = []

    def complete_json(self, messages: Any, schema: Any, max_tokens: int, on_text: Any = None) -> Completion:
        return Completion(text=json.dumps(reply(self.item, self.items)))


def reply(item: dict[str, Any], items: list[set[str]]) -> dict[str, Any]:
    """The scripted model's reply to ``item`` over prompt items holding ``items``' messages."""
    gold = set(item.get("evidence") or [])
    if "reply" in item:
        cites = set(item["reply"]["cites"])
        supports = [n for n, ids in enumerate(items, 1) if ids & cites]
        return {"answer": item["reply"]["answer"], "supports": supports, "confidence": 0.8}
    supports = [n for n, ids in enumerate(items, 1) if ids & gold]
    if item["category"] == 5:
        return {"answer": str(item.get("adversarial_answer", "")), "supports": supports or [1], "confidence": 0.8}
    if not supports:
        return {"answer": prompt.REFUSAL, "supports": [], "confidence": 0.8}
    return {"answer": str(item.get("answer", "")), "supports": supports, "confidence": 0.8}


def _tokens(text: str) -> list[str]:
    text = "".join(c for c in text.lower() if c not in set(string.punctuation))
    return [w for w in text.split() if w not in ("a", "an", "the", "and")]


def token_f1(said: str, gold: str) -> float:
    """SQuAD-style token F1 (lower case, no punctuation or articles)."""
    a, b = _tokens(said), _tokens(gold)
    common = sum((Counter(a) & Counter(b)).values())
    if not common:
        return 0.0
    p, r = common / len(a), common / len(b)
    return 2 * p * r / (p + r)


def load(paths: list[Path]) -> list[tuple[Path, dict[str, Any]]]:
    return [(path, sample) for path in paths for sample in json.loads(path.read_text(encoding="utf-8"))]


def measure(
    db: Path, config: Config, samples: list[tuple[Path, dict[str, Any]]], every: int, offs: list[tuple[str, ...]]
) -> list[dict[str, Any]]:
    """Ask every question once (every rule on), keeping what the answer stage was given; then
    the stage again in each arm of ``offs``."""
    llm = Scripted()
    seen: dict[str, Any] = {}
    original = fast.answer

    def keep(conn, model, question, hits, options, today, **kw):  # the stage's inputs, then the stage
        seen.update(conn=conn, question=question, hits=list(hits), options=options, today=today, kw=kw)
        llm.items = [{s.external_id for s in h.sources} for h in in_time_order(hits)]
        return original(conn, model, question, hits, options, today, **kw)

    rows: list[dict[str, Any]] = []
    fast.answer = keep  # type: ignore[assignment]
    try:
        with Memory(db, config=config, llm=llm) as mem:
            for path in dict.fromkeys(p for p, _ in samples):
                mem.ingest(path, format="locomo")
            for _path, sample in samples:
                mem.namespace = sample["sample_id"]
                for n, item in enumerate(sample["qa"]):
                    if n % every:
                        continue
                    seen.clear()
                    llm.item, llm.items = item, []
                    mem.ask(item["question"])
                    rows.append({"conversation": sample["sample_id"], "item": item, "stage": dict(seen), "llm": llm})
            arms(rows, [(), *offs])  # while the store is open: citations are read from it
            return rows
    finally:
        fast.answer = original  # type: ignore[assignment]


def run_arm(rows: list[dict[str, Any]], off: tuple[str, ...]) -> list[dict[str, Any]]:
    """The answer stage again on each question's captured inputs, with the rules ``off``."""
    results = []
    for row in rows:
        item, stage, llm = row["item"], row["stage"], row["llm"]
        if not stage:  # nothing was found: refused before the stage
            results.append({"refused": True, "refusal": "no evidence", "answer": prompt.REFUSAL, "cited": set()})
            continue
        llm.item = item
        llm.items = [{s.external_id for s in h.sources} for h in in_time_order(stage["hits"])]
        options = replace(stage["options"], rules_off=frozenset(stage["options"].rules_off) | set(off))
        a = fast.answer(stage["conn"], llm, stage["question"], stage["hits"], options, stage["today"], **stage["kw"])
        cited = {c.external_id for c in a.citations}
        results.append({"refused": a.refused, "refusal": str(a.refusal or ""), "answer": a.answer, "cited": cited})
    return results


def arms(rows: list[dict[str, Any]], offs: list[tuple[str, ...]]) -> None:
    for off in offs:
        for row, result in zip(rows, run_arm(rows, off)):
            row.setdefault("arms", {})[off] = result


def scores(rows: list[dict[str, Any]], off: tuple[str, ...]) -> dict[str, float]:
    answerable = [r for r in rows if r["item"]["category"] != 5]
    adversarial = sum(r["item"]["category"] == 5 for r in rows)
    said = [(r["arms"][off], str(r["item"]["answer"])) for r in answerable]
    f1 = [0.0 if a["refused"] else token_f1(a["answer"], gold) for a, gold in said]
    holds = [not a["refused"] and set(_tokens(gold)) <= set(_tokens(a["answer"])) for a, gold in said]
    refused = [r for r in rows if r["arms"][off]["refused"]]
    right = sum(r["item"]["category"] == 5 for r in refused)
    p = right / len(refused) if refused else 0.0
    rc = right / adversarial if adversarial else 0.0
    answered = [r for r in answerable if not r["arms"][off]["refused"] and r["item"].get("evidence")]
    gold = sum(bool(r["arms"][off]["cited"] & set(r["item"]["evidence"])) for r in answered)
    changed = sum(
        (r["arms"][off]["refused"], r["arms"][off]["answer"], r["arms"][off]["cited"])
        != (r["arms"][()]["refused"], r["arms"][()]["answer"], r["arms"][()]["cited"])
        for r in rows
    )
    return {
        "n": len(rows),
        "answer_f1": 100 * sum(f1) / len(f1) if f1 else 0.0,
        "holds_gold": 100 * sum(holds) / len(holds) if holds else 0.0,
        "refusal_f1": 2 * p * rc / (p + rc) if p + rc else 0.0,
        "cites_gold": 100 * gold / len(answered) if answered else 0.0,
        "changed": changed,
    }


def report(rows: list[dict[str, Any]], offs: list[tuple[str, ...]], by_conversation: bool) -> str:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    if by_conversation:
        for row in rows:
            groups[row["conversation"]].append(row)
    groups["pooled"] = rows
    lines = []
    for name, members in groups.items():
        base = scores(members, ())
        lines.append(f"\n{name} ({base['n']} questions)")
        lines.append("| arm | answer F1 | holds gold | refusal F1 | cites gold | answers changed |")
        lines.append("|---|---:|---:|---:|---:|---:|")
        lines.append(
            f"| every rule | {base['answer_f1']:.1f} | {base['holds_gold']:.1f} | {base['refusal_f1']:.3f} "
            f"| {base['cites_gold']:.1f} | - |"
        )
        for off in offs:
            s = scores(members, off)
            lines.append(
                f"| without {', '.join(off)} | {s['answer_f1']:.1f} ({s['answer_f1'] - base['answer_f1']:+.1f}) "
                f"| {s['holds_gold']:.1f} ({s['holds_gold'] - base['holds_gold']:+.1f}) "
                f"| {s['refusal_f1']:.3f} ({s['refusal_f1'] - base['refusal_f1']:+.3f}) "
                f"| {s['cites_gold']:.1f} ({s['cites_gold'] - base['cites_gold']:+.1f}) | {s['changed']} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path, default=[FIXTURE])
    parser.add_argument("--without", action="append", choices=ANSWER_RULES, help="a rule to turn off (repeatable)")
    parser.add_argument("--by-conversation", action="store_true", help="a table for each conversation too")
    parser.add_argument("--every", type=int, default=1, help="ask only every Nth question of each conversation")
    parser.add_argument("--json", type=Path, help="write each question's outcome in each arm here")
    args = parser.parse_args(argv)
    offs = [tuple(args.without)] if args.without else [(name,) for name in ANSWER_RULES]
    config = Config.load()
    samples = load(args.files)
    with tempfile.TemporaryDirectory() as tmp:
        fixture_only = all(p.resolve() == FIXTURE for p in args.files)
        if fixture_only:
            db = Path(tmp) / "fixture.db"
        else:
            from localmem_bench.retrieval import eval_db_path

            db = eval_db_path(config)
        rows = measure(db, config, samples, args.every, offs)
    print(report(rows, offs, args.by_conversation))
    if args.json:
        out = [
            {
                "conversation": r["conversation"],
                "question": r["item"]["question"],
                "category": r["item"]["category"],
                **{",".join(off) or "every rule": {**a, "cited": sorted(a["cited"])} for off, a in r["arms"].items()},
            }
            for r in rows
        ]
        args.json.write_text(json.dumps(out, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
