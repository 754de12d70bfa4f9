"""Dump the ask prompts and answers of a fixed 100-question LoCoMo sample, with a deterministic
recording LLM (no real model), so two versions of the code can be diffed byte for byte.

usage: PYTHONPATH=<tree> python evals/same_prompts.py STORE.db OUT.json (LoCoMo dev file at ../shared)
"""

import hashlib
import json
import sys
from pathlib import Path

from localmem import Memory
from localmem.models.protocols import Completion, Judged

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo-dev.json"


class Recorder:
    model_id = "recorder"

    def __init__(self):
        self.calls = []

    def count_tokens(self, text):
        return len(text.split())

    def judge(self, prompts):
        self.calls.append(["judge", prompts])
        p = [int(hashlib.sha256(json.dumps(x).encode()).hexdigest()[:2], 16) / 255 for x in prompts]
        return Judged(p_yes=p, prompt_tokens=1, prefilled=1)

    def complete_json(self, messages, schema, max_tokens, on_text=None):
        messages = [dict(m) for m in messages]
        self.calls.append(["complete", messages])
        body = messages[-1]["content"]
        h = int(hashlib.sha256(body.encode()).hexdigest()[:4], 16)
        lines = [line for line in body.splitlines() if line[:1] == "["]
        words = (lines[h % len(lines)] if lines else "nothing").split()[2:7]
        reply = {"answer": " ".join(words) or "no", "supports": [1 + h % max(1, len(lines))], "confidence": 0.8}
        if "answer" not in json.dumps(schema):
            reply = {}
        text = json.dumps(reply)
        return Completion(text=text, prompt_tokens=len(body.split()), completion_tokens=len(text.split()))


def main(store, out):
    data = json.loads(DATA.read_text())
    rec = Recorder()
    results = []
    for sample in data:
        ns = sample["sample_id"]
        with Memory(store, ns, llm=rec) as mem:
            st = mem.stats()
            if not (st["messages"] if isinstance(st, dict) else st.messages):
                one = Path(store).with_suffix(f".{ns}.json")
                one.write_text(json.dumps([sample]))
                mem.ingest(one, format="locomo")
            qs = [q for q in sample["qa"] if q.get("category") in (1, 2, 3, 4)]
            for q in qs[:: max(1, len(qs) // 34)][:34]:
                rec.calls = []
                a = mem.ask(str(q["question"]), now="2024-01-01")
                d = a.to_dict()
                d.pop("timings", None)
                results.append({"ns": ns, "q": q["question"], "calls": rec.calls, "answer": d})
    results = results[:100]
    Path(out).write_text(json.dumps(results, indent=1, sort_keys=True))
    print(len(results), "questions;", sum(len(r["calls"]) for r in results), "model calls")


if __name__ == "__main__":
    main(*sys.argv[1:])
