"""Correcting a memory: the correction is a new message that replaces the old one, which stays
marked replaced; search and ask show the correction first. And one memory in full by its id."""

from __future__ import annotations

import hashlib
import io
import json
from collections import Counter

import pytest

from localmem.cli import cli
from localmem.errors import InputError, LocalmemError, NotFoundError
from tests.fakes import HashEmbedder, ScriptedLLM
from tests.helpers import open_memory, runner


@pytest.fixture
def mem(tmp_path):
    llm = ScriptedLLM(responder=lambda messages: {"answer": "Munich", "supports": [1], "confidence": 0.9})
    with open_memory(tmp_path / "m.db", namespace="me", embedder=HashEmbedder(), llm=llm) as memory:
        memory.add(
            "Priya",
            "I moved to Berlin for the new job at the design studio.",
            time="2024-03-02T18:05",
            conversation="chat",
            id="p1",
            meta={"app": "phone"},
        )
        memory.add("Sam", "Congratulations! How is the flat?", time="2024-03-02T18:07", conversation="chat")
        memory.add("Priya", "My sister visits me in April.", time="2024-03-03T09:00", conversation="chat")
        yield memory


def _ids(hits) -> list[str]:
    return [h.id for h in hits]


def test_a_correction_replaces_the_message_and_the_old_one_stays(mem):
    fixed = mem.correct("m:1", "I moved to Munich for the new job at the design studio.")
    assert (fixed.ref, fixed.replaces, fixed.added, fixed.conversation, fixed.external_id) == (
        "m:4",
        1,
        True,
        "chat",
        "p1~1",
    )
    new, old = mem.browse.get("m:4").to_dict(), mem.browse.get("m:1").to_dict()
    # the correction takes the old message's place: speaker, time, metadata, source
    assert (new["speaker"], new["time"], new["meta"], new["replaces"]) == (
        "Priya",
        "2024-03-02T18:05:00",
        {"app": "phone"},
        "m:1",
    )
    assert new["source"] == old["source"] and new["session"] == old["session"] and new["seq"] == old["seq"]
    assert old["replaced_by"] == "m:4" and old["text"].startswith("I moved to Berlin")
    hits = mem.search("Where did Priya move for the job?", k=3)
    assert _ids(hits)[:2] == ["m:4", "m:1"]  # the new one first, even though the old matches as well
    assert hits[0].supersedes == ["m:1"] and hits[1].superseded_by == "m:4"
    only_old = mem.search("Berlin", channels=["bm25"])  # the old one matches, not its correction:
    assert _ids(only_old)[:2] == ["m:4", "m:1"]  # the correction comes with it (m:2 after: its context)


def test_correcting_again_replaces_the_newest_version(mem):
    mem.correct("m:1", "I moved to Munich.")
    again = mem.correct("m:1", "I moved to Hamburg.")  # the old id: its newest correction is replaced
    assert (again.ref, again.replaces, again.external_id) == ("m:5", 4, "p1~2")
    assert _ids(mem.search("Berlin", channels=["bm25"]))[:3] == ["m:5", "m:4", "m:1"]


def test_a_unit_resting_only_on_corrected_messages_comes_after_the_correction(mem):
    conn = mem.conn
    gist = conn.execute(
        "insert into units (ns, kind, text, created_at) values ('me', 'gist', "
        "'Priya lives in Berlin now', 'x') returning id"
    ).fetchone()[0]
    conn.execute("insert into unit_sources values (?, 1)", (gist,))
    mem.correct("m:1", "I moved to Munich.")
    hits = mem.search("lives in Berlin now", channels=["bm25"], k=5)
    assert _ids(hits)[:2] == ["m:4", f"u:{gist}"] and hits[1].superseded_by == "m:4"


def test_ask_reads_the_correction_first_and_the_old_one_marked(mem):
    mem.correct("m:1", "I moved to Munich for the new job at the design studio.")
    result = mem.ask("Where did Priya move for the job?")
    lines = [line for line in mem.llm.calls[-1][-1]["content"].splitlines() if line.startswith("[")]
    munich = next(i for i, line in enumerate(lines) if "Munich" in line)
    berlin = next(i for i, line in enumerate(lines) if "Berlin" in line)
    assert munich < berlin and "replaced later" in lines[berlin] and "replaced" not in lines[munich]
    assert result.answer == "Munich"


def test_forgetting_a_correction_makes_the_old_message_current_again(mem):
    mem.correct("m:1", "I moved to Munich.")
    mem.forget(ids=["m:4"])
    assert mem.browse.get("m:1").replaced_by is None
    hits = mem.search("Berlin", channels=["bm25"])
    assert _ids(hits)[0] == "m:1" and hits[0].superseded_by is None and "m:4" not in _ids(hits)


def test_what_cannot_be_corrected(mem):
    with pytest.raises(NotFoundError, match="no message m:99 in namespace 'me'"):
        mem.correct("m:99", "x")
    with pytest.raises(LocalmemError, match="not a memory id: 'u:1'"):
        mem.correct("u:1", "x")
    with pytest.raises(LocalmemError, match="non-empty"):
        mem.correct("m:1", "  ")
    with open_memory(mem.path, namespace="other", embedder=HashEmbedder()) as other:
        with pytest.raises(NotFoundError, match="no message m:1 in namespace 'other'"):
            other.correct("m:1", "not yours")


