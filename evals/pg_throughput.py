"""Throughput of ``localmem serve`` over one PostgreSQL database: searches and adds per second
with 1, 2 and 4 serve processes and 8 concurrent HTTP clients (docs/scale.md, "Throughput").

The database is filled first (``--size`` synthetic messages, ``localmem bench``'s generator,
in this process). Then for each process count N, N ``localmem serve`` processes start on
127.0.0.1 (port 0, one shared token: ``--token-env``) and 8 client threads, each with its own
keep-alive connection to process ``i % N`` (as a load balancer spreading connections would),
run for ``--seconds``: first only searches (``GET /api/search``, the synthetic questions in
turn), then only adds (``POST /api/add``, each a new message). Printed per phase: requests per
second, p50 and p95 latency, errors, and the CPU seconds the serve processes, the PostgreSQL
server (the postmaster's children, found from the socket directory's ``postmaster.pid``) and
the client spent per request: what bounds the rate on a small machine.

Usage::

    localmem postgres start --data /tmp/lm-pg --json     # prints the server's URL
    python evals/pg_throughput.py --url 'postgresql://postgres@/postgres?host=/tmp/lm-pg/data' \\
        --size 2000 --seconds 15 --hash-embedder

``--url`` names a server whose role may create databases: the run makes ``lm_throughput``
there (dropped first). ``--hash-embedder``: the tests' hashing embedder in the filler and in
the servers (through tests/mcp_plugin, the "test-fake" backend), so that embedding costs
nothing and the store's and the server's own work is measured; without it, the configured
embedder (MiniLM by default) runs in every server process.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

REPO = Path(__file__).resolve().parents[1]
CLIENTS = 8
TICK = os.sysconf("SC_CLK_TCK")


def _database_url(url: str, name: str) -> str:
    head, _, query = url.partition("?")
    base = head.rsplit("/", 1)[0] if head.count("/") > 2 else head.rstrip("/")
    return f"{base}/{name}" + (f"?{query}" if query else "")


def _fresh_database(url: str, name: str) -> str:
    import psycopg

    with psycopg.connect(_database_url(url, "postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[arg-type]
        conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
    return _database_url(url, name)


def _cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of process ``pid`` so far (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def _postgres_pids(url: str) -> list[int]:
    """The PostgreSQL server's processes: the postmaster (first line of postmaster.pid in the
    socket directory) and its children. Empty when the server is not local."""
    host = parse_qs(urlsplit(url).query).get("host", [""])[0]
    try:
        master = int(Path(host, "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return []
    pids = [master]
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == master:
                pids.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return pids


def _server_env(home: Path, token: str, hash_embedder: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALMEM_")}
    env.update(LOCALMEM_HOME=str(home), LM_BENCH_TOKEN=token, LOCALMEM_EXTRACT="none")
    if hash_embedder:
        env.update(
            PYTHONPATH=os.pathsep.join([str(REPO / "tests" / "mcp_plugin"), str(REPO)]),
            LOCALMEM_EMBED_BACKEND="test-fake",
            LOCALMEM_LLM_BACKEND="test-fake",
        )
    return env


def _start(url: str, count: int, env: dict[str, str], logs: Path) -> list[tuple[subprocess.Popen, int]]:
    """``count`` serve processes, started at once; each (process, port) once it listens."""
    procs = []
    for i in range(count):
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "localmem", "--db", url, "--namespace", "bench", "serve"]
                + ["--address", "127.0.0.1:0", "--token-env", "LM_BENCH_TOKEN"],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=(logs / f"serve-{count}-{i}.log").open("w"),
                text=True,
            )
        )
    started = []
    for proc in procs:
        line = proc.stdout.readline() if proc.stdout else ""
        found = re.search(r"http://[^/]+:(\d+)/", line)
        if not found:
            _stop([(p, 0) for p in procs])
            raise SystemExit(f"a serve process did not start ({line!r}); see {logs}")
        started.append((proc, int(found.group(1))))
    return started


def _stop(servers: list[tuple[subprocess.Popen, int]]) -> None:
    for proc, _ in servers:
        if proc.poll() is None:
            proc.terminate()
    for proc, _ in servers:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def _phase(
    kind: str, ports: list[int], token: str, seconds: float, queries: list[str], tag: str
) -> tuple[list[float], int]:
    """8 clients for ``seconds``: each request's latency (s), and the errors."""
    latencies: list[list[float]] = [[] for _ in range(CLIENTS)]
    errors = [0] * CLIENTS
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    start = threading.Barrier(CLIENTS + 1)
    stop_at: list[float] = [0.0]

    def client(i: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", ports[i % len(ports)], timeout=60)
        n = 0
        start.wait()
        while time.perf_counter() < stop_at[0]:
            t0 = time.perf_counter()
            try:
                if kind == "search":
                    q = queries[(i * 7919 + n) % len(queries)]
                    conn.request("GET", f"/api/search?q={quote(q)}&k=10", headers=headers)
                else:
                    body = {
                        "speaker": f"client{i}",
                        "text": f"note {n} from client {i} in {tag}",
                        "id": f"{tag}-{i}-{n}",
                    }
                    body["conversation"] = f"bench-{i}"
                    conn.request("POST", "/api/add", body=json.dumps(body), headers=headers)
                response = conn.getresponse()
                response.read()
                if response.status >= 300 or (kind == "add" and response.status != 201):
                    errors[i] += 1
                else:
                    latencies[i].append(time.perf_counter() - t0)
            except (OSError, http.client.HTTPException):
                errors[i] += 1
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", ports[i % len(ports)], timeout=60)
            n += 1
        conn.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    stop_at[0] = time.perf_counter() + seconds
    start.wait()
    for t in threads:
        t.join()
    return [x for per in latencies for x in per], sum(errors)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--url", required=True, help="a PostgreSQL server (a role that may create databases)")
    parser.add_argument("--size", type=int, default=2000, help="messages in the database before the phases")
    parser.add_argument("--seconds", type=float, default=15.0, help="each phase's length")
    parser.add_argument("--processes", default="1,2,4", help="serve process counts, comma-separated")
    parser.add_argument("--hash-embedder", action="store_true", help="the tests' hashing embedder (no model)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(REPO))
    from localmem import Memory
    from localmem_bench.bench import generate_messages, generate_queries, write_jsonl

    work = Path(tempfile.mkdtemp(prefix="lm-throughput-"))
    url = _fresh_database(args.url, "lm_throughput")
    embedder = None
    if args.hash_embedder:
        from tests.fakes import HashEmbedder

        embedder = HashEmbedder()
    write_jsonl(generate_messages(args.size), work / "messages.jsonl")
    t0 = time.perf_counter()
    with Memory(url, namespace="bench", embedder=embedder) as mem:
        mem.ingest(work / "messages.jsonl", format="jsonl", extract="none")
    print(f"filled {args.size} messages in {time.perf_counter() - t0:.1f} s", flush=True)
    queries = generate_queries(200)
    token = secrets.token_urlsafe(32)
    env = _server_env(work / "home", token, args.hash_embedder)
    rows: list[dict[str, Any]] = []
    print(
        "| serve processes | operation | requests/s | p50 ms | p95 ms | errors | CPU ms per request: serve / postgres / client | load avg (1 min) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for count in [int(c) for c in args.processes.split(",")]:
        servers = _start(url, count, env, work)
        try:
            ports = [port for _, port in servers]
            for kind in ("search", "add"):  # each process warm: its pool, its language detector
                _phase(kind, ports, token, min(3.0, args.seconds), queries, f"warm{count}")
            for kind in ("search", "add"):
                serve_before = sum(_cpu_seconds(p.pid) for p, _ in servers)
                pg_before = {pid: _cpu_seconds(pid) for pid in _postgres_pids(url)}
                client_before = time.process_time()
                wall = time.perf_counter()
                latencies, errors = _phase(kind, ports, token, args.seconds, queries, f"p{count}")
                wall = time.perf_counter() - wall
                pg_after = {pid: _cpu_seconds(pid) for pid in _postgres_pids(url)}  # backends new in the phase too
                pg_cpu = sum(cpu - pg_before.get(pid, 0.0) for pid, cpu in pg_after.items())
                done = len(latencies)
                per = 1000 / max(done, 1)
                row = {
                    "processes": count,
                    "operation": kind,
                    "clients": CLIENTS,
                    "messages_before": args.size,
                    "requests_per_s": round(done / wall, 1),
                    "p50_ms": round(_pct(latencies, 0.5) * 1000, 1),
                    "p95_ms": round(_pct(latencies, 0.95) * 1000, 1),
                    "mean_ms": round(statistics.fmean(latencies) * 1000, 1) if latencies else None,
                    "errors": errors,
                    "serve_cpu_ms_per_request": round(
                        (sum(_cpu_seconds(p.pid) for p, _ in servers) - serve_before) * per, 1
                    ),
                    "postgres_cpu_ms_per_request": round(pg_cpu * per, 1) if pg_after else None,
                    "client_cpu_ms_per_request": round((time.process_time() - client_before) * per, 1),
                    "load_avg_1min": round(os.getloadavg()[0], 2),
                    "embedder": "hashing (tests)" if args.hash_embedder else "configured",
                }
                rows.append(row)
                print(
                    f"| {count} | {kind} | {row['requests_per_s']} | {row['p50_ms']} | {row['p95_ms']} | {errors} | "
                    f"{row['serve_cpu_ms_per_request']} / {row['postgres_cpu_ms_per_request']} / "
                    f"{row['client_cpu_ms_per_request']} | {row['load_avg_1min']} |",
                    flush=True,
                )
        finally:
            _stop(servers)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
