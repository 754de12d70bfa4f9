"""How fast ``localmem mcp`` is ready: from spawning the process to the tools listed, measured
the way an MCP client sees it (the SDK's own client, stdio, the initialize handshake, then
``tools/list``), and the first ``remember`` after that (which loads the embedder).

Start-up is mostly the Python interpreter and the ``mcp`` SDK's own import, so every run also
times, interleaved with it on the same machine, a bare SDK server with one tool and no localmem
in it (the floor any Python MCP server pays) and ``python -c pass``. Wall time is what a client
waits; the server's CPU time (user + system, from spawn to exit after the listing) is what it
would wait on an idle machine. Compare within one run: the machine may be busy. The functions
print nothing: ``localmem bench mcp`` formats the rows.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from localmem.config import Config

__all__ = ["MCP_COLUMNS", "bench_mcp_startup"]

MCP_COLUMNS: list[str] = [
    "server",
    "runs",
    "tools_listed_p50_s",
    "tools_listed_min_s",
    "tools_listed_max_s",
    "cpu_p50_s",
    "first_remember_p50_s",
]

_BARE_SERVER = """
from mcp.server.mcpserver import MCPServer
server = MCPServer("bare")
@server.tool()
def echo(text: str) -> str:
    return text
server.run()
"""


def bench_mcp_startup(runs: int, workdir: Path | None, config: Config) -> list[dict[str, Any]]:
    """``runs`` cold starts of each server, interleaved; seconds from spawn to tools listed."""
    import anyio

    base = Path(workdir or tempfile.mkdtemp(prefix="localmem-bench-mcp-"))
    base.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALMEM_")}
    env["LOCALMEM_HOME"] = str(base / "home")
    for name in ("embed_backend", "embed_model", "embed_tokenizer"):  # the embedder the user configured
        if config.origin(name) != "default":
            env[f"LOCALMEM_{name.upper()}"] = str(getattr(config, name))
    localmem = [sys.executable, "-m", "localmem", "--db", str(base / "bench.db"), "mcp"]
    servers = {
        "localmem mcp": localmem,
        "bare MCP SDK server (one tool)": [sys.executable, "-c", _BARE_SERVER],
        "python -c pass (no MCP)": None,
    }
    wall: dict[str, list[float]] = {name: [] for name in servers}
    cpu: dict[str, list[float]] = {name: [] for name in servers}
    first_calls: list[float] = []
    for _ in range(runs):
        for name, argv in servers.items():
            before = _children_cpu()
            if argv is None:
                started = time.perf_counter()
                subprocess.run([sys.executable, "-c", "pass"], check=True, env=env)
                wall[name].append(time.perf_counter() - started)
            else:
                wall[name].append(anyio.run(_listed, argv, env, False)[0])
            cpu[name].append(_children_cpu() - before)
        first_calls.append(anyio.run(_listed, localmem, env, True)[1])
    rows = [_row(name, wall[name], cpu[name]) for name in servers]
    rows[0]["first_remember_p50_s"] = round(statistics.median(first_calls), 3)
    return rows


def _children_cpu() -> float:
    """User + system CPU seconds of every child process waited for so far."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _row(name: str, times: list[float], cpu: list[float]) -> dict[str, Any]:
    return {
        "server": name,
        "runs": len(times),
        "tools_listed_p50_s": round(statistics.median(times), 3),
        "tools_listed_min_s": round(min(times), 3),
        "tools_listed_max_s": round(max(times), 3),
        "cpu_p50_s": round(statistics.median(cpu), 3),
        "first_remember_p50_s": "",
    }


async def _listed(argv: list[str], env: dict[str, str], remember: bool) -> tuple[float, float]:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.types import TextContent

    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
    with open(os.devnull, "w") as devnull:
        started = time.perf_counter()
        async with Client(stdio_client(params, errlog=devnull), mode="legacy") as client:
            tools = await client.list_tools()
            listed = time.perf_counter() - started
            if not tools.tools:
                raise RuntimeError(f"{argv} listed no tools")
            first = 0.0
            if remember:
                started = time.perf_counter()
                result = await client.call_tool(
                    "remember", {"text": "I moved to Lisbon for the design job.", "speaker": "Priya"}
                )
                first = time.perf_counter() - started
                if result.is_error:
                    said = " ".join(c.text for c in result.content if isinstance(c, TextContent))
                    raise RuntimeError(f"remember failed: {said}")
    return listed, first
