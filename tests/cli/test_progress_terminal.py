"""`localmem ingest`'s progress bar, in a real process: drawn on a terminal (a pty), with the
count, the rate and an ETA; nothing at all when stderr is a pipe. The fake embedder is
registered in the child the way the conftest's ``use_models`` does it in-process."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import REPO, write_jsonl

pytestmark = pytest.mark.slow

# The CLI with a HashEmbedder that takes a little time a batch, so the bar's rate and ETA have
# a clock to read (each embed call sleeps 20 ms).
CHILD = """
import sys, time
from localmem.models.factory import register
from tests.fakes import HashEmbedder

class Slow(HashEmbedder):
    def embed(self, texts, role="passage"):
        time.sleep(0.02)
        return super().embed(texts)

register("embedder", "test-fake", lambda config: Slow())
from localmem.cli import main
sys.argv = ["localmem", *sys.argv[1:]]
main()
"""


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOCALMEM_", "XDG_"))}
    env.update(
        HOME=str(tmp_path / "home"),
        LOCALMEM_HOME=str(tmp_path / "lm"),
        LOCALMEM_EMBED_BACKEND="test-fake",
        LOCALMEM_INGEST_BATCH="50",
        PYTHONPATH=str(REPO),
        COLUMNS="160",
    )
    return env


def _chat(tmp_path: Path, n: int = 400) -> Path:
    rows = [
        {"conversation": "c", "id": f"m{i}", "speaker": "Ana" if i % 2 else "Ben", "text": f"message {i} about {w}"}
        for i, w in zip(range(n), ["pottery", "Lisbon", "the marathon", "a new job"] * n)
    ]
    return write_jsonl(tmp_path / "chat.jsonl", rows)


def _on_a_terminal(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """Run ``args`` with stderr on a pty (stdout a pipe); (exit code, stdout, what the pty got)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=slave, env=env, cwd=REPO)
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed its end (Linux: EIO)
            break
        if not chunk:
            break
        seen += chunk
    out, _ = proc.communicate(timeout=60)
    os.close(master)
    return proc.returncode, out.decode(), seen.decode(errors="replace")


def test_the_bar_is_drawn_on_a_terminal_with_a_rate_and_an_eta(tmp_path):
    chat = _chat(tmp_path)
    args = [sys.executable, "-c", CHILD, "--db", str(tmp_path / "t.db"), "ingest", str(chat)]
    code, out, terminal = _on_a_terminal(args, _env(tmp_path))
    assert code == 0, terminal
    assert "400 added" in out  # the summary goes to stdout, not to the terminal's bar
    assert "ingesting chat.jsonl" in terminal
    assert "400/400" in terminal and "100%" in terminal
    assert re.search(r"\d[\d,]*\.\d/s, eta \d+:\d\d:\d\d", terminal), terminal  # seen mid-way


def test_nothing_on_a_pipe(tmp_path):
    """The control: the same command with stderr on a pipe writes only the one-time notice."""
    chat = _chat(tmp_path)
    db = tmp_path / "p.db"
    args = [sys.executable, "-c", CHILD, "--db", str(db), "ingest", str(chat)]
    done = subprocess.run(args, capture_output=True, text=True, env=_env(tmp_path), cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "400 added" in done.stdout
    assert done.stderr == f"created a new store at {db}\n"
    assert "ingesting" not in done.stdout + done.stderr and "/s" not in done.stderr
