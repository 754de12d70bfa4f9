"""The CLI's text output is for people: every id has words beside it (who said a message, when
and where; a unit's kind and title; a source's file name), a WhatsApp message's `|`-joined
external id never shows, counts have their plural right, and no Python repr (a dict, a list,
True/False/None) is printed. `--json` keeps the ids, and is taken before the command as after.

The store walked holds a WhatsApp export, a ChatGPT export and the sample chat with episodes,
facts and entities built by a scripted model."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from localmem.cli import cli
from tests.fakes import HashEmbedder, ScriptedLLM
from tests.helpers import REPO, SAMPLE_CHAT, open_memory, runner
from tests.pipeline.test_pipeline import _responder as plausible_model

WHATSAPP = REPO / "tests" / "fixtures" / "whatsapp-media" / "WhatsApp-Chat mit Familie Krüger.txt"
CHATGPT = REPO / "tests" / "fixtures" / "imports" / "chatgpt" / "conversations.json"

ID = re.compile(r"\b[mue]:\d+\b")
JOINED_ID = re.compile(r"[^\s|]+\|[^\s|]+\|\d+")  # "2024-09-14T21:15:00|Jonas|0"
REPR = re.compile(r"\b(?:True|False|None)\b|\{'|\['|'\]|'\}|\(s\)")
_COUNTED = "message|source|conversation|unit|episode|entit(?:y|ie)|session|file|result"
WRONG_PLURAL = re.compile(
    rf"(?<![\d.,])\b1 (?:{_COUNTED})s\b|(?<![\d.,])\b(?:0|[2-9]|\d{{2,}}) (?:{_COUNTED.replace('(?:y|ie)', 'y')})\b(?!s)"
)


def bare_ids(text: str) -> list[str]:
    """The ids on a line with no words of their own: nothing with a letter between the id and
    its neighbours (the previous id or the line's start, the next id or its end)."""
    bare = []
    for line in text.splitlines():
        spans = [m.span() for m in ID.finditer(line)]
        for i, (start, end) in enumerate(spans):
            before = line[spans[i - 1][1] if i else 0 : start]
            after = line[end : spans[i + 1][0] if i + 1 < len(spans) else len(line)]
            if not re.search(r"[^\W\d_]", before) and not re.search(r"[^\W\d_]", after):
                bare.append(line)
    return bare


def check_for_people(args: list[str], text: str, tmp_path: Path) -> None:
    assert not bare_ids(text), (args, bare_ids(text))
    assert not JOINED_ID.search(text), (args, JOINED_ID.findall(text))
    assert not REPR.search(text), (args, REPR.findall(text), text)
    assert not WRONG_PLURAL.search(text), (args, WRONG_PLURAL.findall(text))
    assert str(tmp_path) not in text or args[0] in ("stats", "doctor"), (args, text)  # file names, not paths


@pytest.fixture
def store(tmp_path, use_models) -> Path:
    db = tmp_path / "memory.db"
    with open_memory(db, embedder=HashEmbedder(), llm=ScriptedLLM(responder=plausible_model)) as mem:
        mem.ingest(SAMPLE_CHAT, extract="llm")
        mem.ingest(WHATSAPP)
        mem.ingest(CHATGPT)
    use_models(
        embedder=HashEmbedder(),
        llm=ScriptedLLM(responder=lambda m: {"answer": "Kuchen", "supports": [1], "confidence": 0.9}),
    )
    return db


def _ids(db: Path) -> tuple[str, str, str]:
    """A WhatsApp message, an episode and a fact of the store."""
    with open_memory(db, embedder=HashEmbedder()) as mem:
        (whatsapp,) = mem.conn.execute("SELECT min(id) FROM messages WHERE external_id LIKE '%|%|%'").fetchall()[0]
        (episode,) = mem.conn.execute("SELECT min(id) FROM units WHERE kind = 'episode'").fetchall()[0]
        (fact,) = mem.conn.execute("SELECT min(id) FROM units WHERE kind <> 'episode'").fetchall()[0]
    return f"m:{whatsapp}", f"u:{episode}", f"u:{fact}"


def test_every_command_speaks_in_words(store, tmp_path):
    message, episode, fact = _ids(store)
    commands = [
        ["search", "Kuchen Geburtstag"],
        ["search", "Where did Priya move?", "-k", "20"],
        ["search", "Priya Lisbon", "--channels", "bm25,graph,entity"],
        ["ask", "Wer hat den Kuchen gebacken?", "--local", "--no-stream"],
        ["ask", "Where did Priya move?", "--local", "--evidence", "--no-stream"],
        ["show", message],
        ["show", episode],
        ["show", fact],
        ["stats"],
        ["stats", "--sources"],
        ["namespaces"],
        ["episodes"],
        ["facts"],
        ["entities"],
        ["profile", "Priya"],
        ["forget", "--conversation", "WhatsApp-Chat mit Familie Krüger"],
        ["forget", "--source", "1"],
        ["forget", message, episode],
        ["doctor"],
        ["correct", message, "Der Kuchen war mit Äpfeln"],
        ["add", "Lena", "Ich ziehe nach Leipzig", "--conversation", "familie"],
    ]
    for args in commands:
        result = runner().invoke(cli, ["--db", str(store), *args])
        assert result.exit_code == 0, (args, result.output, result.stderr)
        check_for_people(args, result.output, tmp_path)
    entities = runner().invoke(cli, ["--db", str(store), "entities"]).output
    assert re.search(r"^e:\d+ +Priya \(person\), in \d+ units?(; also called [^,]{2,}.*)?$", entities, re.M), entities
    shown = runner().invoke(cli, ["--db", str(store), "show", message]).output
    assert "Jonas Krüger, 2024-09-14 21:12" in shown and "“WhatsApp-Chat mit Familie Krüger.txt”" in shown
    forgot = runner().invoke(cli, ["--db", str(store), "forget", "--conversation", "sample-chat", "--yes"])
    assert forgot.exit_code == 0, forgot.output
    check_for_people(["forget"], forgot.output, tmp_path)
    assert "Priya, 2024-01-14 19:02, in “sample-chat”" in forgot.output  # described before they went


def test_citations_name_speaker_date_and_conversation(store, tmp_path):
    asked = ["ask", "Wer hat den Kuchen gebacken?", "--local", "--conversation", "WhatsApp-Chat mit Familie Krüger"]
    result = runner().invoke(cli, ["--db", str(store), *asked])
    assert result.exit_code == 0, result.output
    cited = [line for line in result.output.splitlines() if line.startswith("  [m:")]
    assert cited and all("“" in line and ", 20" in line for line in cited), result.output
    assert "Jonas Krüger, 2024-09-14" in result.output or "Oma Hilde, 2024-09-14" in result.output
    raw = runner().invoke(cli, ["--db", str(store), "--json", *asked])
    assert "|" in json.loads(raw.output)["citations"][0]["external_id"]  # --json keeps the ids


@pytest.mark.parametrize(
    "args",
    [["stats"], ["search", "Kuchen"], ["namespaces"], ["episodes"], ["show", "m:1"], ["doctor"], ["models"]],
)
def test_json_before_the_command_as_after(store, args):
    before = runner().invoke(cli, ["--json", "--db", str(store), *args])
    after = runner().invoke(cli, ["--db", str(store), *args, "--json"])
    assert before.exit_code == 0, (before.output, before.stderr)
    assert json.loads(before.output).__class__ is json.loads(after.output).__class__
    if args[0] not in ("doctor",):  # doctor times its integrity check
        assert json.loads(before.output) == json.loads(after.output)


def test_json_before_the_command_also_gives_json_errors(tmp_path):
    result = runner().invoke(cli, ["--json", "--db", str(tmp_path / "none.db"), "stats"])
    assert result.exit_code != 0
    assert json.loads(result.stderr)["code"]


def test_one_of_each_is_counted_in_the_singular(tmp_path, use_models):
    use_models(embedder=HashEmbedder())
    db = tmp_path / "one.db"
    added = runner().invoke(cli, ["--db", str(db), "add", "Alice", "I moved to Berlin."])
    assert added.exit_code == 0, added.output
    stats = runner().invoke(cli, ["--db", str(db), "stats"]).output
    assert "1 source, 1 message in 1 conversation (1 session)" in stats, stats
    assert not REPR.search(stats) and "{" not in stats
    export = tmp_path / "one.jsonl"
    assert runner().invoke(cli, ["--db", str(db), "export", "-o", str(export)]).exit_code == 0
    imported = runner().invoke(cli, ["--db", str(tmp_path / "copy.db"), "import", str(export)])
    assert imported.output.startswith("imported 1 source, 1 message"), imported.output
    assert not WRONG_PLURAL.search(imported.output)


def test_the_checker_catches_what_the_issue_saw(tmp_path):
    """The lines issue 53 quotes fail the checks above (so a pass means something)."""
    for line in (
        "  [m:7] Jonas/2024-09-14T21:15:00|Jonas|0 Jonas, 2024-09-14 21:15: text",
        "  messages: m:7 m:8 m:9",
        "units: {'episode': 3}",
        "encrypted: False",
        "1 sources, 1 messages",
        "imported 1 source, 3 message",
    ):
        with pytest.raises(AssertionError):
            check_for_people(["x"], line, tmp_path)
