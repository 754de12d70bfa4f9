"""Offline means no network, ever: ingest, search and ask open no socket but AF_UNIX, neither in
the Python process (a guard around ``socket``) nor in native code (the CLI under ``strace``),
and the model libraries write nothing outside localmem's own directories.

Without the guard's ``loopback`` nothing at all may leave the process; ``loopback`` is for a
model server the user configures on this machine, and only then.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from localmem.config import Config
from tests.helpers import (
    REPO,
    SAMPLE_CHAT,
    NetworkUsed,
    default_embedder_installed,
    no_network,
    open_memory,
    tiny_llm_installed,
)

TINY = "smollm2-135m-instruct-q4_1"


# -- the guard itself ----------------------------------------------------------------------------


def test_the_guard_refuses_every_network_socket_and_allows_unix_ones():
    with no_network() as attempts:
        with pytest.raises(NetworkUsed):
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        with pytest.raises(NetworkUsed):
            socket.socket()  # AF_INET by default
        with pytest.raises(NetworkUsed):
            socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        with pytest.raises(NetworkUsed):
            socket.getaddrinfo("example.org", 443)
        with pytest.raises(NetworkUsed):
            socket.create_connection(("127.0.0.1", 9))  # not even loopback by default
        a, b = socket.socketpair(socket.AF_UNIX)
        a.close(), b.close()
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close()
    assert len(attempts) == 5
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).close()  # restored afterwards


def test_the_guard_with_loopback_allows_this_machine_only():
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        with no_network(loopback=True) as attempts:
            client = socket.create_connection(("127.0.0.1", port), timeout=5)
            peer, _ = server.accept()
            client.sendall(b"ping")
            assert peer.recv(4) == b"ping"
            client.close(), peer.close()
            remote = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            with pytest.raises(NetworkUsed):
                remote.connect(("192.0.2.1", 80))  # TEST-NET-1: refused before any packet
            remote.close()
            with pytest.raises(NetworkUsed):
                socket.getaddrinfo("example.org", 80)
        assert len(attempts) == 2
    finally:
        server.close()


# -- the environment the backends set ------------------------------------------------------------


def _python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ORT_", "HF_", "LOCALMEM_"))}
    clean["PYTHONPATH"] = str(REPO)
    return subprocess.run(
        [sys.executable, "-W", "always", "-c", code],
        capture_output=True,
        text=True,
        env={**clean, **(env or {})},
        timeout=120,
    )


@pytest.mark.slow
def test_a_model_library_is_imported_with_telemetry_and_downloads_off():
    code = (
        "import os, sys; from localmem.models.backends import library; library('tokenizers'); "
        "print(os.environ['ORT_DISABLE_TELEMETRY'], os.environ['HF_HUB_OFFLINE'], "
        "os.environ['HF_HUB_DISABLE_TELEMETRY'], 'huggingface_hub' in sys.modules)"
    )
    assert _python(code).stdout.split() == ["1", "1", "1", "False"]
    # An application's own hub setting is kept; telemetry is off whatever it says.
    done = _python(code, {"HF_HUB_OFFLINE": "0", "ORT_DISABLE_TELEMETRY": "0"})
    assert done.stdout.split() == ["1", "0", "1", "False"]


@pytest.mark.slow
def test_onnxruntime_imported_earlier_with_telemetry_is_reported():
    code = (
        "import onnxruntime; from localmem.models.backends import library; library('onnxruntime'); "
        "library('onnxruntime')"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("RuntimeWarning: onnxruntime was imported before localmem") == 1, done.stderr
    quiet = _python(code, {"ORT_DISABLE_TELEMETRY": "1"})
    assert quiet.returncode == 0 and "ORT_DISABLE_TELEMETRY" not in quiet.stderr, quiet.stderr


# -- the real models, in process -----------------------------------------------------------------


@pytest.mark.models
def test_ingest_search_and_ask_open_no_socket(tmp_path):
    """The real embedder (onnxruntime + tokenizers) and, when installed, the tiny llama.cpp model."""
    had_hub = "huggingface_hub" in sys.modules
    config = Config(db_path=tmp_path / "m.db", llm_model=TINY, n_threads=1, n_ctx=2048)
    with no_network() as attempts:
        with open_memory(config=config) as mem:
            report = mem.ingest(SAMPLE_CHAT)
            assert report.added > 20
            hits = mem.search("Where did Priya move for her new job?")
            # among the hits `localmem search` shows (6th of 10 with rrf_k 2, 5th with 60)
            assert hits and "Lisbon" in " ".join(h.text for h in hits)
            mem.add("Priya", "The flat in Lisbon has a balcony.")
            if tiny_llm_installed():
                reply = mem.ask("Where did Priya move?", max_tokens=64)
                assert reply.calls >= 1 and reply.tokens["prompt"] > 0
    assert attempts == []
    assert had_hub or "huggingface_hub" not in sys.modules


# -- the real CLI, under strace ------------------------------------------------------------------

_SOCKET = re.compile(r"\bsocket\((AF_[A-Z0-9]+)")


def _network_sockets(trace: Path) -> list[str]:
    """The socket() calls of a ``strace -f -e trace=network`` log whose family is not AF_UNIX."""
    found = []
    for line in trace.read_text(errors="replace").splitlines():
        match = _SOCKET.search(line)
        if match and match.group(1) != "AF_UNIX":
            found.append(line.strip())
    return found


@pytest.mark.slow
@pytest.mark.models
@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed (apt-get install strace)")
@pytest.mark.skipif(not default_embedder_installed(), reason="the default embedder is not installed")
def test_the_cli_opens_no_network_socket_and_writes_nothing_outside_its_home(tmp_path):
    home = tmp_path / "user"  # a fresh $HOME: onnxruntime wrote its device id under ~/.cache
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ORT_", "HF_", "LOCALMEM_", "XDG_"))}
    env.update(
        HOME=str(home),
        LOCALMEM_HOME=str(home / "localmem"),
        LOCALMEM_N_THREADS="1",
        LOCALMEM_N_CTX="2048",
        PYTHONPATH=str(REPO),
    )
    commands = [["ingest", str(SAMPLE_CHAT)], ["search", "Where did Priya move?"]]
    if tiny_llm_installed():
        commands.append(["--llm-model", TINY, "ask", "Where did Priya move?", "--max-tokens", "64"])
    for i, args in enumerate(commands):
        trace = tmp_path / f"trace-{i}.txt"
        done = subprocess.run(
            [
                "strace",
                "-f",
                "-e",
                "trace=network",
                "-o",
                str(trace),
                sys.executable,
                "-X",
                "importtime",
                "-m",
                "localmem",
                *args,
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        if i == 0 and done.returncode != 0 and "ptrace" in done.stderr:
            pytest.skip(f"strace cannot trace here: {done.stderr.strip()[:200]}")
        assert done.returncode == 0, done.stderr[-2000:]
        assert _network_sockets(trace) == [], args
        # Top-level packages imported by importlib are not logged, their submodules are.
        imported = {
            line.split("|")[-1].strip().split(".")[0]
            for line in done.stderr.splitlines()
            if line.startswith("import time:")
        }
        assert "onnxruntime" in imported or args[0] != "ingest"  # the trace covered the real embedder
        assert "huggingface_hub" not in imported, args
    written = sorted(
        str(p.relative_to(home)) for p in home.rglob("*") if p.is_file() and not p.is_relative_to(home / "localmem")
    )
    assert written == []