def test_export_and_import_keep_corrections_and_metadata_under_printed_ids(mem, tmp_path):
    mem.correct("m:1", "I moved to Munich.")
    buf = io.StringIO()
    mem.admin.export(buf)
    records = [json.loads(line) for line in buf.getvalue().splitlines()]
    assert records[0]["version"] == 3 and records[-1]["type"] == "trailer"
    messages = {r["id"]: r for r in records if r["type"] == "message"}
    assert set(messages) == {"m:1", "m:2", "m:3", "m:4"}
    assert messages["m:4"]["replaces"] == "m:1" and json.loads(messages["m:1"]["meta"]) == {"app": "phone"}
    assert all(
        r["unit_id"].startswith("u:") and r["message_id"].startswith("m:")
        for r in records
        if r["type"] == "unit_source"
    )
    path = tmp_path / "x.jsonl"
    path.write_text(buf.getvalue())
    with open_memory(tmp_path / "copy.db", namespace="me", embedder=HashEmbedder()) as copy:
        copy.admin.restore(path)
        again = io.StringIO()
        copy.admin.export(again)
        assert again.getvalue() == buf.getvalue()
        assert copy.browse.get("m:1").replaced_by == "m:4"


def _as_older_version(export: str, version: int) -> str:
    """``export`` as localmem wrote it before printed ids (bare numbers, no corrections or
    metadata): version 2 with its trailer, version 1 without one."""
    lines, digest, records = [], hashlib.sha256(), Counter()
    for line in export.splitlines():
        rec = json.loads(line)
        if rec["type"] == "trailer":
            continue
        if rec["type"] == "header":
            rec["version"] = version
        else:
            records[rec["type"]] += 1
        for key in ("id", "episode_id", "unit_id", "message_id", "src_id", "dst_id"):
            if isinstance(rec.get(key), str):
                rec[key] = int(rec[key][2:])
        rec.pop("replaces", None)
        rec.pop("meta", None)
        lines.append(json.dumps(rec) + "\n")
        digest.update(lines[-1].encode())
    if version >= 2:
        lines.append(
            json.dumps({"type": "trailer", "records": dict(sorted(records.items())), "sha256": digest.hexdigest()})
            + "\n"
        )
    return "".join(lines)


def test_older_exports_still_import(mem, tmp_path):
    """Exports written before ids were printed name messages and units by bare numbers: version
    2 (with its trailer) imports as it is; version 1 (before the trailer) with force, which says
    what it could not check."""
    buf = io.StringIO()
    mem.admin.export(buf)
    for version in (2, 1):
        path = tmp_path / f"v{version}.jsonl"
        path.write_text(_as_older_version(buf.getvalue(), version))
        with open_memory(tmp_path / f"copy{version}.db", namespace="me", embedder=HashEmbedder()) as copy:
            if version == 1:
                with pytest.raises(InputError, match="no trailer line .an export made before localmem wrote one"):
                    copy.admin.restore(path)
            counts = copy.admin.restore(path, force=version == 1).to_dict()
            assert counts["message"] == 3 and copy.browse.get("m:2").text == "Congratulations! How is the flat?"
            assert counts.get("unchecked") == (
                None if version == 2 else "it has no trailer line (an export made before localmem wrote one)"
            )


def test_show_prints_a_message_or_a_unit(mem, use_models):
    use_models(embedder=HashEmbedder())
    gist = mem.conn.execute(
        "insert into units (ns, kind, text, created_at) values ('me', 'gist', "
        "'Priya moved for a job', 'x') returning id"
    ).fetchone()[0]
    mem.conn.execute("insert into unit_sources values (?, 1)", (gist,))
    mem.correct("m:1", "I moved to Munich.")
    mem.close()
    base = ["--db", str(mem.path), "-n", "me"]
    out = runner().invoke(cli, [*base, "show", "m:1"])
    assert out.exit_code == 0, out.output
    assert out.stdout.splitlines()[:5] == [
        "m:1 Priya, 2024-03-02 18:05, in “chat” (a message)",
        "  Priya: I moved to Berlin for the new job at the design studio.",
        "  meta: app=phone",
        "  replaced by the correction m:4",
        "  from source 1, the messages added to “chat”",
    ]
    assert f"    u:{gist}, the gist “Priya moved for a job”" in out.stdout
    unit = json.loads(runner().invoke(cli, [*base, "show", f"u:{gist}", "--json"]).stdout)
    assert unit["id"] == f"u:{gist}" and [s["id"] for s in unit["sources"]] == ["m:1"]
    for bad, message in (("m:99", "no message m:99 in namespace 'me'"), ("12", "not a memory id: '12'")):
        result = runner().invoke(cli, [*base, "show", bad])
        assert result.exit_code == 1 and message in result.stderr
    result = runner().invoke(cli, [*base, "correct", "m:4", "I moved to Hamburg.", "--json"])
    assert json.loads(result.stdout)["replaces"] == "m:4"
