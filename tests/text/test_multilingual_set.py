"""The multilingual test set (tests/fixtures/multilingual, evals/multilingual_recall.py): well
formed, and its languages are the ones the detector finds in it."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from localmem.text.language import detect

SET = Path(__file__).resolve().parents[1] / "fixtures" / "multilingual" / "conversations.json"


def _set() -> list[dict]:
    return json.loads(SET.read_text(encoding="utf-8"))["conversations"]


def test_every_question_has_both_languages_an_answer_and_existing_evidence():
    conversations = _set()
    assert {c["language"] for c in conversations} == {"de", "es", "fr", "pt", "zh", "es+en"}
    for conv in conversations:
        ids = {
            f"D{s}:{t}" for s, session in enumerate(conv["sessions"], 1) for t in range(1, len(session["turns"]) + 1)
        }
        assert len(conv["qa"]) >= 8
        for qa in conv["qa"]:
            assert qa["question"] and qa["question_en"] and qa["answer"] and qa["answer_en"]
            assert qa["evidence"] and set(qa["evidence"]) <= ids, (conv["id"], qa["evidence"])
        for session in conv["sessions"]:
            for speaker, text, english in session["turns"]:
                assert speaker in (conv["speaker_a"], conv["speaker_b"]) and text and english


def test_the_detector_finds_each_conversation_in_its_language():
    for conv in _set():
        turns = [t for session in conv["sessions"] for t in session["turns"]]
        found = Counter(detect(text) for _, text, _ in turns)
        english = Counter(detect(en) for _, _, en in turns)
        expected = set(conv["language"].split("+"))
        right = sum(n for lang, n in found.items() if lang in expected | {"und"})
        assert right >= 0.9 * len(turns), (conv["id"], found)
        assert english["en"] + english["und"] >= 0.9 * len(turns), (conv["id"], english)
        if conv["language"] == "es+en":
            assert found["es"] and found["en"]  # both languages, turn by turn
