"""Back to back, one process, one loaded model: each question asked with ask_tally on (every
kind) and off, alternating, twice; the total seconds of each ask (docs/timeq.md).

usage: PYTHONPATH=. python evals/timeq_speed.py STORE.db
(STORE.db: the store `localmem eval longmemeval evals/assistant/dev.json` made.)"""

import json
import sys

from localmem import Memory
from localmem.config import Config

QS = [
    ("asst-h1-q01", "How much have I spent altogether on the new D-lock and the panniers?", "2024-09-24"),
    ("asst-h1-q01", "What's the total distance of the organised rides I've done this year?", "2024-09-24"),
    ("asst-h1-q01", "What did I name my sourdough starter?", "2024-09-24"),
    ("asst-h1-q01", "Where do I work now?", "2024-09-24"),
]
on, off = Config(ask_tally="count,sum,current,before,at"), Config(ask_tally="none")
rows = []
with Memory(sys.argv[1], "asst-h1-q01", config=on) as mem:
    mem.ask("warm-up question about bikes", now="2024-09-24")
    for ns, q, now in QS:
        for rep in range(2):
            for name, cfg in (("by code", on), ("off", off)) if rep == 0 else (("off", off), ("by code", on)):
                mem.config = cfg
                r = mem.ask(q, now=now)
                rows.append(
                    {
                        "q": q,
                        "config": name,
                        "seconds": r.timings["total"],
                        "answer": r.answer[:80],
                        "tally": "tally" in r.timings,
                    }
                )
                print(json.dumps(rows[-1]), flush=True)
