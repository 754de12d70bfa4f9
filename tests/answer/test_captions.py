"""A shared image's caption is what the image shows, said by a captioner, not by the speaker:
the answer prompt marks it as an image description, and an answer built from caption words
alone is refused. Fixtures: messages whose captions say something else than their text."""

from __future__ import annotations

import datetime as dt
import json

from localmem.answer import checks
from localmem.prompts import answer as answer_prompt
from localmem.types import Hit, HitSource
from tests.fakes import HashEmbedder, ScriptedLLM
from tests.helpers import open_memory, read_first

from_image_descriptions = read_first(checks.from_image_descriptions)
CELEBRATION = "a photo of a group of people sitting at a table"
CHAT = [
    {
        "sample_id": "captions",
        "conversation": {
            "speaker_a": "John",
            "speaker_b": "Tim",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {
                    "speaker": "John",
                    "dia_id": "D1:1",
                    "text": "We pulled off a tough win last night, so the team celebrated at a restaurant!",
                    "img_url": ["http://example.invalid/t.jpg"],
                    "blip_caption": CELEBRATION,
                },
                {
                    "speaker": "Tim",
                    "dia_id": "D1:2",
                    "text": "Congrats! I finished my fantasy novel draft this week.",
                    "img_url": ["http://example.invalid/s.jpg"],
                    "blip_caption": "a photo of a man riding a wave on a surfboard",
                },
            ],
        },
        "qa": [],
    }
]


def _memory(tmp_path, llm):
    path = tmp_path / "captions.json"
    path.write_text(json.dumps(CHAT), encoding="utf-8")
    mem = open_memory(tmp_path / "m.db", namespace="captions", embedder=HashEmbedder(), llm=llm)
    mem.ingest(path, format="locomo")
    return mem


def _answering(answer):
    def respond(messages):
        items = [line for line in messages[-1]["content"].splitlines() if line.startswith("[")]
        return {
            "answer": answer,
            "supports": [i for i, line in enumerate(items, 1) if "John:" in line],
            "confidence": 0.9,
        }

    return respond


def test_the_prompt_marks_a_caption_as_an_image_description(tmp_path):
    llm = ScriptedLLM(responder=_answering("a tough win"))
    with _memory(tmp_path, llm) as mem:
        mem.ask("What did John celebrate at a restaurant with his team?")
    system, user = llm.calls[0][0]["content"], llm.calls[0][-1]["content"]
    john = next(line for line in user.splitlines() if "John:" in line)
    assert john.endswith(f"celebrated at a restaurant! ({answer_prompt.IMAGE_DESCRIPTION}: {CELEBRATION})")
    assert "(image description: ...)" in system and "not what the speaker said" in system
    assert answer_prompt.VERSION == "answer-v6"


def test_an_answer_from_the_caption_alone_is_refused_and_one_from_the_message_is_not(tmp_path):
    with _memory(tmp_path, ScriptedLLM(responder=_answering(CELEBRATION))) as mem:
        wrong = mem.ask("What did John celebrate at a restaurant with his team?")
    assert wrong.refused and wrong.refusal == "image description" and wrong.citations == []
    assert wrong.unsupported == CELEBRATION  # what the model said is kept, not given
    with _memory(tmp_path, ScriptedLLM(responder=_answering("a tough win"))) as mem:
        right = mem.ask("What did John celebrate at a restaurant with his team?")
    assert not right.refused and right.answer == "a tough win"
    assert [c.external_id for c in right.citations] == ["D1:1"]


def test_a_question_about_the_picture_may_be_answered_from_its_description(tmp_path):
    with _memory(tmp_path, ScriptedLLM(responder=_answering(CELEBRATION))) as mem:
        result = mem.ask("What kind of picture did John share?")
    assert not result.refused and result.answer == CELEBRATION


def _hit(said, captions=(), speaker="Tim"):
    source = HitSource(1, "D1:2", "c", "s", speaker, "2023-05-08")
    return Hit.message("m:1", speaker, said, "2023-05-08", [source], captions, score=1.0)


def test_what_counts_as_built_from_captions():
    speakers = {"John": ["John"], "Tim": ["Tim"]}
    surf = _hit("Congrats! I finished my fantasy novel draft this week.", ["a man riding a wave on a surfboard"])
    # The message says "novel"; the caption says "surfboard": Tim wrote, he did not surf.
    assert from_image_descriptions("What did Tim do this week?", "rode a wave on a surfboard", [surf], speakers)
    assert not from_image_descriptions("What did Tim do this week?", "finished his novel draft", [surf], speakers)
    # Words from both: the message carries as much of the answer as the caption.
    dog = _hit("Meet Max, my new puppy!", ["a photo of a dog laying on a couch"])
    assert not from_image_descriptions("What pet did Tim get?", "a dog named Max", [dog], speakers)
    assert not from_image_descriptions("What did Tim's photo show?", "a man riding a wave", [surf], speakers)
    assert not from_image_descriptions(
        "When did Tim write?", "8 May 2023", [surf], speakers
    )  # no words: nothing to check


def test_a_message_hit_carries_what_was_said_apart_from_its_captions():
    hit = _hit("look!", ["a dog", "a cat"])
    assert hit.text == "Tim: look! [image: a dog] [image: a cat]"
    assert (hit.speaker, hit.said, hit.captions, hit.day) == ("Tim", "look!", ["a dog", "a cat"], dt.date(2023, 5, 8))
    assert Hit.from_dict(hit.to_dict()) == hit  # the CLI reads a served answer's evidence back
