"""Bad data in an input is refused (one error naming the place in the file, nothing stored) or
stored and reported; never silently changed.

Before: a ChatGPT export whose ``parts`` had the wrong types stored an empty message, dropped a
node that was not an object and reported 0 skipped; a NUL inside a JSONL message was stored; a
Claude message that was its own parent was accepted; ``import`` took a 200,000-character message
over max_message_chars.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from localmem.config import Config
from localmem.errors import InputError
from tests.fakes import HashEmbedder
from tests.helpers import open_memory, snapshot, write_jsonl


def chatgpt(mapping: dict, current: str | None = "b") -> list[dict]:
    return [{"title": "Chat", "create_time": 1700000000, "current_node": current, "mapping": mapping}]


def node(parent, text_parts, children=(), role="user"):
    msg = {"id": f"id-{parent}", "author": {"role": role}, "content": {"content_type": "text", "parts": text_parts}}
    return {"message": msg, "parent": parent, "children": list(children)}


def ingest_file(tmp_path: Path, name: str, doc, **config):
    path = tmp_path / name
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc, encoding="utf-8")
    with open_memory(tmp_path / "m.db", "t", config=Config(**config), embedder=HashEmbedder()) as mem:
        return mem.ingest(path), [r[0] for r in mem.conn.execute("select text from messages")]


@pytest.mark.parametrize(
    ("mapping", "said"),
    [
        (
            {"root": {"message": None, "parent": None, "children": ["b"]}, "b": node("root", [5])},
            "message b: content.parts[0] must be text or an object, got int",
        ),
        (
            {"root": {"message": None, "parent": None, "children": ["b"]}, "b": node("root", "hello")},
            "message b: content.parts must be a list, got str",
        ),
        (
            {"root": {"message": None, "parent": None, "children": ["b"]}, "b": node("root", ["hi"]), "x": 7},
            "mapping.x must be an object (a node), got int",
        ),
        (
            {
                "root": {"message": None, "parent": None, "children": ["b"]},
                "b": node("root", ["hi"]),
                "p": node("q", ["off the branch"]),
                "q": node("p", ["and looping"]),
            },
            "the message tree loops at node",
        ),
    ],
    ids=["part-a-number", "parts-a-string", "node-not-an-object", "loop-off-branch"],
)
def test_a_chatgpt_export_with_wrong_types_or_a_loop_is_refused_naming_the_place(tmp_path, mapping, said):
    with pytest.raises(InputError) as caught:
        ingest_file(tmp_path, "conversations.json", chatgpt(mapping))
    assert said in str(caught.value) and "conversation 1 (Chat)" in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("leaf", [None, "m2"], ids=["no-current-leaf", "with-current-leaf"])
def test_a_claude_message_that_is_its_own_parent_is_refused(tmp_path, leaf):
    conv = {
        "uuid": "c1",
        "name": "Chat",
        "created_at": "2024-01-01T10:00:00Z",
        "chat_messages": [
            {"uuid": "m1", "sender": "human", "text": "hi", "parent_message_uuid": "m1"},
            {"uuid": "m2", "sender": "assistant", "text": "hello", "parent_message_uuid": "m1"},
        ],
    }
    if leaf:
        conv["current_leaf_message_uuid"] = leaf
    with pytest.raises(InputError, match="parent links loop at message m1"):
        ingest_file(tmp_path, "conversations.json", [conv])


def test_nul_characters_in_a_jsonl_message_are_removed_and_counted(tmp_path):
    rows = [
        {"conversation": "c", "id": "1", "speaker": "Ana", "text": "nul\u0000inside\u0000"},
        {"conversation": "c", "id": "2", "speaker": "Ben", "text": "clean"},
    ]
    report, texts = ingest_file(tmp_path, "chat.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    assert sorted(texts) == ["clean", "nulinside"]
    assert any(note.startswith("2 NUL character(s)") and "message '1' of 'c'" in note for note in report.notes), (
        report.notes
    )


def export_of(tmp_path: Path, text: str) -> Path:
    with open_memory(tmp_path / "src.db", "t", config=Config(max_message_chars=300_000), embedder=HashEmbedder()) as m:
        m.ingest(write_jsonl(tmp_path / "in.jsonl", [{"conversation": "c", "id": "1", "speaker": "A", "text": text}]))
        buf = io.StringIO()
        m.admin.export(buf)
    path = tmp_path / "export.jsonl"
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path


def test_import_enforces_max_message_chars_as_ingest_does(tmp_path):
    path = export_of(tmp_path, "x" * 200_000)
    with open_memory(tmp_path / "m.db", "t", embedder=HashEmbedder()) as mem:
        before = snapshot(mem.path)
        with pytest.raises(InputError, match="200,000 characters, over the limit of 100,000"):
            mem.admin.restore(path)
        assert snapshot(mem.path) == before
    with open_memory(tmp_path / "big.db", "t", config=Config(max_message_chars=250_000), embedder=HashEmbedder()) as m:
        assert m.admin.restore(path).counts["message"] == 1


def test_import_refuses_a_message_field_of_the_wrong_type_naming_line_and_field(tmp_path):
    path = export_of(tmp_path, "hello")
    lines = path.read_text(encoding="utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if json.loads(line).get("type") == "message")
    rec = json.loads(lines[at])
    rec["text"] = 12345
    lines[at] = json.dumps(rec)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with open_memory(tmp_path / "m.db", "t", embedder=HashEmbedder()) as mem:
        with pytest.raises(InputError, match=f"line {at + 1}: message field 'text' must be text, got int 12345"):
            mem.admin.restore(path, force=True)
        assert mem.conn.execute("select count(*) from messages").fetchone()[0] == 0
