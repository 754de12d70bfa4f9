"""The reports housekeeping and browsing return: dataclasses whose fields are the keys of the
JSON the CLI prints (``--json``), in the same order, and which still read as that mapping."""

from __future__ import annotations

import json
from dataclasses import fields

from localmem.cli import cli
from localmem.store.results import ForgetResult, NamespaceSummary, Source, Stats, VacuumReport
from tests.helpers import runner


def test_forget_returns_its_documented_fields_and_the_cli_prints_them(mem, tmp_path):
    first = mem.add("Ann", "I adopted a puppy called Rex", "2023-05-08T10:00:00")
    mem.add("Ann", "Rex likes the beach", "2023-05-09T10:00:00")
    plan = mem.forget(ids=[first.ref], dry_run=True)
    assert isinstance(plan, ForgetResult)
    assert plan.messages == [first.ref] and plan.counts["messages"] == 1 and plan.dry_run and plan.file is None
    # The docstring names every field it returns.
    for f in fields(ForgetResult):
        assert f"``{f.name}``" in ForgetResult.__doc__
    done = mem.forget(ids=[first.ref])
    assert done.file is not None and done.file["bytes_after"] > 0 and done.dry_run is False
    # Read as a mapping, it is the dict the CLI prints after its target.
    assert done["counts"] == done.counts and dict(done) == done.to_dict() and done == done.to_dict()
    assert list(done.to_dict()) == [
        "messages",
        "units",
        "sources",
        "entities",
        "kept_units",
        "counts",
        "dry_run",
        "file",
    ]
    mem.close()
    result = runner().invoke(
        cli, ["--db", str(tmp_path / "m.db"), "-n", "test", "forget", "m:2", "--json"], catch_exceptions=False
    )
    printed = json.loads(result.output)
    assert printed.pop("target") == {"ids": ["m:2"], "in_namespace": "test"}
    assert list(printed) == [f.name for f in fields(ForgetResult)]


def test_stats_and_lists_print_their_fields_in_order(mem, tmp_path):
    mem.add("Ann", "I adopted a puppy called Rex", "2023-05-08T10:00:00")
    stats = mem.stats()
    assert isinstance(stats, Stats) and stats.messages == 1 and stats["messages"] == 1
    assert "background_extraction" not in stats.to_dict()  # left out unless extraction runs in the background
    assert list(stats.to_dict()) == [f.name for f in fields(Stats)][:-1]
    [ns] = mem.namespaces()
    assert isinstance(ns, NamespaceSummary) and (ns.namespace, ns.messages) == ("test", 1)
    [source] = mem.browse.sources()
    assert isinstance(source, Source) and source.messages == 1
    vacuumed = mem.admin.vacuum()
    assert isinstance(vacuumed, VacuumReport) and vacuumed.bytes_after <= vacuumed.bytes_before
    mem.close()
    db = str(tmp_path / "m.db")
    printed = json.loads(runner().invoke(cli, ["--db", db, "-n", "test", "stats", "--json"]).output)
    assert list(printed) == list(stats.to_dict()) and printed["messages"] == 1
    listed = json.loads(runner().invoke(cli, ["--db", db, "namespaces", "--json"]).output)
    assert listed == [ns.to_dict()]
