"""Ingesting a folder, a .zip and standard input, through the API and the CLI: every file it
recognises is stored, the others are reported with why, and re-running adds nothing."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from localmem.cli import cli
from localmem.config import Config
from localmem.errors import InputError, UnknownFormatError
from tests.fakes import HashEmbedder
from tests.helpers import (
    assert_one_line_error,
    count,
    open_memory,
    runner,
    snapshot,
    store_connect,
)
from tests.import_fixtures import FIXTURES, prepare


@pytest.fixture
def exports(tmp_path: Path) -> Path:
    """Every fixture, as the apps deliver them, in one folder (as a user's Downloads)."""
    return prepare(tmp_path / "downloads")


@pytest.fixture
def utc_mem(tmp_path: Path):
    with open_memory(
        tmp_path / "m.db", namespace="me", config=Config(timezone="UTC"), embedder=HashEmbedder()
    ) as memory:
        yield memory


def test_a_folder_of_everything_is_ingested_and_the_rest_reported(utc_mem, exports):
    report = utc_mem.ingest(exports)
    assert report.format == "folder" and report.added == 64
    by_format: dict[str, int] = {}
    for s in report.sources:
        by_format[s.format] = by_format.get(s.format, 0) + s.added
    assert by_format == {"chatgpt": 14, "claude": 8, "whatsapp": 16, "slack": 12, "discord": 6, "notes": 8}
    assert len(report.sources) == 10  # each file its own source; the Slack export one
    not_read = {item["path"]: item["why"] for item in report.not_read}
    assert not_read == {
        "chatgpt/chat.html": "ChatGPT's web view of conversations.json (read from there)",
        "chatgpt/message_feedback.json": "ChatGPT's feedback on answers, no messages",
        "chatgpt/user.json": "account details, no messages",
        "claude/projects.json": "Claude projects, no messages",
        "claude/users.json": "account details, no messages",
        "notes/attachments/garden-sketch.png": "media (.png)",
        "notes/.obsidian": "a hidden folder (not read)",
    }
    assert not any(item["failed"] for item in report.not_read)
    assert any("ambiguous" in note for note in report.notes)  # the iOS chat's dates
    stats = utc_mem.stats().to_dict()
    assert stats["messages"] == 64


def test_a_folder_is_idempotent_and_an_edited_file_adds_only_what_changed(utc_mem, exports):
    first = utc_mem.ingest(exports)
    again = utc_mem.ingest(exports)
    assert again.added == 0 and all(s.already_loaded for s in again.sources)
    assert again.namespaces[0].already_loaded
    chat = exports / "whatsapp" / "WhatsApp Chat with Book club.txt"
    with chat.open("a", encoding="utf-8") as fh:
        fh.write("03/03/2024, 10:12 - Priya Nair: Next month: Piranesi\n")
    edited = utc_mem.ingest(exports)
    assert edited.added == 1 and edited.conflicts == 0
    (changed,) = [s for s in edited.sources if not s.already_loaded]
    assert changed.uri.endswith("Book club.txt") and (changed.added, changed.skipped) == (1, 8)
    assert utc_mem.stats().messages == first.added + 1
    # a note edited in place keeps its id: the stored version is kept and the change counted
    garden = exports / "notes" / "projects" / "garden.md"
    garden.write_text(garden.read_text().replace("200 litres", "250 litres"))
    later = utc_mem.ingest(exports)
    assert (later.added, later.conflicts) == (0, 1)


def test_a_zip_of_an_export_is_read_like_its_folder(utc_mem, tmp_path):
    archive = tmp_path / "chatgpt-export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted((FIXTURES / "chatgpt").iterdir()):
            zf.write(path, path.name)
        zf.writestr("__MACOSX/._conversations.json", b"\x00\x05\x16\x07")
    report = utc_mem.ingest(archive)
    assert report.format == "zip" and report.added == 14
    assert report.sources[0].uri == f"{archive.resolve()}!/conversations.json"
    assert sorted(i["path"] for i in report.not_read) == ["__MACOSX", "chat.html", "message_feedback.json", "user.json"]
    assert utc_mem.ingest(archive).added == 0


def test_a_zip_inside_a_folder_is_read(utc_mem, exports):
    report = utc_mem.ingest(exports / "WhatsApp Chat - Sam Okafor.zip")
    assert report.added == 8
    folder = exports.parent / "only-zip"
    folder.mkdir()
    shutil.copy(exports / "slack-export.zip", folder)
    report = utc_mem.ingest(folder)
    assert [s.format for s in report.sources] == ["slack"] and report.added == 12


def test_a_broken_file_in_a_folder_is_reported_and_the_rest_stored(utc_mem, tmp_path):
    folder = tmp_path / "mixed"
    folder.mkdir()
    shutil.copy(FIXTURES / "whatsapp" / "WhatsApp Chat with Book club.txt", folder)
    (folder / "broken.json").write_text('[{"role": "user", "content": "hi"}, {"role": "assis')
    (folder / ".hidden.md").write_text("not read")
    report = utc_mem.ingest(folder)
    assert report.added == 8
    assert report.not_read == [
        {"path": ".hidden.md", "why": "a hidden file (not read)", "failed": False},
        {
            "path": "broken.json",
            "failed": True,
            "why": "line 1 col 46: invalid JSON: Unterminated string starting at (the file looks truncated)",
        },
    ]


def test_conversation_names_one_input_only(utc_mem, exports):
    with pytest.raises(InputError, match="--conversation names one conversation, but this holds"):
        utc_mem.ingest(exports, conversation="x")
    report = utc_mem.ingest(exports / "WhatsApp Chat - Sam Okafor.zip", conversation="Sam")
    assert report.added == 8
    assert count(utc_mem.conn, "SELECT count(*) FROM messages WHERE conversation = 'Sam'") == 8


def test_a_folder_with_nothing_recognisable_stores_nothing(utc_mem, tmp_path):
    folder = tmp_path / "photos"
    folder.mkdir()
    (folder / "a.jpg").write_bytes(b"\xff\xd8\xff")
    (folder / "page.html").write_text("<html></html>")
    (folder / "data.json").write_text('{"a": 1}')
    before = snapshot(utc_mem.path)
    with pytest.raises(InputError) as info:
        utc_mem.ingest(folder)
    message = str(info.value)
    assert (
        "nothing to ingest: no file was recognised (a.jpg: media (.jpg); data.json: JSON of an unknown shape" in message
        and "page.html: a web page (.html)" in message
    )
    assert snapshot(utc_mem.path) == before


def test_forced_format_applies_to_every_file_of_a_folder(utc_mem, tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "a.txt").write_text("Groceries: milk\nTodo: call Sam\n")  # would read as a transcript
    (folder / "b.txt").write_text("Plain thought.\n")
    assert {s.format for s in utc_mem.ingest(folder, format="notes").sources} == {"notes"}


# -- the CLI -----------------------------------------------------------------------------------


def run(db: Path, *args: str, **kwargs):
    return runner().invoke(cli, ["--db", str(db), *args], **kwargs)


@pytest.fixture
def cli_env(use_models, monkeypatch):
    use_models(embedder=HashEmbedder())
    monkeypatch.setenv("LOCALMEM_TIMEZONE", "UTC")


def test_cli_folder_output_lists_files_notes_and_what_was_not_read(cli_env, exports, tmp_path):
    db = tmp_path / "cli.db"
    result = run(db, "ingest", str(exports))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "default: 64 added, 0 already stored" in out
    assert "  slack-export.zip/slack-export (slack): 12 added of 12" in out
    assert "  WhatsApp Chat - Sam Okafor.zip/_chat.txt (whatsapp): 8 added of 8" in out
    assert (
        "note: WhatsApp Chat - Sam Okafor.zip/_chat.txt: WhatsApp dates are ambiguous (no number "
        "above 12): read month-first"
    ) in out
    assert "not read: 7 files" in out and "  chatgpt/chat.html: ChatGPT's web view" in out
    assert out.rstrip().splitlines()[-2].startswith("folder, ")
    again = run(db, "ingest", str(exports))
    assert "default: already ingested (64 messages), nothing to do" in again.stdout
    assert "  10 files already ingested" in again.stdout


def test_cli_json_report_of_a_folder(cli_env, exports, tmp_path):
    result = run(tmp_path / "cli.db", "ingest", str(exports / "claude"), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["added"] == 8 and report["format"] == "folder"
    assert [s["format"] for s in report["sources"]] == ["claude"]
    assert {i["path"] for i in report["not_read"]} == {"projects.json", "users.json"}
    assert report["notes"][0].startswith("Claude: 2 conversations")


def test_cli_stdin_with_and_without_format(cli_env, tmp_path):
    db = tmp_path / "cli.db"
    chat = (FIXTURES / "whatsapp" / "WhatsApp Chat with Book club.txt").read_bytes()
    result = run(db, "ingest", "-", input=chat)
    assert result.exit_code == 0, result.output
    assert "default: 8 added" in result.stdout and "whatsapp," in result.stdout
    result = run(
        db, "ingest", "-", "--format", "notes", "--conversation", "scratch", input=b"Groceries: milk\nTodo: call Sam\n"
    )
    assert result.exit_code == 0, result.output
    assert count_rows(db, "SELECT count(*) FROM messages WHERE conversation = 'scratch'") == 1
    assert run(db, "ingest", "-", input=chat).stdout.startswith("default: already ingested (8 messages)")


def test_cli_unknown_shape_is_one_line_with_what_was_tried(cli_env, tmp_path):
    db = tmp_path / "cli.db"
    run(db, "ingest", "-", input=b"Ann: seed\n")
    before = snapshot(db)
    path = tmp_path / "export.json"
    path.write_text(json.dumps({"version": 3, "items": [{"body": "x"}]}))
    err = assert_one_line_error(run(db, "ingest", str(path)), code=UnknownFormatError.exit_code)
    assert "JSON of an unknown shape" in err and "chatgpt: no 'mapping'" in err and "nothing was stored" in err
    err = assert_one_line_error(run(db, "ingest", "-"), code=2)
    assert "stdin: the file is empty" in err
    assert run(db, "ingest", "--date-order", "sideways", "-", input=b"x").exit_code == 2  # click's usage error
    assert snapshot(db) == before


def test_cli_warns_about_a_broken_file_on_stderr(cli_env, tmp_path):
    folder = tmp_path / "mixed"
    folder.mkdir()
    shutil.copy(FIXTURES / "whatsapp" / "WhatsApp Chat with Book club.txt", folder)
    (folder / "broken.json").write_text("[{")
    result = run(tmp_path / "cli.db", "ingest", str(folder))
    assert result.exit_code == 0
    assert "warning: could not read broken.json: line 1 col 3: invalid JSON" in result.stderr
    assert "default: 8 added" in result.stdout


def count_rows(db: Path, sql: str) -> int:
    conn = store_connect(db)
    try:
        return count(conn, sql)
    finally:
        conn.close()


def test_an_unknown_time_zone_is_a_config_error(tmp_path):
    from localmem.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown time zone 'Mars/Olympus'"):
        Config.load({"timezone": "Mars/Olympus"}, env={}, config_file=tmp_path / "none.toml")
    assert (
        Config.load({"timezone": "Europe/Berlin"}, env={}, config_file=tmp_path / "none.toml").timezone
        == "Europe/Berlin"
    )
    with open_memory(tmp_path / "m.db", config=Config(timezone="Nowhere/Here"), embedder=HashEmbedder()) as mem:
        with pytest.raises(ConfigError, match="setting timezone"):
            mem.ingest(FIXTURES / "chatgpt" / "conversations.json")
