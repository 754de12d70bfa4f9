"""`localmem mcp` over stdio, spoken to line by line: a request the SDK cannot decode gets a
JSON-RPC error reply with its id (before: no reply, no log line, the client waited out its
timeout), the server goes on answering, and a --log-file is created owner-only (before: 0644,
0666 under umask 000)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO

pytest.importorskip("mcp", reason="pip install 'localmem[mcp]' to test the MCP server")
pytestmark = [pytest.mark.plain_only, pytest.mark.slow]

PLUGIN = Path(__file__).parent.parent / "mcp_plugin"
FAKES = {"LOCALMEM_EMBED_BACKEND": "test-fake", "LOCALMEM_LLM_BACKEND": "test-fake"}


def spawn(tmp_path: Path, *args: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALMEM_")}
    env.update(PYTHONPATH=os.pathsep.join([str(PLUGIN), str(REPO)]), LOCALMEM_HOME=str(tmp_path / "home"), **FAKES)
    return subprocess.Popen(
        [sys.executable, "-m", "localmem", "--db", str(tmp_path / "m.db"), "mcp", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
        preexec_fn=lambda: os.umask(0),
    )


def send(proc: subprocess.Popen, line: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write(line.encode("utf-8") + b"\n")
    proc.stdin.flush()


def receive(proc: subprocess.Popen) -> dict:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, proc.stderr.read().decode() if proc.stderr else "no reply"
    return json.loads(line)


def handshake(proc: subprocess.Popen) -> None:
    send(
        proc,
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"},
                },
            }
        ),
    )
    assert receive(proc)["id"] == 1
    send(proc, json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))


def test_an_undecodable_request_gets_an_error_reply_and_the_server_goes_on(tmp_path):
    proc = spawn(tmp_path, "--log-file", str(tmp_path / "logs" / "mcp.log"))
    try:
        handshake(proc)
        # Valid JSON text (Python reads it) that the SDK's parser refuses: a lone surrogate.
        bad = '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search","arguments":{"query":"q \\ud800"}}}'
        send(proc, bad)
        reply = receive(proc)
        assert reply["id"] == 7 and reply["error"]["code"] == -32700, reply
        assert "lone surrogate" in reply["error"]["message"]
        send(proc, "this is not json at all")
        reply = receive(proc)
        assert reply["id"] is None and reply["error"]["code"] == -32700, reply
        send(proc, json.dumps({"jsonrpc": "2.0", "id": 8, "method": "tools/list"}))
        reply = receive(proc)
        assert reply["id"] == 8 and {t["name"] for t in reply["result"]["tools"]} >= {"search", "remember"}
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(60)
    log = tmp_path / "logs" / "mcp.log"
    assert stat.S_IMODE(log.stat().st_mode) == 0o600  # under umask 000
    assert stat.S_IMODE(log.parent.stat().st_mode) == 0o700
    assert "could not decode a request (id 7)" in log.read_text(encoding="utf-8")
