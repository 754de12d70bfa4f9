"""Search recall of the mixed histories' questions on their real exports, with and without the
store's owner (issue 51): does "I" find the owner's messages across WhatsApp and ChatGPT?

    python evals/timeq/owner_recall.py dev      # t2 (dev); 'test' reads t4: only for the final run

Each mixed history's exports are imported as a user would (`Memory.ingest` of exports/tN, the
configured embedder), then every question is searched (k=10) twice: with the owner the import
suggested, and with the owner's names cleared. A question counts as found when a message of an
evidence turn (a WhatsApp line or a ChatGPT turn with has_answer) is among the hits; all-found
when every evidence session has one. The same is measured on the prompt an ask builds (the
evidence after the answer stage's focus on the person asked), with a stand-in model that records
the prompt and declines: no model runs. Abstention items have no evidence and are left out.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from localmem import Memory


class _Recorder:
    """A stand-in for the model: keeps the prompt, declines to answer."""

    model_id = "recorder"

    def __init__(self) -> None:
        self.prompt = ""

    def complete_json(self, messages, schema, max_tokens, on_text=None):  # noqa: ANN001
        from localmem.models.protocols import Completion

        self.prompt = messages[-1]["content"]
        reply = json.dumps({"answer": "not in memory", "supports": [], "confidence": 0.0})
        return Completion(text=reply, prompt_tokens=0, completion_tokens=0)


HERE = Path(__file__).resolve().parent
MIXED = {"dev": "t2", "test": "t4"}


def main() -> None:
    split = sys.argv[1] if len(sys.argv) > 1 else "dev"
    name = MIXED[split]
    items = [
        i for i in json.loads((HERE / f"{split}.json").read_text(encoding="utf-8")) if f"-{name}-" in i["question_id"]
    ]
    items = [i for i in items if not i["question_id"].endswith("_abs")]
    llm = _Recorder()
    with tempfile.TemporaryDirectory() as tmp, Memory(Path(tmp) / "m.db", namespace=name, llm=llm) as mem:
        mem.ingest(HERE / "exports" / name)
        owner = mem.owner().names
        rows = []
        for label in ("with owner", "without owner"):
            if label == "without owner":
                mem.clear_owner()
            found = every = p_found = p_every = 0
            for item in items:
                evidence: dict[str, set[str]] = {}
                for sid, session in zip(item["haystack_session_ids"], item["haystack_sessions"]):
                    for turn in session:
                        if turn.get("has_answer"):
                            evidence.setdefault(sid, set()).update(
                                x.strip() for x in turn["content"].splitlines() if x.strip()
                            )
                texts = [h.text for h in mem.search(item["question"], k=10) if h.kind == "message"]
                hit_sessions = {
                    sid for sid, lines in evidence.items() if any(any(x in t for x in lines) for t in texts)
                }
                found += bool(hit_sessions)
                every += hit_sessions == set(evidence)
                llm.prompt = ""  # a question refused before the model leaves no prompt
                mem.ask(item["question"], now=item["question_date"][:10].replace("/", "-"))
                shown = {sid for sid, lines in evidence.items() if any(x in llm.prompt for x in lines)}
                p_found += bool(shown)
                p_every += shown == set(evidence)
            rows.append((label, found, every, p_found, p_every, len(items)))
        print(f"{name} ({split}), owner suggested at import: {owner}, embedder {mem.embedder.model_id}")
        for label, found, every, p_found, p_every, n in rows:
            print(
                f"  {label:<14} search top 10: any evidence {found}/{n}, every session {every}/{n};"
                f"  ask prompt: any evidence {p_found}/{n}, every session {p_every}/{n}"
            )


if __name__ == "__main__":
    main()
