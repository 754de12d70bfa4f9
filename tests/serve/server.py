"""A real ``localmem serve`` for the tests: spawned in a process of its own on 127.0.0.1, with
the scripted models of tests/mcp_plugin (HashEmbedder, the scripted answer LLM)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from tests.fakes import HashEmbedder
from tests.helpers import REPO, open_memory

PLUGIN = REPO / "tests" / "mcp_plugin"
FAKES = {"LOCALMEM_EMBED_BACKEND": "test-fake", "LOCALMEM_LLM_BACKEND": "test-fake"}
IMPORTS = REPO / "tests" / "fixtures" / "imports"


@dataclass
class Served:
    proc: subprocess.Popen
    base: str  # http://127.0.0.1:PORT: for programs, with the Bearer token
    token: str
    stderr: Path
    page: str = ""  # http://<random>.localhost:PORT: where a browser opens the printed URL

    @property
    def port(self) -> int:
        return int(self.base.rsplit(":", 1)[1])

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        if self.proc.stdout:
            self.proc.stdout.close()
        return self.proc.returncode


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def env(tmp_path: Path, **extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("LOCALMEM_")}
    base.update(
        PYTHONPATH=os.pathsep.join([str(PLUGIN), str(REPO)]), LOCALMEM_HOME=str(tmp_path / "home"), **FAKES, **extra
    )
    return base


def spawn(
    tmp_path: Path,
    db: Path,
    *args: str,
    namespace: str = "default",
    before: tuple[str, ...] = (),
    preexec_fn: Callable[[], None] | None = None,
    **extra_env: str,
) -> Served:
    """Start ``localmem serve`` on any free port (``--address 127.0.0.1:0``); returns once it
    printed its URL, which it does only once it listens. ``before``: global options (before
    ``serve``); ``preexec_fn``: run in the child before it starts (a resource limit)."""
    err = tmp_path / f"serve-{time.monotonic_ns()}.stderr"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "localmem",
            "--db",
            str(db),
            "--namespace",
            namespace,
            *before,
            "serve",
            "--address",
            "127.0.0.1:0",
            *args,
        ],
        env=env(tmp_path, **extra_env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=err.open("w"),
        text=True,
        preexec_fn=preexec_fn,
    )
    line = proc.stdout.readline()
    found = re.fullmatch(r"localmem: open (http://[^/]+:(\d+))/\?token=(\S+)\n", line)
    assert found, (line, err.read_text())
    page, port, token = found.groups()
    with socket.create_connection(("127.0.0.1", int(port)), timeout=5):  # it listens already
        pass
    return Served(proc, f"http://127.0.0.1:{port}", token, err, page)


def seed(db: Path, texts: list[tuple[str, str, str]], namespace: str = "default", conversation: str = "chat") -> None:
    """Messages (speaker, text, time) stored by the library with the embedder the plugin's fake is."""
    with open_memory(db, namespace=namespace, embedder=HashEmbedder()) as mem:
        for i, (speaker, text, when) in enumerate(texts):
            mem.add(speaker, text, time=when, conversation=conversation, id=f"s{i}")


STORY = [
    ("Ann", "I moved to Oslo last spring for the new job at the harbour office.", "2024-03-02T10:00"),
    ("Bob", "Oslo! Is it cold there in March?", "2024-03-02T10:05"),
    ("Ann", "Very cold, but the sauna by the fjord makes up for it.", "2024-03-02T10:07"),
    ("Bob", "My sister Clara adopted a grey cat called Pepper.", "2024-04-11T19:30"),
    ("Ann", "Pepper is a great name for a cat.", "2024-04-11T19:32"),
    ("Bob", "<script>document.title='pwned'</script><b>bold?</b> & more", "2024-05-20T08:00"),
]
