"""SQLite ingest time and hybrid search p50 of N synthetic messages, with this checkout's code.

The tests' hashing embedder (no model), a fresh file; prints JSON. Run it from two checkouts in
turn (ABBA) to compare them: docs/scale.md.

Usage::

    python evals/sqlite_ingest_search.py 5000
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from localmem import Memory
from localmem_bench.bench import generate_messages, generate_queries, write_jsonl


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("size", type=int)
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args(argv)
    from tests.fakes import HashEmbedder

    work = Path(tempfile.mkdtemp(prefix="lm-sqlite-speed-"))
    data = work / "messages.jsonl"
    write_jsonl(generate_messages(args.size), data)
    mem = Memory(str(work / "store.db"), namespace="bench", embedder=HashEmbedder())
    mem.embedder.embed(["warm-up"])
    t0 = time.perf_counter()
    mem.ingest(data, format="jsonl", extract="none")
    ingest_s = time.perf_counter() - t0
    times = []
    for i, query in enumerate(generate_queries(args.queries + 10)):
        t0 = time.perf_counter()
        mem.search(query)
        if i >= 10:  # the first ones warm the caches
            times.append((time.perf_counter() - t0) * 1000)
    mem.close()
    print(json.dumps({"ingest_s": round(ingest_s, 2), "hybrid_p50_ms": round(statistics.median(times), 2)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
