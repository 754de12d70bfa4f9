"""``localmem bench serve``: how long ``localmem serve`` takes on a synthetic store, as the server
itself measures it (the ``Server-Timing`` header: from the request reaching the app to its
response headers going out) and as a client on the same machine sees it (the round trip).

The store is the one ``bench ingest`` builds (``<workdir>/bench-<N>.db``, built first if
missing); the server runs in this process, on a free port of 127.0.0.1, behind its token, with
the configured models (the embedder is loaded and run once before the clock starts), warmed up
as ``localmem serve`` is before it prints its URL. Budgets
(issue 35): the first page ≤ 300 ms, a search ≤ 100 ms, the timeline ≤ 200 ms of server time.
"""

from __future__ import annotations

import socket
import statistics
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from localmem import Memory
from localmem.config import Config
from localmem.serve.app import build_app, open_reader, warm_up
from localmem.serve.calls import as_json
from localmem.serve.limits import Limits, server_options
from localmem.serve.security import Guard

from . import bench as bench_mod

COLUMNS = [
    "what",
    "messages",
    "requests",
    "server_p50_ms",
    "server_p95_ms",
    "server_max_ms",
    "round_trip_p50_ms",
    "budget_ms",
    "within",
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _server_ms(response: Any) -> float:
    """The server's own time for ``response``, from its Server-Timing header."""
    timing = response.headers["server-timing"]
    return float(timing.split("dur=", 1)[1].split(";", 1)[0])


def _row(what: str, messages: int, samples: Sequence[tuple[float, float]], budget: float) -> dict[str, Any]:
    server = sorted(s for s, _ in samples)
    trips = sorted(t for _, t in samples)
    p95 = bench_mod._percentile(server, 95)
    return {
        "what": what,
        "messages": messages,
        "requests": len(samples),
        "server_p50_ms": round(statistics.median(server), 1),
        "server_p95_ms": round(p95, 1),
        "server_max_ms": round(server[-1], 1),
        "round_trip_p50_ms": round(statistics.median(trips), 1),
        "budget_ms": budget,
        "within": "yes" if p95 <= budget else "no",
    }


def bench_serve(size: int, workdir: Path | None, config: Config, requests: int = 50) -> list[dict[str, Any]]:
    """Time the first page, search and the timeline (by month and by week) on a store of
    ``size`` synthetic messages; one row each (the first page once cold, then warm), and the
    same searches made in process without the server, for comparison."""
    import httpx2
    import uvicorn

    workdir = Path(workdir) if workdir is not None else bench_mod.default_workdir()
    cfg = bench_mod._bench_config(config)
    path = bench_mod.store_path(workdir, size)
    if bench_mod._stored_messages(path, cfg, None, None) != size:
        bench_mod.bench_ingest([size], workdir, config)
    writer = Memory(path, namespace=bench_mod.NAMESPACE, config=cfg, create=False)
    reader = open_reader(writer)
    writer.embedder.embed(["warm-up"])  # model loading is not what this measures
    port = _free_port()
    guard = Guard.create("127.0.0.1", port)
    app = build_app(writer, reader, guard, mcp=False)
    warm_up(reader)  # as serve does before it prints the URL
    options = server_options(Limits.of(cfg), guard.holds_token)  # the limits and timers serve runs with
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on", **options)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            time.sleep(0.01)
        client = httpx2.Client(
            base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {guard.token}"}, timeout=60
        )
        with client:

            def timed(path: str, params: dict[str, Any] | None = None) -> tuple[float, float]:
                t0 = time.perf_counter()
                response = client.get(path, params=params)
                trip = (time.perf_counter() - t0) * 1000
                response.raise_for_status()
                return _server_ms(response), trip

            def many(path: str, params: Callable[[int], dict[str, Any] | None]) -> list[tuple[float, float]]:
                return [timed(path, params(i)) for i in range(requests)]

            messages = int(as_json(writer.stats())["messages"])
            rows = [_row("first page, cold (/)", messages, [timed("/")], 300)]
            rows.append(_row("first page, warm (/)", messages, many("/", lambda i: None), 300))
            queries = bench_mod.generate_queries(requests + bench_mod.WARMUP_QUERIES)
            for query in queries[: bench_mod.WARMUP_QUERIES]:
                timed("/api/search", {"q": query})
            timed_queries = queries[bench_mod.WARMUP_QUERIES :]
            # The three take turns query by query, so a slower moment of the machine falls on all.
            api, page, direct = [], [], []  # direct: without the server; what it adds is the difference
            for query in timed_queries:
                api.append(timed("/api/search", {"q": query, "k": 10}))
                page.append(timed("/", {"q": query}))
                t0 = time.perf_counter()
                reader.search(query, k=10)
                spent = (time.perf_counter() - t0) * 1000
                direct.append((spent, spent))
            rows.append(_row("search (/api/search, k=10)", messages, api, 100))
            rows.append(_row("search page (/?q=, 10 hits)", messages, page, 100))
            rows.append(_row("Memory.search alone (no server)", messages, direct, 100))
            rows.append(_row("timeline page, by month", messages, many("/timeline", lambda i: None), 200))
            rows.append(_row("timeline page, by week", messages, many("/timeline", lambda i: {"period": "week"}), 200))
            rows.append(
                _row("timeline API, by week", messages, many("/api/timeline", lambda i: {"period": "week"}), 200)
            )
        return rows
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        reader.close()
        writer.close()
