"""The store knows its owner (issue 51): who "I" is, per namespace, suggested at import where the
export tells, set and confirmed by the owner, kept through export and import, forgotten with its
namespace; on every store (plain, encrypted, PostgreSQL: pytest --stores)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localmem.cli import cli
from localmem.errors import LocalmemError
from tests.fakes import HashEmbedder
from tests.helpers import open_memory, runner, write_jsonl

EXPORTS = Path(__file__).resolve().parents[2] / "evals" / "timeq" / "exports"


def _whatsapp(path: Path, other: str, lines: list[tuple[str, str]]) -> Path:
    text = "".join(f"0{i + 1}/03/2024, 10:0{i} - {who}: {said}\n" for i, (who, said) in enumerate(lines))
    file = path / f"WhatsApp Chat with {other}.txt"
    file.write_text(text, encoding="utf-8")
    return file


def test_a_whatsapp_chat_named_after_the_other_party_suggests_the_exporter(tmp_path: Path):
    with open_memory(tmp_path / "m.db", namespace="daniel", embedder=HashEmbedder()) as mem:
        report = mem.ingest(EXPORTS / "t2")
        found = mem.owner()
        assert found.names == ["Daniel Ruiz"] and found.origin == "suggested"
        assert found.user_messages == 10  # the ChatGPT export's user: the owner by role
        assert any("'Daniel Ruiz' is taken to be you" in a for a in report.advice)
        assert mem.stats().owner == found.to_dict()


def test_the_most_frequent_sender_of_a_group_chat_is_suggested_and_a_tie_suggests_nobody(tmp_path: Path):
    group = _whatsapp(
        tmp_path, "Trip", [("Ana", "Who books the hut?"), ("Ana", "I can do it"), ("Bo", "ok"), ("Ana", "done")]
    )
    with open_memory(tmp_path / "g.db", embedder=HashEmbedder()) as mem:
        mem.ingest(group)
        assert mem.owner().names == ["Ana"]
    tie = tmp_path / "tie"
    tie.mkdir()
    with open_memory(tmp_path / "t.db", embedder=HashEmbedder()) as mem:
        mem.ingest(_whatsapp(tie, "Club", [("Ana", "hi"), ("Bo", "hello")]))
        assert mem.owner().names == [] and mem.owner().origin is None


def test_a_name_the_owner_set_is_never_replaced_by_a_suggestion(tmp_path: Path):
    with open_memory(tmp_path / "m.db", embedder=HashEmbedder()) as mem:
        mem.set_owner(["Dani", "Daniel Ruiz", "dani"])  # several names, one person; repeats once
        assert mem.owner().names == ["Dani", "Daniel Ruiz"] and mem.owner().origin == "set"
        mem.ingest(_whatsapp(tmp_path, "Bea", [("Bea", "hola"), ("Xavi", "hola Bea")]))
        assert mem.owner().names == ["Dani", "Daniel Ruiz"]  # not Xavi
        assert mem.set_owner("@druiz", add=True).names == ["@druiz", "Dani", "Daniel Ruiz"]
        assert mem.set_owner("Daniel").names == ["Daniel"]
        assert mem.clear_owner().names == []


def test_a_suggestion_is_confirmed(tmp_path: Path):
    with open_memory(tmp_path / "m.db", embedder=HashEmbedder()) as mem:
        with pytest.raises(LocalmemError, match="no suggested owner"):
            mem.confirm_owner()
        mem.ingest(_whatsapp(tmp_path, "Bea", [("Bea", "hola"), ("Xavi", "hola Bea")]))
        assert mem.owner().origin == "suggested"
        assert mem.confirm_owner().origin == "set"


@pytest.mark.parametrize("bad", [[""], ["   "], [], ["x" * 201]])
def test_a_bad_name_is_refused_and_loses_nothing(tmp_path: Path, bad):
    with open_memory(tmp_path / "m.db", embedder=HashEmbedder()) as mem:
        mem.set_owner("Dani")
        with pytest.raises(LocalmemError):
            mem.set_owner(bad)
        assert mem.owner().names == ["Dani"]


def test_the_owner_survives_export_and_import(tmp_path: Path):
    out = tmp_path / "export.jsonl"
    with open_memory(tmp_path / "a.db", namespace="me", embedder=HashEmbedder()) as mem:
        mem.ingest(EXPORTS / "t2")
        mem.set_owner(["Daniel Ruiz", "Dani"])
        with out.open("w", encoding="utf-8") as fh:
            mem.admin.export(fh)
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert sorted(r["name"] for r in records if r["type"] == "owner") == ["Dani", "Daniel Ruiz"]
    with open_memory(tmp_path / "b.db", namespace="me", embedder=HashEmbedder()) as mem:
        mem.admin.restore(out)
        assert mem.owner().names == ["Dani", "Daniel Ruiz"] and mem.owner().origin == "set"


def test_an_owner_record_for_a_namespace_the_header_does_not_name_is_refused(tmp_path: Path):
    out = tmp_path / "export.jsonl"
    with open_memory(tmp_path / "a.db", namespace="me", embedder=HashEmbedder()) as mem:
        mem.add("Dani", "hola")
        mem.set_owner("Dani")
        with out.open("w", encoding="utf-8") as fh:
            mem.admin.export(fh)
    text = out.read_text(encoding="utf-8").replace('"ns":"me","name":"Dani"', '"ns":"other","name":"Dani"')
    edited = tmp_path / "edited.jsonl"
    edited.write_text(text, encoding="utf-8")
    with open_memory(tmp_path / "b.db", namespace="me", embedder=HashEmbedder()) as mem:
        with pytest.raises(LocalmemError, match="does not name"):
            mem.admin.restore(edited)
        assert mem.owner().names == []


def test_forgetting_a_namespace_forgets_its_owner(tmp_path: Path):
    with open_memory(tmp_path / "m.db", namespace="me", embedder=HashEmbedder()) as mem:
        mem.add("Dani", "hola")
        mem.set_owner("Dani")
        mem.forget(namespace="me")
        assert mem.owner().names == []
        assert mem.conn.execute("SELECT count(*) FROM owner_names").fetchall()[0][0] == 0


def test_the_cli_shows_sets_and_confirms_the_owner(tmp_path: Path, use_models):
    use_models(embedder=HashEmbedder())
    db = str(tmp_path / "m.db")
    chat = write_jsonl(tmp_path / "c.jsonl", [{"conversation": "c", "speaker": "Ann", "text": "hi"}])
    assert runner().invoke(cli, ["--db", db, "ingest", str(chat)]).exit_code == 0
    shown = runner().invoke(cli, ["--db", db, "owner"])
    assert shown.exit_code == 0 and "the owner is not known" in shown.output, shown.output
    done = runner().invoke(cli, ["--db", db, "owner", "set", "Ann", "Annie", "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output) == {
        "namespace": "default",
        "names": ["Ann", "Annie"],
        "origin": "set",
        "user_messages": 0,
    }
    stats = runner().invoke(cli, ["--db", db, "stats"])
    assert "owner: Ann, Annie" in stats.output
    bad = runner().invoke(cli, ["--db", db, "owner", "set", " "])
    assert bad.exit_code != 0 and "non-empty" in bad.output + bad.stderr
    assert "Traceback" not in bad.output + bad.stderr


def test_a_namespace_role_cannot_read_or_set_another_namespaces_owner(pg_url):
    """On PostgreSQL a role bound to one namespace sees and sets only its own owner (row-level
    security on owner_names), tried with the library and with raw SQL."""
    pytest.importorskip("psycopg", reason="pip install 'localmem[postgres]'")
    from localmem import Memory
    from localmem.store import pgroles
    from tests.store.test_postgres import _as_role

    with Memory(pg_url, namespace="alice", embedder=HashEmbedder()) as admin:
        admin.add("Alice", "hello")
        admin.set_owner("Alice")
        pgroles.grant_namespace(admin.conn, "lm_test_owner_bob", ["bob"])
    with Memory(_as_role(pg_url, "lm_test_owner_bob"), namespace="bob", embedder=HashEmbedder()) as bob:
        bob.set_owner("Bob")
        raw = bob.conn.raw
        assert [r[0] for r in raw.execute("SELECT name FROM owner_names")] == ["Bob"]
        assert raw.execute("UPDATE owner_names SET name = 'Mallory' WHERE ns = 'alice'").rowcount == 0
    with Memory(_as_role(pg_url, "lm_test_owner_bob"), namespace="alice", embedder=HashEmbedder()) as intruder:
        assert intruder.owner().names == []
        with pytest.raises(LocalmemError):
            intruder.set_owner("Mallory")
    with Memory(pg_url, namespace="alice", embedder=HashEmbedder()) as admin:
        assert admin.owner().names == ["Alice"]


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "imports"


@pytest.mark.parametrize(
    "export, names",
    [
        ("whatsapp", ["Alex Rivera"]),  # a 1:1 chat named after Sam Okafor, and a group chat
        ("whatsapp/WhatsApp Chat with Book club.txt", ["Tom Becker"]),  # a group: its most frequent sender
        ("slack-export", ["Priya Nair"]),  # the sender in the most channels
        ("discord", ["Lena"]),
        ("notes", []),  # the owner's notes are theirs by role; these name other authors
        ("chatgpt", []),  # the owner is the user, by role
    ],
)
def test_each_importer_suggests_the_owner_where_its_export_tells(tmp_path: Path, export, names):
    with open_memory(tmp_path / "m.db", embedder=HashEmbedder()) as mem:
        mem.ingest(FIXTURES / export)
        assert mem.owner().names == names


def test_a_note_without_an_author_is_the_owners(tmp_path: Path):
    (tmp_path / "journal.md").write_text("Moved to Leeds today.\n", encoding="utf-8")
    with open_memory(tmp_path / "m.db", embedder=HashEmbedder()) as mem:
        mem.ingest(tmp_path / "journal.md", format="notes")
        assert mem.owner().names == [] and mem.owner().user_messages == 1  # the owner's, by role
        assert mem.owner().known
