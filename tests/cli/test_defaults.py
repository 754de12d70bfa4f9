"""Every documented default is the real one: the CLI's help text names the defaults the code
uses, every setting's declaration parses back to its own default, and the generated docs
(docs/configuration.md, docs/cli.md) are what tools/docsgen.py writes from the code now."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import click
import pytest

from localmem import config as cfg
from localmem.cli import SettingOption, cli
from localmem.config import Config, settings
from tests.fakes import HashEmbedder
from tests.helpers import SAMPLE_CHAT, runner
from tools import docsgen

DEFAULTS = Config()
# (command path, option) -> the value the code uses when an option that is no setting is not given.
REAL = {
    ("add", "--conversation"): cfg.DEFAULT_CONVERSATION,
    ("search", "--channels"): ",".join(cfg.CHANNELS),
    ("ask", "--channels"): ",".join(cfg.CHANNELS),
    ("eval locomo", "--channels"): ",".join(cfg.CHANNELS),
}
_SAID = re.compile(r"[Dd]efault:?\s*'?([\w.,-]*\w)'?")
_WORDS = ("detected", "file", "all", "now", "the", "stdout")  # "default: the latest message time": words, not values


def _commands(group: click.Group, path: str = ""):
    yield path, group
    for name, command in group.commands.items():
        sub = f"{path} {name}".strip()
        if isinstance(command, click.Group):
            yield from _commands(command, sub)
        else:
            yield sub, command


def _said(value) -> str:
    """A value as a person writes it in a config file or an environment variable."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def test_every_default_named_in_the_help_text_is_the_real_one():
    checked = 0
    for path, command in _commands(cli):
        for param in command.params:
            if not isinstance(param, click.Option) or not param.help or param.hidden:
                continue
            name = max(param.opts, key=len)
            said = [m for m in _SAID.findall(param.help) if m not in _WORDS]
            if isinstance(param, SettingOption):  # the help is generated: it must say the Config default
                real = getattr(DEFAULTS, param.setting)
                expected = [] if real is None else [_said(real)]
                if param.setting == "db_path":
                    expected = ["memory.db"]  # in the user data dir (config.default_db_path)
                assert said == expected, (path, name, said, real)
                spec = settings()[param.setting]
                assert param.help.endswith(f"Env: {spec.env_said()}."), (path, name)
                assert spec.env == f"LOCALMEM_{param.setting.upper()}" or param.setting == "db_path"  # LOCALMEM_DB
            else:
                for value in said:
                    assert (path, name) in REAL, f"{path} {name} names a default ({value}) no test checks"
                    assert value == str(REAL[(path, name)]), (path, name, value)
            checked += len(said)
    assert checked >= len(REAL) + 8


def test_every_setting_parses_its_own_default_and_documents_it():
    fields = [f.name for f in dataclasses.fields(Config) if f.name != "origins"]
    assert list(settings()) == fields  # every field but origins is a declared setting
    for name, spec in settings().items():
        assert spec.help.strip() and spec.help.endswith("."), name
        if spec.default is None:
            assert spec.optional, name
            continue
        # the default, written as the docs show it, read back through the environment
        loaded = Config.load(env={spec.env: spec.shown_default()}, config_file=Path("/nonexistent/config.toml"))
        assert getattr(loaded, name) == spec.default and loaded.origin(name) == "env", name
        assert type(spec.default) is spec.kind, name


def test_every_setting_flag_sets_it(tmp_path):
    """Each option the declarations name exists on the CLI and carries its setting."""
    seen: dict[str, set[str]] = {}
    for _, command in _commands(cli):
        for param in command.params:
            if isinstance(param, SettingOption):
                seen.setdefault(param.setting, set()).update(param.opts)
    flagged = {name: set(spec.flags) for name, spec in settings().items() if spec.flags}
    assert {name: opts & flagged[name] for name, opts in seen.items()} == flagged


@pytest.fixture
def store(tmp_path, use_models) -> Path:
    use_models(embedder=HashEmbedder())
    path = tmp_path / "s.db"
    assert runner().invoke(cli, ["--db", str(path), "-q", "ingest", str(SAMPLE_CHAT)]).exit_code == 0
    return path


def test_search_returns_as_many_hits_as_its_help_says_by_default(store):
    shown = re.search(
        r"--k INTEGER\s+Number of hits\.\s+\[default: (\d+)\]", runner().invoke(cli, ["search", "-h"]).stdout
    )
    hits = json.loads(runner().invoke(cli, ["--db", str(store), "search", "Mochi", "--json"]).stdout)["hits"]
    assert shown and len(hits) == int(shown.group(1))  # the sample chat has more messages than that
    fewer = json.loads(runner().invoke(cli, ["--db", str(store), "search", "Mochi", "-k", "3", "--json"]).stdout)
    assert len(fewer["hits"]) == 3


def test_the_generated_docs_are_fresh():
    assert docsgen.stale() == [], "run: python -m tools.docsgen"
    text = docsgen.CONFIGURATION.read_text(encoding="utf-8")
    for name, spec in settings().items():
        assert f"| `{name}` | {spec.env_said('`')} |" in text, name
