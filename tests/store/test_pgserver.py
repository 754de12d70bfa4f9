"""``localmem postgres start|status|stop`` as a user runs them (issue 50, finding 12; issue 53):
start prints the line to paste, and that line works; stop says it stopped; no command writes
anything on stderr (the XDG_RUNTIME_DIR warning pgserver's import caused)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.helpers import REPO

pytest.importorskip("pgserver", reason="pip install 'localmem[postgres]'")
pytest.importorskip("psycopg", reason="pip install 'localmem[postgres]'")

# Its stores are PostgreSQL URLs: an encrypted run's key has nothing to do there.
pytestmark = pytest.mark.plain_only

PLUGIN = REPO / "tests" / "mcp_plugin"


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALMEM_") and k != "XDG_RUNTIME_DIR"}
    env.update(
        PYTHONPATH=os.pathsep.join([str(PLUGIN), str(REPO)]),
        LOCALMEM_HOME=str(home),
        LOCALMEM_EMBED_BACKEND="test-fake",
        LOCALMEM_LLM_BACKEND="test-fake",
    )
    return env


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "localmem", "postgres", *args], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done
    assert done.stderr == "", done.stderr  # no warning, on any command
    return done


def test_start_prints_the_line_to_paste_and_stop_says_it_stopped(tmp_path):
    parent = Path(tempfile.mkdtemp(prefix="localmem-test-pgcli-"))
    parent.chmod(0o755)  # as root the server runs as the user 'pgserver', which must reach it
    data = parent / "data"
    env = _env(tmp_path / "home")
    try:
        started = _run(env, "start", "--data", str(data)).stdout.splitlines()
        assert started[0].startswith("running (pid ") and started[-1].startswith("export LOCALMEM_DB="), started
        # The line, pasted into a shell: the commands after it use the store.
        shell = subprocess.run(
            ["bash", "-c", f"{started[-1]} && {sys.executable} -m localmem add Ann 'pasted and stored' --json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert shell.returncode == 0 and json.loads(shell.stdout)["added"] is True, shell
        assert json.loads(_run(env, "status", "--data", str(data), "--json").stdout)["running"] is True
        assert _run(env, "stop", "--data", str(data)).stdout == f"stopped ({data})\n"
        assert _run(env, "stop", "--data", str(data)).stdout == f"not running ({data})\n"
        assert json.loads(_run(env, "status", "--data", str(data), "--json").stdout)["running"] is False
    finally:
        subprocess.run(
            [sys.executable, "-m", "localmem", "postgres", "stop", "--data", str(data)],
            env=env,
            capture_output=True,
            timeout=300,
        )
        shutil.rmtree(parent, ignore_errors=True)
