"""Replay a LoCoMo answers report without the LLM: re-run the real ask pipeline (embedder, search,
focus, checks, citations) with a recording model that gives, for each question, the answer the
real model gave in the report, and scores what the checks and the citation choice make of it.

usage: PYTHONPATH=<tree> python evals/replay_answers.py --store COPY.db --gguf MODEL.gguf \
           [--report answers.json ...] [--data locomo.json ...] [--out OUT.json] [--hits HITS.pkl]
       python evals/replay_answers.py --score-only --report answers.json ...   (a report as it is: no replay)

- ``--report``: `eval locomo` reports (their ``details``); each question is asked again, and the
  model's reply is the report's answer (``details.dates.model_answer`` when the date rules
  rewrote it; "not in memory" when the model refused), its supports the prompt items whose
  messages the real run cited (every item whose source messages are all among the citations).
  When the real run refused after the model (someone else, image description, no citation) the
  model's text is not in the report: those rows keep the report's outcome ("unknown").
- ``--data``: LoCoMo files whose every question is also asked (no recorded answer): the checks
  that run before the model need only retrieval, so they are scored on all questions.
- ``--gguf``: the LLM's file, read for its tokenizer only (``vocab_only``: the evidence budget
  is counted as the real run counted it; no weights are loaded).
- ``--hits``: pickle each question's evidence, search pool and speakers (for offline study).

Prints, per conversation: agreement with the report (refusal and citations), refusal
precision / recall / F1, correct answers refused, citations holding a gold message, the share
of one-word generic answers, and the pre-model refusals on all questions. The store must be a
copy (the script opens it read-write, as Memory does).
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
from collections import defaultdict
from pathlib import Path

from localmem import Memory
from localmem.answer import fast
from localmem.answer.citations import citations
from localmem.answer.evidence import in_time_order
from localmem.models.backends.llama import LlamaTokenCounter
from localmem.models.protocols import Completion
from localmem.prompts import answer as prompt
from localmem_bench.answers import normalise, score

UNKNOWN = "unrecorded reply"  # the model's text is not in the report (or the real run never asked it)
POST_MODEL = ("someone else", "image description", "no citation", "invalid reply")
# One-word answers that only rate something (issue 34 item 6: "amazing" for "super exciting and free-feeling").
GENERIC = frozenset(
    "amazing awesome great good fun nice happy excited exciting wonderful fantastic cool special beautiful "
    "incredible awesome fulfilling rewarding proud grateful thankful inspiring inspired interesting "
    "enjoyable lovely positive glad thrilled satisfying blessed".split()
)


def generic(answer: str) -> bool:
    """Whether ``answer`` is one generic evaluative word ("Amazing!", "fun")."""
    words = normalise(answer).split()
    return len(words) == 1 and words[0] in GENERIC


class Replayer:
    """An LLM that answers each question with the report's answer; the evidence items' cited
    message ids are set by :func:`_capture` before each call."""

    model_id = "replay"

    def __init__(self, gguf: Path) -> None:
        self.counter = LlamaTokenCounter(gguf)
        self.row: dict | None = None
        self.items: list[set[str]] = []
        self.called = False

    def count_tokens(self, text: str) -> int:
        return self.counter.count_tokens(text)

    def complete_json(self, messages, schema, max_tokens, on_text=None):
        self.called = True
        row = self.row
        if row is None or row["refusal"] not in (None, "model"):
            reply = {"answer": UNKNOWN, "supports": [], "confidence": 0.5}
        elif row["refusal"] == "model":
            reply = {"answer": prompt.REFUSAL, "supports": [], "confidence": row.get("confidence") or 0.5}
        else:
            cited = set(row["citations"])
            said = (row.get("details") or {}).get("dates", {}).get("model_answer") or row["answer"]
            supports = [n for n, ext in enumerate(self.items, 1) if ext and ext <= cited][: prompt.MAX_SUPPORTS]
            reply = {"answer": said, "supports": supports, "confidence": row.get("confidence") or 0.5}
        if on_text:
            on_text(json.dumps(reply))
        return Completion(text=json.dumps(reply), prompt_tokens=1, completion_tokens=1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store")
    parser.add_argument("--gguf")
    parser.add_argument("--report", nargs="*", default=[])
    parser.add_argument("--data", nargs="*", default=[])
    parser.add_argument("--out")
    parser.add_argument("--hits")
    parser.add_argument("--score-only", action="store_true", help="score the reports as they are (no replay)")
    args = parser.parse_args()
    if args.score_only:
        rows = [
            {**d, "recorded": True, "unknown": False, "report": d}
            for p in args.report
            for d in json.loads(Path(p).read_text())["details"]
        ]
        summarise(rows)
        return

    rows = []
    for path in args.report:
        for d in json.loads(Path(path).read_text())["details"]:
            rows.append({**d, "recorded": True})
    asked = {(r["conversation"], r["question"]) for r in rows}
    for path in args.data:
        for sample in json.loads(Path(path).read_text()):
            for q in sample["qa"]:
                if (sample["sample_id"], q["question"]) in asked:
                    continue
                gold = str(q.get("answer", q.get("adversarial_answer", "")))
                rows.append(
                    {
                        "conversation": sample["sample_id"],
                        "category": q["category"],
                        "question": q["question"],
                        "gold": gold,
                        "evidence": [e.strip() for e in q.get("evidence") or [] if isinstance(e, str)],
                        "recorded": False,
                    }
                )

    llm = Replayer(Path(args.gguf))
    dumped = []
    original = fast.answer

    def _capture(conn, model, question, hits, options, today, **kw):
        if model is llm:
            evidence = in_time_order(hits)
            llm.items = [{c.external_id for c in citations(conn, [h])} for h in evidence]
            if args.hits:
                dumped.append(
                    {
                        "question": question,
                        "evidence": evidence,
                        "pool": list(kw.get("pool", ())),
                        "speakers": kw.get("speakers"),
                    }
                )
        return original(conn, model, question, hits, options, today, **kw)

    fast.answer = _capture
    out = []
    with Memory(args.store, llm=llm) as mem:
        for n, row in enumerate(rows, 1):
            mem.namespace = row["conversation"]
            llm.row = row if row["recorded"] else None
            llm.called, llm.items = False, []
            a = mem.ask(row["question"])
            cited = sorted({c.external_id for c in a.citations})
            result = {
                "conversation": row["conversation"],
                "category": row["category"],
                "question": row["question"],
                "gold": row["gold"],
                "evidence": row["evidence"],
                "recorded": row["recorded"],
                "answer": a.answer,
                "refused": a.refused,
                "refusal": a.refusal,
                "citations": cited,
                "model_called": llm.called,
            }
            if row["recorded"]:
                unknown = row["refusal"] in POST_MODEL or (
                    llm.called and row["refusal"] in ("asks about someone else", "no evidence")
                )
                result.update(
                    unknown=unknown,
                    report={k: row[k] for k in ("answer", "refused", "refusal", "citations", "f1")},
                    same_refusal=(a.refused, a.refusal) == (row["refused"], row["refusal"]),
                    same_citations=cited == sorted(row["citations"]),
                )
                if unknown and a.answer == UNKNOWN:  # what the model said is not known: the report's outcome
                    result.update(refused=row["refused"], refusal=row["refusal"], answer=row["answer"])
                result.update(score(row["category"], result["answer"], row["gold"], result["refused"]))
            out.append(result)
            if n % 100 == 0:
                print(f"{n}/{len(rows)}", file=sys.stderr)
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1))
    if args.hits:
        with open(args.hits, "wb") as f:
            pickle.dump(dumped, f)
    summarise(out)


def _prf(refused_right: int, refused: int, adversarial: int) -> tuple[float, float, float]:
    p = refused_right / refused if refused else 0.0
    r = refused_right / adversarial if adversarial else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def summarise(out: list[dict]) -> None:
    by: dict[str, list[dict]] = defaultdict(list)
    for r in out:
        by[r["conversation"]].append(r)
    by["pooled"] = list(out)
    print("\nSampled questions (recorded answers):")
    print(
        "conv     n  agree-ref agree-cit unknown | ref P  ref R  ref F1 | F1 1-4 | right-refused/answerable "
        "| cites-gold | generic"
    )
    for conv, rs in by.items():
        rec = [r for r in rs if r["recorded"]]
        if not rec:
            continue
        known = [r for r in rec if not r["unknown"]]
        agree_ref = sum(r.get("same_refusal", True) for r in known)
        agree_cit = sum(r.get("same_citations", True) for r in known)
        refused = [r for r in rec if r["refused"]]
        p, rc, f = _prf(sum(r["category"] == 5 for r in refused), len(refused), sum(r["category"] == 5 for r in rec))
        answerable = [r for r in rec if r["category"] != 5]
        f1 = sum(r["f1"] for r in answerable) / len(answerable) if answerable else 0.0
        right_refused = sum(r["refused"] for r in answerable if r["report"]["f1"] >= 0.5)
        right = [r for r in answerable if not r["refused"] and r["f1"] >= 0.5 and r["evidence"]]
        gold = sum(any(e in r["citations"] for e in r["evidence"]) for r in right)
        said = [r for r in rec if not r["refused"]]
        gen = sum(generic(r["answer"]) for r in said)
        print(
            f"{conv:8} {len(rec):3}  {agree_ref:3}/{len(known):<3}   {agree_cit:3}/{len(known):<3}  {len(rec) - len(known):3}"
            f"     | {p:.2f}   {rc:.2f}   {f:.2f}  | {100 * f1:5.1f}  | {right_refused:2}/{len(answerable):<3} "
            f"({100 * right_refused / max(1, len(answerable)):.1f}%)        | {gold:3}/{len(right):<3} "
            f"({100 * gold / max(1, len(right)):.1f}%) | {gen}/{len(said)} ({100 * gen / max(1, len(said)):.1f}%)"
        )
    print("\nAll questions, refused before the model (asks about someone else):")
    print("conv     cat5 refused   cat1-4 refused   P     R     F1")
    for conv, rs in by.items():
        pre = [r for r in rs if r["refusal"] == "asks about someone else"]
        adv = sum(r["category"] == 5 for r in rs)
        right = sum(r["category"] == 5 for r in pre)
        ans = len(rs) - adv
        p, rc, f = _prf(right, len(pre), adv)
        print(f"{conv:8} {right:3}/{adv:<3}       {len(pre) - right:3}/{ans:<4}        {p:.2f}  {rc:.2f}  {f:.2f}")


if __name__ == "__main__":
    main()
