"""A NUL character (U+0000) in any field of an import is taken out, the same way on both engines:
every format imports what it imports without one (before, the text lost its NULs but the raw
record kept them, and PostgreSQL refused the file after embedding it: "unsupported Unicode
escape sequence"; a Discord channel name kept its NUL in the SQLite conversation name)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import HashEmbedder
from tests.helpers import open_memory

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "imports"
NUL = "\x00"
# A field only the raw record keeps, a NUL in its name and its value.
EXTRA = {f"note{NUL}": f"kept in the raw record{NUL} only"}


def _nul(text: str) -> str:
    return NUL + text + NUL if text else text


def _with_nuls(doc: Any, keys: set[str]) -> Any:
    """``doc`` with a NUL in each string (or list of strings) under one of ``keys``, and
    :data:`EXTRA` in every object that has one of them."""
    if isinstance(doc, list):
        return [_with_nuls(v, keys) for v in doc]
    if not isinstance(doc, dict):
        return doc
    out = {}
    for key, value in doc.items():
        if key in keys and isinstance(value, str):
            out[key] = _nul(value)
        elif key in keys and isinstance(value, list) and all(isinstance(v, str) for v in value):
            out[key] = [_nul(v) for v in value]
        else:
            out[key] = _with_nuls(value, keys)
    if keys & set(doc):
        out.update(EXTRA)
    return out


def _json_copy(src: Path, dst: Path, keys: set[str]) -> None:
    dst.write_text(json.dumps(_with_nuls(json.loads(src.read_text(encoding="utf-8")), keys)), encoding="utf-8")


def _jsonl(dst: Path, nuls: bool) -> Path:
    rows = [
        {"conversation": "trip", "id": "1", "speaker": "Ana", "text": "We land in Lisbon at nine."},
        {"conversation": "trip", "id": "2", "speaker": "Ben", "text": "I booked the tram tickets."},
    ]
    if nuls:
        rows = [{**{k: _nul(v) for k, v in r.items()}, **EXTRA} for r in rows]
    path = dst / "chat.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _input(fmt: str, dst: Path, nuls: bool) -> Path:
    """The input of format ``fmt`` in ``dst``: the repository's sample export, with NULs
    (``nuls``) in its text, names, titles and ids, and in a field only the raw record keeps."""
    dst.mkdir(parents=True)
    if fmt == "jsonl":
        return _jsonl(dst, nuls)
    if fmt == "whatsapp":
        src = FIXTURES / "whatsapp" / "WhatsApp Chat with Book club.txt"
        text = src.read_text(encoding="utf-8")
        if nuls:  # the speaker of each message line, and the text of those said in words (a deleted
            # message, media left out and an edit are known by their exact words, read before)
            for name in ("Priya Nair", "Tom Becker"):
                text = text.replace(f"{name}: ", f"{_nul(name)}: ")
            text = text.replace("Welcome! First", f"Wel{NUL}come! First").replace("copy, very", f"copy,{NUL} very")
        path = dst / src.name
        path.write_text(text, encoding="utf-8")
        return path
    if fmt == "slack":
        shutil.copytree(FIXTURES / "slack-export", dst / "slack-export")
        if nuls:
            for path in (dst / "slack-export").rglob("*.json"):
                if path.parent.name != "slack-export" or path.name == "users.json":
                    _json_copy(path, path, {"text", "real_name"})
        return dst / "slack-export"
    src, keys = {
        "chatgpt": (FIXTURES / "chatgpt" / "conversations.json", {"title", "parts", "name"}),
        "claude": (FIXTURES / "claude" / "conversations.json", {"name", "text"}),
        "discord": (next((FIXTURES / "discord").glob("*.json")), {"name", "content", "nickname"}),
    }[fmt]
    path = dst / src.name
    if nuls:
        _json_copy(src, path, keys)
    else:
        shutil.copy(src, path)
    return path


COLUMNS = "conversation, session, external_id, speaker, role, text, sent_at, attachments, raw, meta"


def _stored(mem) -> list[tuple]:
    return [
        tuple(row)
        for row in mem.conn.execute(
            f"SELECT {COLUMNS} FROM messages WHERE ns = ? ORDER BY conversation, seq", (mem.namespace,)
        )
    ]


@pytest.mark.parametrize("fmt", ["jsonl", "chatgpt", "claude", "discord", "slack", "whatsapp"])
def test_a_nul_in_any_field_is_taken_out_on_every_engine(fmt, tmp_path):
    clean_input, nul_input = _input(fmt, tmp_path / "clean", False), _input(fmt, tmp_path / "nul", True)
    forced = "whatsapp" if fmt == "whatsapp" else None  # detection refuses a NUL in the first 8 KB as binary
    with open_memory(tmp_path / "m.db", namespace="clean", embedder=HashEmbedder()) as mem:
        mem.ingest(clean_input, format=forced)
        clean = _stored(mem)
    with open_memory(tmp_path / "m.db", namespace="nul", embedder=HashEmbedder()) as mem:
        report = mem.ingest(nul_input, format=forced)
        assert report.added == len(clean) > 0
        assert any("NUL character(s)" in note for note in report.notes), report.notes
        stored = _stored(mem)
        assert mem.search("the", channels=["vector"])  # embedded and searchable
    for row in stored:
        for column, value in zip(COLUMNS.split(", "), row):
            assert value is None or (NUL not in str(value) and "\\u0000" not in str(value)), (column, value)
    # the same messages as the file without NULs: the same names, ids and text
    assert [row[:8] for row in stored] == [row[:8] for row in clean]
    if fmt != "whatsapp":  # a text format: its raw record is the line
        assert any("kept in the raw record only" in (row[8] or "") for row in stored)
