"""Every documented default is the real one: the CLI's help text and README's settings table
are checked against Config and the defaults the commands use."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import click

from localmem import config as cfg
from localmem.cli import cli
from localmem.config import Config

README = Path(__file__).resolve().parents[2] / "README.md"
DEFAULTS = Config()
# (command path, option) -> the value the code uses when the option is not given.
REAL = {
    ("", "--db"): "memory.db",  # in the user data dir (config.default_db_path)
    ("", "--namespace"): DEFAULTS.namespace,
    ("add", "--conversation"): cfg.DEFAULT_CONVERSATION,
    ("ingest", "--extract"): DEFAULTS.extract,
    ("ingest", "--consolidate"): DEFAULTS.consolidate,
    ("mcp", "--extract"): DEFAULTS.extract,
    ("serve", "--extract"): DEFAULTS.extract,
    ("ingest", "--workers"): DEFAULTS.llm_workers,
    ("flush", "--workers"): DEFAULTS.llm_workers,
    ("search", "--budget"): DEFAULTS.channel_budget,
    ("search", "--channels"): ",".join(cfg.CHANNELS),
    ("ask", "--max-tokens"): DEFAULTS.ask_max_tokens,
    ("ask", "--channels"): ",".join(cfg.CHANNELS),
    ("eval locomo", "--channels"): ",".join(cfg.CHANNELS),
}
_SAID = re.compile(r"[Dd]efault:?\s*'?([\w.,-]+)'?")


def _commands(group: click.Group, path: str = ""):
    yield path, group
    for name, command in group.commands.items():
        sub = f"{path} {name}".strip()
        if isinstance(command, click.Group):
            yield from _commands(command, sub)
        else:
            yield sub, command


def test_every_default_named_in_the_help_text_is_the_real_one():
    checked = 0
    for path, command in _commands(cli):
        for param in command.params:
            if not isinstance(param, click.Option) or not param.help:
                continue
            said = [
                m for m in _SAID.findall(param.help) if m not in ("detected", "file", "all", "now", "the", "stdout")
            ]  # words, not values
            name = max(param.opts, key=len)
            for value in said:
                assert (path, name) in REAL, f"{path} {name} names a default ({value}) no test checks"
                assert value.rstrip(".") == str(REAL[(path, name)]), (path, name, value)
                checked += 1
    assert checked >= len(REAL)


def test_shown_defaults_are_what_the_code_uses():
    search = cli.commands["search"]
    defaults = {max(p.opts, key=len): p.default for p in search.params if isinstance(p, click.Option)}
    assert defaults["--k"] == cfg.DEFAULT_K and defaults["--max-tokens"] == cfg.DEFAULT_SEARCH_MAX_TOKENS
    ask = {max(p.opts, key=len): p.default for p in cli.commands["ask"].params if isinstance(p, click.Option)}
    assert ask["--steps"] == cfg.DEFAULT_AGENT_STEPS and ask["--mode"] == cfg.ASK_MODES[0]


def test_the_readme_settings_table_lists_every_setting_with_its_real_default():
    rows = {}
    for line in README.read_text(encoding="utf-8").splitlines():
        found = re.match(r"\|\s*`(\w+)`\s*\|\s*(.*?)\s*\|", line)
        if found:
            rows[found.group(1)] = found.group(2).strip("` ")
    settings = [f.name for f in dataclasses.fields(Config) if f.name != "origins"]
    assert sorted(set(settings) - set(rows)) == [], "settings missing from README's table"
    for name in settings:
        real = getattr(DEFAULTS, name)
        shown = "none" if real is None else str(real).lower() if isinstance(real, bool) else str(real)
        if name == "db_path":
            shown = "memory.db in the user data dir"
        assert rows[name] == shown, (name, rows[name], shown)
