"""Ingest time of one long conversation (docs/scale.md): N synthetic messages (``localmem
bench``'s sentences) in a single conversation, sessions of 40 turns, into a fresh SQLite store
with the tests' hashing embedder (so the store's own work is timed, not a model's).

Usage: ``python evals/ingest_long_chat.py 120000 LABEL`` prints wall and CPU seconds. Run it on
two checkouts back to back to compare them (each with its own PYTHONPATH).
"""

import json
import sys
import tempfile
import time
from pathlib import Path

from localmem import Memory
from localmem_bench.bench import generate_messages
from tests.fakes import HashEmbedder

n = int(sys.argv[1])
per = 40
work = Path(tempfile.mkdtemp())
data = work / "m.jsonl"
with data.open("w") as f:
    for i, m in enumerate(generate_messages(n)):
        s = i // per
        m.update(
            conversation="one-long-chat",
            session=f"s{s}",
            id=f"m{i}",
            time=f"20{10 + s // 4000:02d}-{1 + (s // 300) % 12:02d}-{1 + (s // 10) % 28:02d}T{8 + s % 10:02d}:{(i % per):02d}:00",
        )
        f.write(json.dumps(m) + "\n")
mem = Memory(str(work / "b.db"), namespace="bench", embedder=HashEmbedder())
t0 = time.perf_counter()
t0c = time.process_time()
mem.ingest(data, format="jsonl", extract="none")
print(
    sys.argv[2],
    n,
    "one conversation, sessions of",
    per,
    "wall %.1f s cpu %.1f s" % (time.perf_counter() - t0, time.process_time() - t0c),
    mem.stats().messages,
)
