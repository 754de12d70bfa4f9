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


def test_each_conversation_has_unanswerable_questions_in_both_languages():
    """evals/multilingual_answers.py asks them as LoCoMo's category 5: a refusal is right."""
    for conv in _set():
        asked = conv["unanswerable"]
        assert len(asked) >= 3, conv["id"]
        native = conv["language"].split("+")[0]
        for qa in asked:
            assert set(qa) == {"question", "question_en"} and qa["question"] != qa["question_en"]
            assert detect(qa["question"]) in (native, "und"), (conv["id"], qa["question"])
            assert detect(qa["question_en"]) in ("en", "und"), (conv["id"], qa["question_en"])


def test_the_answer_eval_scores_each_language_as_documented():
    """The F1 of evals/multilingual_answers.py: accents and case folded, the answer language's
    articles dropped, Chinese by character, several parts (category 1) averaged over the gold's."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "evals"))
    from multilingual_answers import f1, samples, score

    assert f1("In Lissabon.", "in LISSABON", "de") == 1.0
    assert f1("Paçoca", "Pacoca", "pt") == 1.0
    assert f1("Der Hund", "Hund", "de") == 1.0 and f1("Der Hund", "Hund", "en") < 1.0
    assert f1("北京", "北京市", "zh") == 0.8  # by character: 2 of 2 and 2 of 3
    assert f1("Dienstag", "Dienstags", "de") == 0.0  # no stemming
    assert score(1, "Lisboa, Ouro Preto", "En Ouro Preto, en la finca del tío Joaquim", "es") < 1.0
    assert (
        score(1, "en la finca del tio Joaquim, en Ouro Preto", "En Ouro Preto, en la finca del tío Joaquim", "es")
        == 1.0
    )
    doc = {"conversations": _set()}
    native = samples(doc, "native", {"ml-de"})
    assert [s["sample_id"] for s in native] == ["ml-de"]
    asked = native[0]["qa"]
    assert [q["category"] for q in asked].count(5) == len(_set()[0]["unanswerable"])
    assert asked[-1]["question"] == _set()[0]["unanswerable"][-1]["question"]
    english = samples(doc, "english", {"ml-de"})[0]["qa"]
    assert english[0]["question"] == _set()[0]["qa"][0]["question_en"]
