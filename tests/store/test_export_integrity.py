"""An export that was cut short or edited is refused, with nothing stored: its trailer counts
the records and checksums every byte before it; records must belong to the header's
namespaces. Exports made before the trailer existed are imported with --force, and a warning."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from localmem.cli import cli
from localmem.errors import InputError
from tests.fakes import HashEmbedder
from tests.helpers import assert_one_line_error, open_memory, runner, snapshot


@pytest.fixture(scope="module")
def export(tmp_path_factory) -> list[str]:
    """The lines of an export of 300 messages in two namespaces, with vectors and parts."""
    root = tmp_path_factory.mktemp("export")
    src = root / "chat.jsonl"
    src.write_text(
        "".join(
            json.dumps(
                {
                    "conversation": f"c{i // 50}",
                    "speaker": "Ann" if i % 2 else "Bob",
                    "text": f"Message {i} is about the boats we saw. It has a second sentence of words.",
                }
            )
            + "\n"
            for i in range(300)
        ),
        encoding="utf-8",
    )
    with open_memory(root / "source.db", namespace="a", embedder=HashEmbedder()) as mem:
        mem.ingest(src)
        mem.ingest(src, namespace="b")
        out = io.StringIO()
        mem.admin.export(out)
    return out.getvalue().splitlines(keepends=True)


def _import(tmp_path: Path, lines: list[str], *args: str, db: Path | None = None):
    path = tmp_path / "export.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    target = db or tmp_path / "target.db"
    return runner().invoke(cli, ["--db", str(target), "import", str(path), *args]), target


def _messages(db: Path) -> int:
    with open_memory(db, embedder=HashEmbedder()) as mem:
        return mem.conn.execute("select count(*) from messages").fetchone()[0]


def test_the_last_line_is_a_trailer(export):
    trailer = json.loads(export[-1])
    assert trailer["type"] == "trailer" and len(trailer["sha256"]) == 64
    assert trailer["records"]["message"] == 600 and trailer["records"]["vector"] > 600


def test_a_whole_export_imports(export, tmp_path, use_models):
    use_models(embedder=HashEmbedder())
    result, db = _import(tmp_path, export)
    assert result.exit_code == 0, result.output
    assert result.stderr == f"created a new store at {db}\n" and _messages(db) == 600


@pytest.mark.parametrize("keep", [0.2, 0.6, 0.99])
def test_an_export_cut_at_a_line_boundary_is_refused(export, tmp_path, use_models, keep):
    use_models(embedder=HashEmbedder())
    result, db = _import(tmp_path, export[: int(len(export) * keep)])
    err = assert_one_line_error(result, code=2)
    assert "trailer line is missing" in err and "nothing was stored" in err
    assert not db.exists()  # nor was the store it would have gone into left behind


def test_an_edited_export_is_refused(export, tmp_path, use_models):
    use_models(embedder=HashEmbedder())
    at = next(i for i, line in enumerate(export) if '"type":"message"' in line)
    edited = export[:at] + [export[at].replace("the boats", "the planes")] + export[at + 1 :]
    err = assert_one_line_error(_import(tmp_path, edited)[0], code=2)
    assert "do not match the checksum" in err
    dropped = export[:at] + export[at + 1 :]  # a unit_source names the missing message
    err = assert_one_line_error(_import(tmp_path, dropped)[0], code=2)
    assert "cannot restore this record: its message_id" in err and "is not a message of this file" in err
    vector = max(i for i, line in enumerate(export) if '"type":"vector"' in line)
    err = assert_one_line_error(_import(tmp_path, export[:vector] + export[vector + 1 :])[0], code=2)
    assert "trailer counts" in err
    extra = export + [export[at]]
    assert "a record after the trailer" in assert_one_line_error(_import(tmp_path, extra)[0], code=2)


def test_a_renamed_namespace_cannot_merge_into_an_existing_one(export, tmp_path, use_models):
    """The header names a new namespace; the records still say 'a', which the store has."""
    use_models(embedder=HashEmbedder())
    db = tmp_path / "existing.db"
    with open_memory(db, namespace="a", embedder=HashEmbedder()) as mem:
        mem.add("Zoe", "my own message in a")
    before = snapshot(db)
    header = json.loads(export[0])
    header["namespaces"] = ["fresh"]
    renamed = [json.dumps(header) + "\n"] + export[1:]
    err = assert_one_line_error(_import(tmp_path, renamed, db=db)[0], code=2)
    assert "namespace 'a', which the header does not name (fresh)" in err
    # even forced (a checksum can be recomputed by whoever edits the file)
    err = assert_one_line_error(_import(tmp_path, renamed, "--force", db=db)[0], code=2)
    assert "which the header does not name" in err
    assert snapshot(db) == before


def test_vectors_in_a_file_whose_header_says_none_are_refused(export, tmp_path):
    header = json.loads(export[0])
    header["vectors"] = False
    path = tmp_path / "novectors.jsonl"
    path.write_text("".join([json.dumps(header) + "\n"] + export[1:]), encoding="utf-8")
    with open_memory(tmp_path / "t.db", embedder=HashEmbedder()) as mem:
        with pytest.raises(InputError, match="the header says the file has no vectors"):
            mem.admin.restore(path, force=True)
        assert mem.conn.execute("select count(*) from messages").fetchone()[0] == 0


def test_an_old_export_needs_force_and_gets_a_warning(export, tmp_path, use_models):
    use_models(embedder=HashEmbedder())
    header = json.loads(export[0])
    header["version"] = 1  # as localmem wrote it before the trailer
    old = [json.dumps(header) + "\n"] + export[1:-1]
    err = assert_one_line_error(_import(tmp_path, old)[0], code=2)
    assert "no trailer line (an export made before localmem wrote one)" in err and "--force" in err
    result, db = _import(tmp_path, old, "--force")
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith("warning: ") and "imported without knowing that it is whole" in result.stderr
    assert _messages(db) == 600


def test_a_forced_import_of_a_cut_export_says_what_it_holds(export, tmp_path):
    path = tmp_path / "cut.jsonl"
    path.write_text("".join(export[: len(export) // 2]), encoding="utf-8")
    with open_memory(tmp_path / "t.db", embedder=HashEmbedder()) as mem:
        counts = mem.admin.restore(path, force=True).to_dict()
        assert counts["unchecked"] == "its trailer line is missing"
        assert 0 < counts["message"] < 600


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        ({"embed_model_id": None}, "not which embedder made them ('embed_model_id')"),
        ({"embed_model_id": 7}, "not which embedder made them ('embed_model_id')"),
        ({"embed_dim": "384"}, "not their size ('embed_dim')"),
        ({"vectors": "yes"}, "'vectors' must be true or false"),
        ({"schema": "9"}, "'schema' must be a whole number"),
    ],
)
def test_a_header_that_cannot_be_true_is_a_clear_error(export, tmp_path, use_models, edit, said):
    """Found by the fuzz test at scale 8: "vectors": true without "embed_model_id" was an
    unexpected KeyError. Each is one line (exit 2), with nothing stored, forced or not."""
    use_models(embedder=HashEmbedder())
    header = json.loads(export[0])
    assert header["vectors"] is True
    header.update(edit)
    header = {k: v for k, v in header.items() if v is not None}
    for force in ((), ("--force",)):
        result, db = _import(tmp_path, [json.dumps(header) + "\n"] + export[1:], *force)
        err = assert_one_line_error(result, code=2)
        assert said in err and "line 1" in err
        assert _messages(db) == 0


def test_the_export_of_an_encrypted_store_says_it_is_plain_text(tmp_path, use_models, monkeypatch, store_kind):
    """An encrypted store exports plain JSONL: stderr says so, before the file is written.
    Shown on a store that says it is encrypted (the plain pass), and on a real encrypted store
    in the encrypted pass (pytest --stores=encrypted, with the cipher build)."""
    use_models(embedder=HashEmbedder())
    db = tmp_path / "m.db"
    with open_memory(db, embedder=HashEmbedder()) as mem:
        mem.add("Ann", "the door code is 4417")
    plain = runner().invoke(cli, ["--db", str(db), "export", "-o", str(tmp_path / "out.jsonl")])
    assert plain.exit_code == 0, plain.output
    assert ("is not: " in plain.stderr) == (store_kind == "encrypted")
    if store_kind != "encrypted":  # plain SQLite or PostgreSQL: as if it were encrypted
        from localmem.admin import Admin

        monkeypatch.setattr(Admin, "encrypted", property(lambda self: True))
    for out in (["-o", str(tmp_path / "out2.jsonl")], []):
        result = runner().invoke(cli, ["--db", str(db), "export", *out])
        assert result.exit_code == 0, result.output
        warning = result.stderr.splitlines()[0]
        assert warning.startswith("warning: the store is encrypted, but this export is not: ")
        assert "plain text" in warning and (out[-1] if out else "standard output") in warning
    assert "4417" in (tmp_path / "out2.jsonl").read_text()
