"""The time-and-owner eval set (evals/timeq): it checks out, its export files import as a user's
would, and the eval harness ingests a WhatsApp turn of it under its sender's name."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from localmem_bench.retrieval import _haystack_jsonl
from tests.fakes import HashEmbedder
from tests.helpers import open_memory

TIMEQ = Path(__file__).resolve().parents[2] / "evals" / "timeq"


def test_the_set_checks_out_and_is_built_from_its_sources():
    done = subprocess.run([sys.executable, str(TIMEQ / "check.py")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "64 questions, 4 histories" in done.stdout


def test_the_exports_of_a_mixed_history_import_as_a_users_would(tmp_path: Path):
    with open_memory(tmp_path / "t2.db", namespace="daniel", embedder=HashEmbedder()) as mem:
        report = mem.ingest(TIMEQ / "exports" / "t2")
        formats = {s.name: s.format for s in report.sources}
        assert formats == {"WhatsApp Chat with Carmen Ruiz.txt": "whatsapp", "conversations.json": "chatgpt"}
        speakers = {row[0] for row in mem.conn.execute("SELECT DISTINCT speaker FROM messages")}
        assert speakers == {"Daniel Ruiz", "Carmen Ruiz", "user", "assistant"}
        # One stored message per WhatsApp line and per ChatGPT turn of the sources.
        items = json.loads((TIMEQ / "dev.json").read_text(encoding="utf-8"))
        t2 = next(i for i in items if i["question_id"].startswith("timeq-t2-"))
        expected = sum(
            len(turn["content"].splitlines()) if "speaker" in turn else 1
            for session in t2["haystack_sessions"]
            for turn in session
        )
        assert report.added == expected


def test_the_harness_ingests_a_whatsapp_turn_under_its_senders_name():
    items = json.loads((TIMEQ / "dev.json").read_text(encoding="utf-8"))
    t2 = next(i for i in items if i["question_id"].startswith("timeq-t2-"))
    lines = [json.loads(line) for line in _haystack_jsonl(TIMEQ / "dev.json", 0, t2).splitlines()]
    by_speaker = {(line["speaker"], line["role"]) for line in lines}
    # The owner keeps the user role in both sources; his sister is a person, not an assistant.
    assert by_speaker == {("Daniel Ruiz", "user"), ("Carmen Ruiz", None), ("user", "user"), ("assistant", "assistant")}
