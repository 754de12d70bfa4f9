"""Trial: is any write lost when several processes (or threads) write to one store?

    PYTHONPATH=$PWD python -m tests.trials.concurrent_writes [--adds 300] [--creates 20]

1. two processes each call ``Memory.add`` ``--adds`` times on one store;
2. the same, with a third process ingesting a 3,000-message file beside them;
3. ``--creates`` times, two processes open the same new store at once;
4. one ``Memory`` used from two threads;
5. a ``Memory`` used after ``close()``.

Uses only the public API, so it runs on any checkout. Prints one JSON object: what was
stored, and every error by its one-line message (with how long the failing call took).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from localmem.errors import LocalmemError

from ..fakes import HashEmbedder
from ..helpers import open_memory

REPO = Path(__file__).resolve().parents[2]


def _wait_for(go: Path) -> None:
    while not go.exists():
        time.sleep(0.001)


def worker_add(path: str, tag: str, n: int, go: str) -> None:
    """Add ``n`` messages; print one JSON line: added, and each error with its duration."""
    errors: list[tuple[str, float]] = []
    added = 0
    with open_memory(path, namespace="c", embedder=HashEmbedder()) as mem:
        _wait_for(Path(go))
        for i in range(n):
            started = time.monotonic()
            try:
                mem.add("Ann", f"{tag} message {i} about the harbour", id=f"{tag}-{i}")
                added += 1
            except LocalmemError as exc:
                errors.append((f"{type(exc).__name__}: {exc}", round(time.monotonic() - started, 3)))
    print(json.dumps({"added": added, "errors": errors}))


def worker_ingest(path: str, file: str, go: str) -> None:
    with open_memory(path, namespace="bulk", embedder=HashEmbedder()) as mem:
        _wait_for(Path(go))
        try:
            report = mem.ingest(file)
            print(json.dumps({"added": report.added, "errors": []}))
        except LocalmemError as exc:
            print(json.dumps({"added": 0, "errors": [(f"{type(exc).__name__}: {exc}", 0)]}))


def worker_create(path: str, go: str) -> None:
    _wait_for(Path(go))
    try:
        with open_memory(path, embedder=HashEmbedder()) as mem:
            mem.stats()
        print(json.dumps({"errors": []}))
    except Exception as exc:  # noqa: BLE001 - the trial counts every failure
        print(json.dumps({"errors": [(f"{type(exc).__name__}: {exc}", 0)]}))


def _spawn(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.trials.concurrent_writes", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _collect(procs: list[subprocess.Popen]) -> list[dict[str, Any]]:
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=900)
        lines = stdout.strip().splitlines()
        out.append(json.loads(lines[-1]) if lines else {"errors": [(f"crashed: {stderr[-300:]}", 0)]})
    return out


def _summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    errors = [e for r in results for e in r["errors"]]
    kinds = Counter(e[0][:140] for e in errors)
    return {
        "errors": len(errors),
        "messages": dict(kinds.most_common(5)),
        "slowest_failure_s": max((e[1] for e in errors), default=None),
        "fastest_failure_s": min((e[1] for e in errors), default=None),
    }


def adds(root: Path, n: int, with_ingest: bool) -> dict[str, Any]:
    path = root / f"adds-{int(with_ingest)}.db"
    go = root / f"go-{int(with_ingest)}"
    with open_memory(path, namespace="c", embedder=HashEmbedder()) as mem:
        mem.add("Ann", "the first message")  # the store exists and is bound before the race
    procs = [_spawn("add", str(path), tag, str(n), str(go)) for tag in ("p1", "p2")]
    if with_ingest:
        bulk = root / "bulk.jsonl"
        bulk.write_text(
            "".join(
                json.dumps({"speaker": "Bo", "text": f"bulk line {i} on boats and trains"}) + "\n" for i in range(3000)
            ),
            encoding="utf-8",
        )
        procs.append(_spawn("ingest", str(path), str(bulk), str(go)))
    time.sleep(3)  # every worker has opened the store and waits
    started = time.monotonic()
    go.touch()
    results = _collect(procs)
    with open_memory(path, namespace="c", embedder=HashEmbedder()) as mem:
        stored = mem.conn.execute("select count(*) from messages where ns = 'c' and external_id like 'p%'").fetchone()[
            0
        ]
        bulk_stored = mem.conn.execute("select count(*) from messages where ns = 'bulk'").fetchone()[0]
    out = {"attempted": 2 * n, "stored": stored, "seconds": round(time.monotonic() - started, 1), **_summary(results)}
    if with_ingest:
        out["ingest_stored"] = bulk_stored
    return out


def creates(root: Path, n: int) -> dict[str, Any]:
    results = []
    for trial in range(n):
        path, go = root / f"new-{trial}.db", root / f"go-new-{trial}"
        procs = [_spawn("create", str(path), str(go)) for _ in range(2)]
        time.sleep(1.5)
        go.touch()
        results += _collect(procs)
    return {"trials": n, "opens": 2 * n, **_summary(results)}


def threads(root: Path, n: int) -> dict[str, Any]:
    errors: list[tuple[str, float]] = []
    with open_memory(root / "threads.db", namespace="t", embedder=HashEmbedder()) as mem:
        mem.add("Ann", "the first message")

        def run(tag: str) -> None:
            for i in range(n):
                started = time.monotonic()
                try:
                    mem.add("Ann", f"{tag} message {i}", id=f"{tag}-{i}")
                    mem.search(f"{tag} message", k=3)
                except Exception as exc:  # noqa: BLE001 - the trial counts every failure
                    errors.append((f"{type(exc).__name__}: {exc}", round(time.monotonic() - started, 3)))

        workers = [threading.Thread(target=run, args=(tag,)) for tag in ("t1", "t2")]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        stored = mem.conn.execute("select count(*) from messages where external_id like 't%'").fetchone()[0]
    return {"attempted": 2 * n, "stored": stored, **_summary([{"errors": errors}])}


def after_close(root: Path) -> dict[str, Any]:
    mem = open_memory(root / "closed.db", embedder=HashEmbedder())
    mem.close()
    out = {}
    for name, call in (
        ("add", lambda: mem.add("Ann", "hi")),
        ("search", lambda: mem.search("hi")),
        ("stats", mem.stats),
    ):
        try:
            call()
            out[name] = "no error"
        except Exception as exc:  # noqa: BLE001 - the trial reports what the user sees
            out[name] = f"{type(exc).__name__}: {exc}"
    return out


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in ("add", "ingest", "create"):
        {
            "add": lambda a: worker_add(a[0], a[1], int(a[2]), a[3]),
            "ingest": lambda a: worker_ingest(*a),
            "create": lambda a: worker_create(*a),
        }[sys.argv[1]](sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adds", type=int, default=300)
    parser.add_argument("--creates", type=int, default=20)
    parser.add_argument("--threads", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        out = {
            "two_processes": adds(root, args.adds, False),
            "two_processes_and_an_ingest": adds(root, args.adds, True),
            "two_creates": creates(root, args.creates),
            "two_threads": threads(root, args.threads),
            "after_close": after_close(root),
        }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
