"""A cold `localmem ask` through a running `localmem serve` against the same command answering
locally, measured from the command to its exit (issue 36 item 2).

    python evals/cli_serve.py --db STORE [--namespace NS] [--question Q ...] [--runs 5] [--fake]

Starts `localmem serve` on the store (a free port on 127.0.0.1), asks once through it as soon
as it listens (the model may still be loading in the background: serve_preload), then times RUNS new processes of `localmem ask Q --json` through the
server and RUNS with `--local`, and `localmem --help` for the interpreter's own start. "warm"
is the server's own time for the answer (timings.total), the figure the cold command is
compared with. `--fake`: the scripted test models (tests/mcp_plugin), which measures only the
overhead of the two paths (the commands that ask the server run without the plugin, which
imports numpy at start: they build no model); `--make N`: first build a synthetic store of N messages with the
bench (`localmem bench search`).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--namespace", default=None)
    parser.add_argument(
        "--question",
        action="append",
        help="a question (repeat it: the runs take them in turn, so no answer is a repeat of the one before)",
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--fake", action="store_true", help="the scripted test models")
    parser.add_argument("--make", type=int, default=0, help="first build a synthetic store of N messages")
    args = parser.parse_args()
    questions = args.question or ["What did they say about the trip last summer?"]
    env = dict(os.environ)
    client_env = env  # a command that asks the server builds no model: it needs no plugin
    if args.fake:
        plugin = REPO / "tests" / "mcp_plugin"
        env |= {"LOCALMEM_EMBED_BACKEND": "test-fake", "LOCALMEM_LLM_BACKEND": "test-fake"}
        client_env = dict(env)
        env["PYTHONPATH"] = os.pathsep.join([str(plugin), str(REPO), env.get("PYTHONPATH", "")])
    namespace = args.namespace or "default"
    db = args.db.resolve()
    if args.make:
        workdir = db.parent
        cmd = [sys.executable, "-m", "localmem", "bench", "search", "--sizes", str(args.make)]
        subprocess.run(
            [*cmd, "--workdir", str(workdir), "--queries", "1", "--json"],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        db = workdir / f"bench-{args.make}.db"
    base = [sys.executable, "-m", "localmem", "--db", str(db), "--namespace", namespace]

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [*base, "serve", "--address", f"127.0.0.1:{port}"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        first = wait_served(base, env, questions[-1], server, db, namespace)
        print(f"store {db} ({namespace}); first ask through the server, as soon as it listens: {first:.2f} s")
        help_runs = [timed([sys.executable, "-m", "localmem", "--help"], client_env)[0] for _ in range(args.runs)]
        asked = [questions[i % len(questions)] for i in range(args.runs)]
        served = [timed([*base, "ask", q, "--json"], client_env) for q in asked]
        local = [timed([*base, "ask", q, "--json", "--local"], env) for q in asked]
    finally:
        server.terminate()
        server.wait(timeout=60)
    assert all(out["timings"]["via"] == "serve" for _, out in served), "a run did not go through the server"
    assert all(out["timings"]["via"] == "local" for _, out in local)
    warm = statistics.median(out["timings"]["total"] for _, out in served)
    rows = [
        ("localmem --help (interpreter + CLI start)", help_runs),
        ("ask, new process, through serve", [wall for wall, _ in served]),
        ("ask, new process, --local", [wall for wall, _ in local]),
    ]
    print(f"{'what':44} {'median s':>9} {'min s':>7} {'÷ warm':>7}")
    for name, walls in rows:
        median = statistics.median(walls)
        print(f"{name:44} {median:9.3f} {min(walls):7.3f} {median / warm:7.2f}")
    round_trip = statistics.median(out["timings"]["round_trip"] for _, out in served)
    print(f"warm (the server's own answer time, median): {warm:.3f} s; the client's round trip: {round_trip:.3f} s")


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, dict]:
    started = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr}")
    return wall, (json.loads(done.stdout) if "--json" in cmd else {})


def wait_served(
    base: list[str], env: dict[str, str], question: str, server: subprocess.Popen, db: Path, namespace: str
) -> float:
    """Ask through the server once it has announced itself; the seconds that first ask took."""
    from localmem.serve import discovery

    deadline = time.monotonic() + 300
    while discovery.find(db, namespace) is None:
        if server.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("localmem serve did not start")
        time.sleep(0.1)
    wall, out = timed([*base, "ask", question, "--json"], env)
    if out["timings"].get("via") != "serve":
        raise SystemExit("the first ask did not go through the server")
    return wall


if __name__ == "__main__":
    main()
