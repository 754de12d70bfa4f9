"""A printed id (m:12, u:45, e:7, a source's number) names one memory for the life of the store:
after the newest message (unit, entity, source) is forgotten, the next one gets a new id, so a
citation a user kept never silently points at another memory. Also across a close and reopen,
a vacuum, an export restored, and a store made before the fix."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from localmem.errors import NotFoundError
from localmem.store import db
from tests.fakes import HashEmbedder, ScriptedLLM
from tests.helpers import old_store, open_memory, write_jsonl
from tests.trials import forget_bytes as trial


def _chat(tmp_path: Path, name: str, rows: list[tuple[str, str]]) -> Path:
    return write_jsonl(
        tmp_path / name,
        [
            {"conversation": name, "session": "s", "id": f"m{i}", "speaker": sp, "text": tx}
            for i, (sp, tx) in enumerate(rows)
        ],
    )


def _ids(mem, table: str) -> set[int]:
    return {row[0] for row in mem.conn.execute(f"select id from {table}")}


def test_forgetting_the_newest_message_does_not_free_its_id(tmp_path):
    with open_memory(tmp_path / "m.db", embedder=HashEmbedder()) as mem:
        mem.add("Ann", "one")
        newest = mem.add("Ann", "two")
        assert mem.forget(ids=[newest.ref]).messages == [newest.ref]
        after = mem.add("Ann", "three")
        assert after.id > newest.id  # it was newest.id before: max(id) + 1
        with pytest.raises(NotFoundError):  # a kept citation of the forgotten message finds nothing
            mem.browse.show(newest.ref)


def test_a_forgotten_id_stays_taken_after_reopening_and_vacuum(tmp_path):
    path = tmp_path / "m.db"
    with open_memory(path, embedder=HashEmbedder()) as mem:
        mem.add("Ann", "one")
        gone = [mem.add("Ann", "two"), mem.add("Ann", "three")]
        mem.forget(ids=[m.ref for m in gone])
    with open_memory(path, embedder=HashEmbedder()) as mem:
        reopened = mem.add("Ann", "after reopening")
        assert reopened.id == gone[-1].id + 1
        mem.forget(ids=[reopened.ref])
        mem.admin.vacuum()
        vacuumed = mem.add("Ann", "after vacuum")
        assert vacuumed.id == reopened.id + 1


def test_units_entities_and_sources_of_a_forgotten_source_keep_their_ids(tmp_path):
    llm = ScriptedLLM(responder=trial.responder)
    with open_memory(tmp_path / "m.db", embedder=HashEmbedder(), llm=llm) as mem:
        mem.ingest(_chat(tmp_path, "a.jsonl", [("Ann", "I adopted a cat"), ("Bob", "lovely")]), extract="llm")
        before = {t: _ids(mem, t) for t in ("sources", "messages", "units", "entities")}
        mem.ingest(_chat(tmp_path, "b.jsonl", [("Cyd", "I run on Sundays"), ("Bob", "nice")]), extract="llm")
        newest = {t: _ids(mem, t) - before[t] for t in before}
        assert all(newest.values()), newest  # the test can fail: b added a row to every table
        (source,) = newest["sources"]
        done = mem.forget(source_id=source)
        assert len(done.units) == len(newest["units"]) and done.entities == [f"e:{i}" for i in newest["entities"]]
        mem.ingest(_chat(tmp_path, "c.jsonl", [("Dee", "I swim on Mondays"), ("Bob", "good")]), extract="llm")
        for table, gone in newest.items():
            added = _ids(mem, table) - before[table]
            assert added and min(added) > max(gone), (table, gone, added)


def test_a_restored_export_keeps_the_ids_its_store_had_given_out(tmp_path):
    with open_memory(tmp_path / "a.db", embedder=HashEmbedder()) as mem:
        kept = mem.add("Ann", "kept")
        gone = mem.add("Ann", "forgotten before the export")
        mem.forget(ids=[gone.ref])
        out = io.StringIO()
        mem.admin.export(out)
    path = tmp_path / "export.jsonl"
    path.write_text(out.getvalue(), encoding="utf-8")
    with open_memory(tmp_path / "b.db", embedder=HashEmbedder()) as copy:
        copy.admin.restore(path)
        assert [row[0] for row in copy.conn.execute("select id from messages")] == [kept.id]  # ids kept
        assert copy.add("Ann", "new in the copy").id > gone.id


def test_a_restore_into_a_store_that_forgot_everything_takes_new_ids(tmp_path):
    with open_memory(tmp_path / "a.db", embedder=HashEmbedder()) as mem:
        mem.add("Ann", "exported")
        out = io.StringIO()
        mem.admin.export(out)
    path = tmp_path / "export.jsonl"
    path.write_text(out.getvalue(), encoding="utf-8")
    with open_memory(tmp_path / "b.db", embedder=HashEmbedder()) as other:
        old = other.add("Ann", "this store's own, then forgotten")
        other.forget(namespace="default")
        other.admin.restore(path)  # the store is empty, but m:1 was given out here
        assert [row[0] for row in other.conn.execute("select id from messages")] == [old.id + 1]


def test_a_store_made_before_the_fix_keeps_every_id_and_stops_reusing(tmp_path):
    path = tmp_path / "old.db"
    conn = old_store(path, 10)
    with conn:
        conn.execute(
            "insert into sources (id, ns, kind, uri, sha256, status, created_at) "
            "values (3, 'default', 'api', 'add:c', 'api:c', 'loaded', 'x')"
        )
        for mid in (4, 9):
            conn.execute(
                "insert into messages (id, ns, source_id, conversation, seq, external_id, speaker, text) "
                "values (?, 'default', 3, 'c', ?, ?, 'Ann', 'old')",
                (mid, mid, f"x{mid}"),
            )
    conn.close()
    with open_memory(path, embedder=HashEmbedder()) as mem:
        assert mem.conn.schema_version() == db.latest_version()
        assert _ids(mem, "messages") == {4, 9}
        mem.forget(ids=["m:9"])
        assert mem.add("Ann", "new", conversation="c").id == 10
