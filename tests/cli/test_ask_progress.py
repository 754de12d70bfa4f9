"""`localmem ask`'s status line, in a real process: on a terminal (a pty) it appears within a
second of the start, says each stage (reading memory, loading the model, answering) with the
seconds waited, and is erased when the answer comes; on a pipe, or with -q, nothing is written.
The slow LLM is registered in the child through the model factory, as the conftest's
``use_models`` does in-process: it takes 1.5 s to "load" on first use (reporting it as the
in-process model does) and 1.5 s to answer."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fakes import HashEmbedder
from tests.helpers import REPO, SAMPLE_CHAT, open_memory

pytestmark = pytest.mark.slow

CHILD = """
import sys, time
from localmem import progress
from localmem.models.factory import register
from tests.fakes import HashEmbedder, ScriptedLLM


def responder(messages):
    first = next(line for line in messages[-1]["content"].splitlines() if line.startswith("[1]"))
    return {"answer": first.split(": ", 1)[-1][:80], "supports": [1], "confidence": 0.9}


class SlowLLM(ScriptedLLM):
    loaded = False

    def count_tokens(self, text):  # as the in-process model: loaded on first use, and says so
        if not self.loaded:
            progress.stage(progress.LOAD)
            time.sleep(1.5)
            self.loaded = True
        return len(text.split())

    def complete_json(self, *args, **kwargs):
        time.sleep(1.5)
        return super().complete_json(*args, **kwargs)


register("embedder", "test-fake", lambda config: HashEmbedder())
register("llm", "test-fake", lambda config: SlowLLM(responder=responder))
from localmem.cli import main
sys.argv = ["localmem", *sys.argv[1:]]
main()
"""

STAGES = ("opening memory", "reading memory", "loading the model", "answering")


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOCALMEM_", "XDG_"))}
    env.update(
        HOME=str(tmp_path / "home"),
        LOCALMEM_HOME=str(tmp_path / "lm"),
        LOCALMEM_EMBED_BACKEND="test-fake",
        LOCALMEM_LLM_BACKEND="test-fake",
        PYTHONPATH=str(REPO),
        COLUMNS="120",
    )
    return env


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "m.db"
    with open_memory(path, embedder=HashEmbedder()) as mem:
        mem.ingest(SAMPLE_CHAT)
    return path


def _args(db: Path, *extra: str) -> list[str]:
    return [sys.executable, "-c", CHILD, "--db", str(db), *extra, "ask", "--local", "Where did Priya find a flat?"]


def _on_a_terminal(args: list[str], env: dict[str, str]) -> tuple[int, str, list[tuple[float, bytes]]]:
    """Run ``args`` with stderr on a pty (stdout a pipe): (exit code, stdout, what the pty got
    and when, in seconds since the start)."""
    master, slave = pty.openpty()
    started = time.monotonic()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=slave, env=env, cwd=REPO)
    os.close(slave)
    seen: list[tuple[float, bytes]] = []
    deadline = started + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.05)
        if not ready:
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed its end (Linux: EIO)
            break
        if not chunk:
            break
        seen.append((time.monotonic() - started, chunk))
    out, _ = proc.communicate(timeout=60)
    os.close(master)
    return proc.returncode, out.decode(), seen


def test_a_status_line_on_a_terminal(tmp_path, db):
    code, out, seen = _on_a_terminal(_args(db), _env(tmp_path))
    terminal = b"".join(chunk for _, chunk in seen).decode(errors="replace")
    assert code == 0, terminal
    assert "a flat" in out  # the answer, on stdout
    first = next(at for at, chunk in seen if b"\x1b[2K" in chunk)
    assert first < 1.0, f"the first status came {first:.2f} s after the start"
    for words in STAGES:
        assert words + "…" in terminal, (words, terminal)
    assert re.search(r"(loading the model|answering)… [1-9] s", terminal), terminal  # the wait, counted
    # Erased before the answer came: after the last stage's words, the line is cleared, and only
    # the time line ask ends with follows.
    last = max(terminal.rfind(words) for words in STAGES)
    rest = terminal[last:]
    assert "\r\x1b[2K" in rest
    after = rest[rest.rfind("\r\x1b[2K") + len("\r\x1b[2K") :]
    assert not any(words in after for words in STAGES) and re.fullmatch(r"\(\d+\.\d s;[^\n]*\)\r?\n", after), after


def test_nothing_on_a_pipe_or_with_quiet(tmp_path, db):
    env = _env(tmp_path)
    done = subprocess.run(_args(db), capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "a flat" in done.stdout
    assert "\r" not in done.stderr and not any(words in done.stderr for words in STAGES), done.stderr

    code, out, seen = _on_a_terminal(_args(db, "-q"), env)
    terminal = b"".join(chunk for _, chunk in seen).decode(errors="replace")
    assert code == 0 and "a flat" in out
    assert "\x1b[2K" not in terminal and not any(words in terminal for words in STAGES), terminal
