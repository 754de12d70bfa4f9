"""Time the search of a store kept by ``evals/pg_big.py --keep`` with this checkout's code.

Prints the hybrid search's, the vector channel's and the BM25 channel's p50/p95 in ms as JSON
(the same queries and passes as ``evals/pg_scale.py``; the first 10 queries warm the caches).
Run it from two checkouts in turn (ABBA) to compare their search on one store: docs/scale.md.

Usage::

    python evals/kept_store_search.py 'postgresql://postgres@/lm_big_1000000?host=/path/to/data'
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from pg_big import NAMESPACE, BulkHashEmbedder  # noqa: E402
from pg_scale import time_searches  # noqa: E402

from localmem import Memory  # noqa: E402
from localmem_bench.bench import generate_queries  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("store", help="the kept store: its file or postgresql:// URL")
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args(argv)
    mem = Memory(args.store, namespace=NAMESPACE, embedder=BulkHashEmbedder())
    try:
        print(json.dumps(time_searches({"store": mem}, generate_queries(args.queries + 10))["store"]))
    finally:
        mem.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
