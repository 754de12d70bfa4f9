"""Search latency on SQLite and on PostgreSQL, side by side in one run (docs/scale.md).

The same synthetic messages (``localmem bench``'s generator) are ingested into a fresh SQLite
file and a fresh PostgreSQL database with the same embedder; then the same queries are timed
on both, taking turns query by query (a slower moment of the machine falls on both): the full
hybrid search, the vector channel alone and the BM25 channel alone, p50 and p95 in ms (the
query's embedding included where the channel needs it). Ingest time is printed too.

Usage::

    localmem postgres start --data /tmp/lm-pg        # prints the server's URL
    python evals/pg_scale.py --url 'postgresql://postgres@/postgres?host=/tmp/lm-pg' --size 10000

``--url`` names a server whose role may create databases: the run makes ``lm_scale_<size>``
there (dropped first if present).
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


def database_url(url: str, name: str) -> str:
    """``url`` with its database name replaced by ``name``."""
    head, _, query = url.partition("?")
    base = head.rsplit("/", 1)[0] if head.count("/") > 2 else head.rstrip("/")
    return f"{base}/{name}" + (f"?{query}" if query else "")


def fresh_database(url: str, name: str) -> str:
    """A new, empty database ``name`` on the server of ``url`` (dropped first if present); its URL."""
    import psycopg

    with psycopg.connect(database_url(url, "postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[arg-type]
        conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
    return database_url(url, name)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def time_searches(mems: dict[str, Memory], queries: list[str], warmup: int = 10) -> dict[str, dict[str, float]]:
    """p50 and p95 (ms) per engine of the hybrid search, the vector channel and the BM25 channel
    over ``queries``, the engines taking turns query by query; the first ``warmup`` queries of
    each pass warm the caches and are not counted."""
    result: dict[str, dict[str, float]] = {e: {} for e in mems}
    passes = {"hybrid": None, "vector": ["vector"], "bm25": ["bm25"]}
    for name, channels in passes.items():
        times: dict[str, list[float]] = {e: [] for e in mems}
        for i, query in enumerate(queries):
            for engine, mem in mems.items():
                t0 = time.perf_counter()
                mem.search(query, **({"channels": channels} if channels else {}))
                if i >= warmup:
                    times[engine].append((time.perf_counter() - t0) * 1000)
        for engine, samples in times.items():
            result[engine][f"{name}_p50_ms"] = round(statistics.median(samples), 1)
            result[engine][f"{name}_p95_ms"] = round(_pct(samples, 0.95), 1)
    return result


def print_latency_table(timings: dict[str, dict], column: str, values: dict[str, object]) -> None:
    """The Markdown table docs/scale.md shows: per engine its messages, one more ``column``
    (``values`` per engine), and the p50 / p95 of the three passes :func:`time_searches` times."""
    print(f"| engine | messages | {column} | hybrid p50 / p95 ms | vector p50 / p95 | bm25 p50 / p95 |")
    print("|---|---|---|---|---|---|")
    for engine, r in timings.items():
        print(
            f"| {engine} | {r['messages']:,} | {values[engine]} | {r['hybrid_p50_ms']} / {r['hybrid_p95_ms']} | "
            f"{r['vector_p50_ms']} / {r['vector_p95_ms']} | {r['bm25_p50_ms']} / {r['bm25_p95_ms']} |"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="a PostgreSQL server (a role that may create databases)")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--hash-embedder", action="store_true", help="the tests' hashing embedder (no model)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    embedder = None
    if args.hash_embedder:
        from tests.fakes import HashEmbedder

        embedder = HashEmbedder()
    work = Path(tempfile.mkdtemp(prefix="lm-scale-"))
    data = work / "messages.jsonl"
    write_jsonl(generate_messages(args.size), data)
    stores = {"sqlite": str(work / "bench.db"), "postgres": fresh_database(args.url, f"lm_scale_{args.size}")}
    mems: dict[str, Memory] = {}
    result: dict[str, dict[str, float]] = {}
    for engine, target in stores.items():
        mem = Memory(target, namespace="bench", embedder=embedder)
        mem.embedder.embed(["warm-up"])
        t0 = time.perf_counter()
        mem.ingest(data, format="jsonl", extract="none")
        result[engine] = {"ingest_s": round(time.perf_counter() - t0, 1), "messages": mem.stats().messages}
        mems[engine] = mem
    for engine, r in time_searches(mems, generate_queries(args.queries + 10)).items():
        result[engine].update(r)
    for mem in mems.values():
        mem.close()
    print_latency_table(result, "ingest s", {e: r["ingest_s"] for e, r in result.items()})
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
