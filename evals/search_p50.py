"""Search latency on an existing store: p50 and p95 of ``Memory.search`` (query embedding
included), over the synthetic queries ``localmem bench search`` uses, and the median CPU time
of one search (on a machine others share, wall-clock times move with their load; CPU time much
less).

Made for the stores ``localmem bench ingest --messages N`` leaves (``<workdir>/pace-N.db``,
namespace ``bench``), so that one 10,000-message store per embedder serves both the ingest and the
search figures (docs/languages.md). The store is searched with the embedder it was made with.

Usage::

    python evals/search_p50.py STORE.db [--namespace bench] [--queries 100] [--warmup 10]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from localmem import Memory
from localmem.config import Config
from localmem_bench.bench import NAMESPACE, generate_queries


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--namespace", default=NAMESPACE)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    args = parser.parse_args(argv)
    queries = generate_queries(args.queries + args.warmup)
    with Memory(args.store, namespace=args.namespace, config=Config.load(), create=False) as mem:
        messages = mem.stats().messages
        for query in queries[: args.warmup]:
            mem.search(query)
        times, cpu = [], []
        for query in queries[args.warmup :]:
            started, started_cpu = time.perf_counter(), time.process_time()
            mem.search(query)
            times.append(1000 * (time.perf_counter() - started))
            cpu.append(1000 * (time.process_time() - started_cpu))
        embedder = mem.embedder.model_id
    times.sort()
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
    print(
        f"{embedder}: {messages} messages, {len(times)} queries: p50 {statistics.median(times):.1f} ms, p95 {p95:.1f} ms"
        f" (CPU: p50 {statistics.median(cpu):.1f} ms, every thread of this process)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
