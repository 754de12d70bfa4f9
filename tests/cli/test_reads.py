"""Reads do not write: on a fresh home, the commands that only read (search, ask, stats, show,
export and the listings) leave no new file in the data, cache or config directories, do not
change one byte of the store, and never load llama.cpp just to count tokens."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from localmem.cli import cli
from tests.fakes import HashEmbedder, ScriptedLLM
from tests.helpers import REPO, SAMPLE_CHAT, default_embedder_installed, open_memory, runner
from tests.pipeline.test_pipeline import _responder as plausible_model


def tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` with the sha256 of its bytes."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _build(db_path: Path, embedder=None) -> str:
    """A store with messages and built memory (episodes, gists, facts, entities); a unit id."""
    with open_memory(db_path, embedder=embedder, llm=ScriptedLLM(responder=plausible_model)) as mem:
        mem.ingest(SAMPLE_CHAT, extract="llm")
        return f"u:{mem.conn.execute('select min(id) from units').fetchone()[0]}"


READS = [
    ["search", "Where did Priya move?"],
    ["search", "Where did Priya move?", "--max-tokens", "120", "--json"],
    ["stats"],
    ["stats", "--sources"],
    ["namespaces"],
    ["export"],
    ["episodes"],
    ["facts"],
    ["entities"],
    ["profile", "Priya"],
]


def test_read_commands_leave_the_home_and_the_store_byte_for_byte_unchanged(isolated_home, use_models):
    unit = _build(isolated_home / "memory.db", HashEmbedder())
    before = tree(isolated_home)
    assert "memory.db" in before and not any(name.endswith(("-wal", "-shm")) for name in before)
    use_models(
        embedder=HashEmbedder(),
        llm=ScriptedLLM(responder=lambda m: {"answer": "Lisbon", "supports": [1], "confidence": 0.9}),
    )
    for args in [*READS, ["show", unit], ["ask", "Where did Priya move?"]]:
        result = runner().invoke(cli, args)
        assert result.exit_code == 0, (args, result.output, result.stderr)
        assert tree(isolated_home) == before, args


@pytest.mark.slow
@pytest.mark.models
@pytest.mark.skipif(not default_embedder_installed(), reason="the default embedder is not installed")
def test_the_cli_reads_with_the_real_embedder_without_llama_cpp_or_new_files(tmp_path):
    home = tmp_path / "user"  # a fresh $HOME and LOCALMEM_HOME: nothing assembled, nothing cached
    lm_home = home / "localmem"
    lm_home.mkdir(parents=True)
    unit = _build(lm_home / "memory.db")
    before = tree(home)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOCALMEM_", "XDG_"))}
    env.update(HOME=str(home), LOCALMEM_HOME=str(lm_home), PYTHONPATH=str(REPO))
    for args in [*READS, ["show", unit]]:
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "localmem", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert done.returncode == 0, (args, done.stderr[-2000:])
        modules = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
        imported = {m.split(".")[0] for m in modules}
        assert "llama_cpp" not in imported, args
        if args[0] == "search":
            assert "onnxruntime" in imported  # the real embedder ran
            # A cold search pays for what it uses only (issue 16: <= 0.6 s on a 10K store): not
            # the ingest stage and its importers (~37 ms), nor importlib.metadata (~15 ms).
            assert not {"localmem.pipeline.ingest", "localmem.importers.formats", "importlib.metadata"} & modules
        if "--max-tokens" in args:
            assert json.loads(done.stdout)  # hits, cut to the budget by the embedder's tokenizer
        assert tree(home) == before, args
