"""`localmem eval` and `localmem bench` without the benchmarks installed (localmem_bench is not
in the core wheel): one line saying how to install them, and the commands that do not need
them still work."""

from __future__ import annotations

import json
import sys

import pytest

from localmem.cli import cli
from tests.helpers import runner


@pytest.fixture
def without_benchmarks(monkeypatch):
    # None in sys.modules makes `import localmem_bench` fail as a missing package does.
    for name in [m for m in sys.modules if m == "localmem_bench" or m.startswith("localmem_bench.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "localmem_bench", None)


@pytest.mark.parametrize(
    "args",
    [
        ["bench", "search", "--sizes", "10"],
        ["bench", "ingest", "--sizes", "10"],
        ["bench", "memory", "--sizes", "10"],
        ["bench", "mcp"],
        ["bench", "serve", "--size", "10"],
        ["eval", "locomo", "missing.json"],
        ["eval", "longmemeval", "missing.json"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_a_benchmark_command_says_how_to_install_the_benchmarks(tmp_path, without_benchmarks, args):
    (tmp_path / "missing.json").write_text("[]", encoding="utf-8")
    done = runner().invoke(cli, ["--db", str(tmp_path / "m.db"), *args], catch_exceptions=False)
    assert done.exit_code == 1 and done.stdout == ""
    assert done.stderr.startswith("error: localmem eval and localmem bench need the benchmarks")
    assert "pip install ./bench" in done.stderr and done.stderr.count("\n") == 1
    assert not (tmp_path / "m.db").exists()  # nothing was made on the way


def test_the_json_form_gives_the_install_command_as_the_hint(tmp_path, without_benchmarks):
    done = runner().invoke(cli, ["--db", str(tmp_path / "m.db"), "bench", "search", "--sizes", "10", "--json"])
    error = json.loads(done.stdout or done.stderr)
    assert error["hint"].startswith("run: pip install ./bench") and done.exit_code == 1


def test_the_help_of_the_benchmark_commands_needs_no_benchmarks(without_benchmarks):
    for args in (["bench", "--help"], ["eval", "locomo", "--help"], ["bench", "search", "--help"]):
        done = runner().invoke(cli, args)
        assert done.exit_code == 0 and "Usage:" in done.stdout


def test_with_the_benchmarks_installed_the_module_is_found():
    from localmem.cli import _bench

    assert _bench("bench").__name__ == "localmem_bench.bench"
