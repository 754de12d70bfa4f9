"""The reports housekeeping and browsing return: dataclasses whose fields are the keys of the
JSON the CLI prints (``--json``), in the same order, and which still read as that mapping."""

from __future__ import annotations

import io
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
    assert not isinstance(done, dict) and done.to_dict()["counts"] == done.counts
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
    assert isinstance(stats, Stats) and stats.messages == 1 and stats.to_dict()["messages"] == 1
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


def test_the_views_are_dataclasses_whose_dicts_are_the_json_the_api_serves(mem):
    from localmem.store.results import ConversationWindow, ExportReport, Period, SpeakerSummary, TimelinePeriod

    mem.add("Ann", "I adopted a puppy called Rex", "2023-05-08T10:00:00", conversation="c", id="a")
    mem.add("Bob", "Rex likes the beach", "2023-06-09T10:00:00", conversation="c", id="b")
    months = mem.browse.timeline("month")
    assert all(isinstance(p, TimelinePeriod) for p in months)
    assert [p.to_dict() for p in months] == [
        {"start": "2023-05-01", "messages": 1, "episodes": 1, "end": "2023-06-01"},  # closed by the gap
        {"start": "2023-06-01", "messages": 1, "episodes": 0, "end": "2023-07-01"},
    ]
    assert [list(p.to_dict()) for p in months] == [["start", "messages", "episodes", "end"]] * 2  # the old order
    [ann, bob] = mem.browse.speakers()
    assert isinstance(ann, SpeakerSummary) and ann.to_dict() == {
        "speaker": "Ann",
        "messages": 1,
        "first": "2023-05-08T10:00:00",
        "last": "2023-05-08T10:00:00",
    }
    assert bob.speaker == "Bob"
    period = mem.browse.period("2023-06-01", "2023-07-01")
    assert isinstance(period, Period)
    assert period.to_dict() == {
        "start": "2023-06-01",
        "end": "2023-07-01",
        "conversations": [
            {
                "conversation": "c",
                "messages": 1,
                "first": "2023-06-09T10:00:00",
                "last": "2023-06-09T10:00:00",
                "first_id": "m:2",
            }
        ],
        "episodes": [],
    }
    window = mem.browse.context("m:2", around=1)
    assert isinstance(window, ConversationWindow)
    assert list(window.to_dict()) == ["conversation", "focus", "first", "last", "more_before", "more_after", "messages"]
    assert (window.focus, window.first, window.last, window.more_before, window.more_after) == (
        "m:2",
        0,
        1,
        False,
        False,
    )
    assert window.messages[0] == {
        "id": "m:1",
        "speaker": "Ann",
        "role": None,
        "text": "I adopted a puppy called Rex",
        "time": "2023-05-08T10:00:00",
        "seq": 0,
        "replaces": None,
        "replaced_by": None,
        "session": "",  # the export's session, which the page draws a line between
    }
    assert mem.browse.conversation("c", 1, 1).to_dict() == {
        **window.to_dict(),
        "focus": None,
        "first": 1,
        "messages": window.messages[1:],
        "more_before": True,
    }
    exported = mem.admin.export(io.StringIO())
    assert isinstance(exported, ExportReport) and exported.to_dict() == exported.counts
    assert exported.to_dict()["messages"] == 2 and json.dumps(exported.to_dict())
