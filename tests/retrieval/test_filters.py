"""Search and ask filters: by speaker, conversation, time range and metadata; units pass only
when every message they rest on does; a selective filter still fills k."""

from __future__ import annotations

import json

import pytest

from localmem.cli import cli
from localmem.errors import LocalmemError
from localmem.retrieval import vector_index
from tests.fakes import HashEmbedder, ScriptedLLM
from tests.helpers import open_memory, runner


@pytest.fixture
def mem(tmp_path):
    """Ben talks about the garden 30 times in 'home'; Ana 4 times in 'work', from her phone."""
    with open_memory(
        tmp_path / "m.db",
        namespace="t",
        embedder=HashEmbedder(),
        llm=ScriptedLLM(responder=lambda m: {"answer": "roses", "supports": [1], "confidence": 0.8}),
    ) as m:
        for i in range(30):
            m.add(
                "Ben", f"the garden roses need water, note {i}", time=f"2024-01-{1 + i:02d}T08:00", conversation="home"
            )
        for i in range(4):
            m.add(
                "Ana",
                f"the garden roses at the office, note {i}",
                time=f"2024-02-0{1 + i}T08:00",
                conversation="work",
                meta={"app": "phone", "n": i},
            )
        yield m


def _texts(hits) -> list[str]:
    return [h.text for h in hits]


def test_each_filter_keeps_only_what_passes_and_still_fills_k(mem):
    ana = mem.search("garden roses", k=4, speaker="ana")  # any case
    assert len(ana) == 4 and all(t.startswith("Ana: ") for t in _texts(ana))
    assert all(h.sources[0].conversation == "work" for h in mem.search("garden roses", k=10, conversation="work"))
    assert len(mem.search("garden roses", k=10, conversation="work")) == 4
    january = mem.search("garden roses", k=50, since="2024-01-10", until="2024-01-12")  # days: inclusive
    assert sorted(h.time[:10] for h in january) == ["2024-01-10", "2024-01-11", "2024-01-12"]
    timed = mem.search("garden roses", k=50, since="2024-01-10T08:00", until="2024-01-11T08:00")
    assert sorted(h.time[:10] for h in timed) == ["2024-01-10", "2024-01-11"]
    phone = mem.search("garden roses", k=10, meta={"app": "phone", "n": "2"})  # "2" finds 2
    assert _texts(phone) == ["Ana: the garden roses at the office, note 2"]
    assert mem.search("garden roses", meta={"app": "laptop"}) == []
    assert len(mem.search("garden roses", k=40)) == 34  # no filter: everything


def test_a_unit_passes_only_when_every_message_it_rests_on_does(mem):
    conn = mem.conn
    ben, ana = (
        conn.execute("select id from messages where speaker = ? limit 1", (s,)).fetchone()[0] for s in ("Ben", "Ana")
    )
    both = conn.execute(
        "insert into units (ns, kind, text, created_at) values ('t', 'gist', "
        "'garden roses shared by both', 'x') returning id"
    ).fetchone()[0]
    alone = conn.execute(
        "insert into units (ns, kind, text, created_at) values ('t', 'gist', "
        "'garden roses of Ana alone', 'x') returning id"
    ).fetchone()[0]
    conn.execute("insert into unit_sources values (?, ?), (?, ?), (?, ?)", (both, ben, both, ana, alone, ana))
    found = {h.id for h in mem.search("garden roses both alone", k=50, channels=["bm25"], speaker="Ana")}
    assert f"u:{alone}" in found and f"u:{both}" not in found
    assert {f"u:{alone}", f"u:{both}"} <= {h.id for h in mem.search("garden roses both alone", k=50, channels=["bm25"])}


def test_a_broad_filter_over_a_large_namespace_still_fills_k(mem, monkeypatch):
    """Above AMONG_EXACT allowed rows the vector channel takes the namespace's nearest with extra
    and keeps those that pass, instead of scoring every allowed row."""
    query = "garden roses water note 7"
    exact = mem.search(query, k=5, channels=["vector"], speaker="Ben")
    monkeypatch.setattr(vector_index, "AMONG_EXACT", 3)  # 30 allowed
    wide = mem.search(query, k=5, channels=["vector"], speaker="Ben")
    # the other notes tie (they differ from the query by one word): only the best is the same
    assert len(wide) == len(exact) == 5 and wide[0].id == exact[0].id and "note 7" in wide[0].text
    assert all(t.startswith("Ben: ") for t in _texts(wide))


def test_ask_reads_only_what_passes(mem):
    mem.ask("What grows in the garden?", speaker="Ana", until="2024-02-02")
    lines = [line for line in mem.llm.calls[-1][-1]["content"].splitlines() if line.startswith("[")]
    assert len(lines) == 2 and all("Ana: the garden roses at the office, note" in line for line in lines)
    with pytest.raises(LocalmemError, match="fast mode"):
        mem.ask("What grows?", mode="agentic", speaker="Ana")


def test_bad_filters_and_metadata_are_refused(mem):
    with pytest.raises(LocalmemError, match="--since: not a time"):
        mem.search("x", since="soonish")
    with pytest.raises(LocalmemError, match="is not before --until"):
        mem.search("x", since="2024-02-01", until="2024-01-01")
    with pytest.raises(LocalmemError, match="must be text, a number, true/false or null"):
        mem.add("Ana", "hi", meta={"tags": ["a", "b"]})
    with pytest.raises(LocalmemError, match="is not a name"):
        mem.search("x", meta={'a"b': 1})


def test_cli_add_meta_and_filtered_search(tmp_path, use_models):
    use_models(embedder=HashEmbedder())
    db = ["--db", str(tmp_path / "c.db")]
    run = runner().invoke
    assert (
        run(cli, [*db, "add", "Ana", "tomatoes are ripe", "--meta", "app=phone", "--meta", "room=kitchen"]).exit_code
        == 0
    )
    assert run(cli, [*db, "add", "Ben", "tomatoes need sun", "--conversation", "garden"]).exit_code == 0
    shown = json.loads(run(cli, [*db, "show", "m:1", "--json"]).stdout)
    assert shown["meta"] == {"app": "phone", "room": "kitchen"}
    hits = json.loads(run(cli, [*db, "search", "tomatoes", "--meta", "room=kitchen", "--json"]).stdout)["hits"]
    assert [h["id"] for h in hits] == ["m:1"]
    hits = json.loads(
        run(cli, [*db, "search", "tomatoes", "--speaker", "Ben", "--conversation", "garden", "--json"]).stdout
    )["hits"]
    assert [h["id"] for h in hits] == ["m:2"]
    bad = run(cli, [*db, "add", "Ana", "x", "--meta", "novalue"])
    assert bad.exit_code == 2 and "'novalue' is not KEY=VALUE" in bad.stderr
