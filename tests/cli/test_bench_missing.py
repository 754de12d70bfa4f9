"""`localmem eval` and `localmem bench` without the benchmarks installed (their commands come from
the bench/ package, a plugin of the CLI): one line saying how to install them, and the core CLI
carries no benchmark command. The plugin's loading itself is tested with real entry points in
tests/cli/test_plugins.py."""

from __future__ import annotations

import json

import pytest

from localmem.cli import BENCH_COMMANDS, cli
from tests.helpers import runner


@pytest.fixture
def without_benchmarks(monkeypatch):
    """The top group as an install without bench/ has it: plugins looked for, none found."""
    added = cli.load_plugins()
    monkeypatch.setattr(cli, "commands", {name: c for name, c in cli.commands.items() if name not in added})
    monkeypatch.setattr(cli, "plugins", {})


@pytest.mark.parametrize(
    "args",
    [
        ["bench", "search", "--sizes", "10"],
        ["bench", "ingest", "--sizes", "10"],
        ["bench", "memory", "--sizes", "10"],
        ["bench", "mcp"],
        ["bench", "serve", "--size", "10"],
        ["bench", "llm"],
        ["eval", "locomo", "missing.json"],
        ["eval", "longmemeval", "missing.json"],
        ["bench", "--help"],
        ["eval", "locomo", "--help"],
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


def test_the_core_help_lists_no_benchmark_command(without_benchmarks):
    done = runner().invoke(cli, ["--help"])
    listed = done.stdout.split("Commands:")[1].split()
    assert done.exit_code == 0 and "ingest" in listed and "search" in listed
    assert not set(BENCH_COMMANDS) & set(listed)


def test_another_unknown_command_is_still_a_usage_error(without_benchmarks):
    done = runner().invoke(cli, ["benchh"])
    assert done.exit_code == 2 and "No such command 'benchh'" in done.stderr
