"""Command plugins: each entry point in the group ``localmem.commands`` adds commands to the CLI
(the benchmarks' ``bench`` and ``eval`` are one). Real entry points: a distribution's metadata
(a ``*.dist-info`` directory, as pip writes it) on the path of a fresh ``localmem`` process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from localmem.cli import PLUGIN_GROUP

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow  # each test spawns localmem


def _install(site: Path, dist: str, points: dict[str, str], modules: dict[str, str] | None = None) -> None:
    """What installing distribution ``dist`` leaves in ``site``: its metadata and its modules."""
    info = site / f"{dist}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n", encoding="utf-8")
    lines = "".join(f"{name} = {value}\n" for name, value in points.items())
    (info / "entry_points.txt").write_text(f"[{PLUGIN_GROUP}]\n{lines}", encoding="utf-8")
    for name, code in (modules or {}).items():
        (site / f"{name}.py").write_text(textwrap.dedent(code), encoding="utf-8")


def _localmem(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)]), "LOCALMEM_HOME": str(site / "home")}
    code = "from localmem.cli import main; main()"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=120)


def _listed(help_text: str) -> list[str]:
    return [line.split()[0] for line in help_text.split("Commands:")[1].splitlines() if line.startswith("  ")]


GREET = """
    import click

    from localmem.cli import CommandGroup, State, json_option, print_json


    @click.group(cls=CommandGroup)
    def greet():
        "Greetings from a plugin."


    @greet.command()
    @json_option
    @click.pass_obj
    def hello(state: State, as_json: bool):
        "Say hello in the namespace given."
        print_json({"hello": state.config.namespace}) if as_json else click.echo("hello")


    def register(cli):
        cli.add_command(greet)
"""


def test_a_plugin_adds_its_commands_which_take_the_global_options(tmp_path):
    _install(tmp_path, "greet_plugin", {"greet": "greet_plugin:register"}, {"greet_plugin": GREET})
    helped = _localmem(tmp_path, "--help")
    assert helped.returncode == 0 and helped.stderr == ""
    assert {"greet", "search", "ingest"} <= set(_listed(helped.stdout))
    done = _localmem(tmp_path, "greet", "hello", "-n", "zoe", "--json")
    assert done.returncode == 0 and json.loads(done.stdout) == {"hello": "zoe"}, done.stderr


def test_a_plugin_that_fails_is_named_once_in_one_line_and_the_core_works(tmp_path):
    _install(tmp_path, "missing_dep", {"needs_frob": "needs_frob:register"}, {"needs_frob": "import frob_xyz\n"})
    _install(
        tmp_path, "bad_register", {"bad": "bad_register:register"}, {"bad_register": "def register():\n    pass\n"}
    )
    _install(tmp_path, "greet_plugin", {"greet": "greet_plugin:register"}, {"greet_plugin": GREET})
    helped = _localmem(tmp_path, "--help")
    assert helped.returncode == 0 and {"search", "greet"} <= set(_listed(helped.stdout))
    lines = helped.stderr.splitlines()
    assert len(lines) == 2, helped.stderr  # once each, though --help asks for every command
    assert lines[0].startswith("warning: the command plugin bad (bad_register:register) is not loaded: ")
    assert lines[1] == (
        "warning: the command plugin needs_frob (needs_frob:register) is not loaded: No module named 'frob_xyz'"
    )
    done = _localmem(tmp_path, "greet", "hello")
    assert done.returncode == 0 and done.stdout == "hello\n" and len(done.stderr.splitlines()) == 2


def test_a_plugin_cannot_replace_a_core_command(tmp_path):
    takeover = """
        import click

        def register(cli):
            cli.add_command(click.Command("extra", callback=lambda: click.echo("extra")))
            cli.add_command(click.Command("search", callback=lambda: click.echo("not the search")))
    """
    _install(tmp_path, "takeover", {"takeover": "takeover:register"}, {"takeover": takeover})
    done = _localmem(tmp_path, "search", "--help")
    assert done.returncode == 0 and "Search memory for QUERY" in done.stdout
    assert done.stderr == ""  # a core command's name never reads the plugins (a cold search pays nothing for them)
    listed = _localmem(tmp_path, "--help")  # listing the commands reads them
    assert listed.stderr == (
        "warning: the command plugin takeover (takeover:register) is not loaded: it would replace the command search\n"
    )
    assert "extra" not in _listed(listed.stdout)  # nothing of it stays
    assert _localmem(tmp_path, "extra").returncode != 0


def test_the_benchmarks_entry_point_as_bench_pyproject_declares_it(tmp_path):
    project = tomllib.loads((REPO / "bench" / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    _install(tmp_path, project["name"].replace("-", "_"), project["entry-points"][PLUGIN_GROUP])
    helped = _localmem(tmp_path, "--help")
    assert helped.returncode == 0 and helped.stderr == ""
    assert {"bench", "eval"} <= set(_listed(helped.stdout))
    bench = _localmem(tmp_path, "bench", "--help")
    assert set(_listed(bench.stdout)) == {"ask", "ingest", "llm", "mcp", "memory", "search", "serve"}
    evaluate = _localmem(tmp_path, "eval", "--help")
    assert set(_listed(evaluate.stdout)) == {"locomo", "longmemeval"}
    sizes = _localmem(tmp_path, "bench", "search", "--sizes", "0", "--json")
    assert sizes.returncode == 2 and json.loads(sizes.stderr)["code"] == "usage"  # the global --json reached it
