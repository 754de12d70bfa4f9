"""Citations point at the message that states the answer (issue 34 item 7)."""

from __future__ import annotations

from localmem.answer import citations
from localmem.answer.question import Question
from localmem.types import Hit, HitSource
from tests.fakes import HashEmbedder, ScriptedLLM
from tests.helpers import SAMPLE_CHAT, open_memory


def stating(question: str, text: str, evidence, supports) -> list[int]:
    """:func:`citations.stating` of ``question`` read without speakers (the words it asks)."""
    return citations.stating(Question.parse(question, {}), text, evidence, supports)


def _items(messages) -> list[str]:
    return [line for line in messages[-1]["content"].splitlines() if line.startswith("[")]


def test_the_readme_demo_cites_the_message_that_names_lisbon(tmp_path):
    # The model's reply as the README's demo got it: "Lisbon", resting on the March 1st message only.
    def reply(messages):
        n = next(i for i, line in enumerate(_items(messages), 1) if "March 1st" in line)
        return {"answer": "Lisbon", "supports": [n], "confidence": 0.9}

    llm = ScriptedLLM(responder=reply)
    with open_memory(tmp_path / "demo.db", embedder=HashEmbedder(), llm=llm) as mem:
        mem.ingest(SAMPLE_CHAT)
        result = mem.ask("Where did Priya move for her new job?")
    assert "offer from the Lisbon design studio" in "\n".join(_items(llm.calls[0]))  # the evidence holds it
    assert result.answer == "Lisbon" and not result.refused
    texts = [c.text for c in result.citations]
    assert any("offer from the Lisbon design studio" in t for t in texts), texts
    assert any("March 1st" in t for t in texts)  # what the model cited stays cited


def _message(ext: str, speaker: str, text: str, when: str, score: float = 1.0, captions=()) -> Hit:
    source = HitSource(1, ext, "c", "s", speaker, when)
    return Hit.message(ext, speaker, text, when, [source], captions, score=score)


EVIDENCE = [
    _message("a", "Priya", "I got the offer from the Lisbon design studio.", "2024-01-14T19:02:00", 0.3),
    _message(
        "b", "Priya", "I'd start on March 1st, so I need to find a flat there by February.", "2024-01-14T19:02:00"
    ),
    _message("c", "Priya", "Porto is three hours by train from Lisbon!", "2024-02-20T08:45:00", 0.9),
    _message(
        "d", "Tom", "The 15E tram goes to Belem.", "2024-01-14T19:02:00", captions=["a photo of a tram map of Lisbon"]
    ),
    _message("e", "Priya", "Lisbon or Porto, I can't decide.", "2024-02-20T08:45:00", 0.5),
]


def test_a_cited_message_that_holds_the_answer_is_kept_as_the_only_support():
    assert stating("Where did Priya move?", "Lisbon", EVIDENCE, [1]) == [1]
    assert stating("Where did Priya move?", "Lisbon", EVIDENCE, [3]) == [3]


def test_of_the_messages_that_state_the_answer_the_nearest_to_the_cited_one_is_cited():
    # Not the caption (what a captioner saw); of those that say it, the one said nearest the
    # cited message (the search ranked the Porto one higher); at the same distance, the higher ranked.
    assert stating("Where did Priya move?", "Lisbon", EVIDENCE, [2]) == [1, 2]
    same_time = [EVIDENCE[1], _message("f", "Priya", "Lisbon it is.", "2024-01-14T19:02:00", 0.9), EVIDENCE[0]]
    assert stating("Where did Priya move?", "Lisbon", same_time, [1]) == [1, 2]


def test_an_answer_without_words_of_its_own_keeps_what_the_model_cited():
    assert stating("When does Priya start?", "1 March 2024", EVIDENCE, [2]) == [2]
    assert stating("Did Priya move to Lisbon?", "Yes, Lisbon", EVIDENCE, [2]) == [2]
    assert stating("Where did Priya move?", "Berlin", EVIDENCE, [2]) == [2]  # no message says it


def test_a_message_holding_more_of_the_answer_than_the_cited_one_is_cited_too():
    evidence = [
        _message("g", "Jon", "The event was awesome, I met some investors.", "2023-06-01T10:00:00"),
        _message("h", "Jon", "I'm sprucing up my biz plan and tweaking my pitch to investors.", "2023-06-01T10:00:00"),
    ]
    answer = "sprucing up biz plan, tweaking pitch to investors"
    assert stating("What plans does Jon have after the event?", answer, evidence, [1]) == [1, 2]
    # One word of five ("investors") is not enough to cite a message the model did not.
    thanks = _message("i", "Jon", "Thanks for the tips!", "2023-06-01T10:00:00")
    assert stating("What plans does Jon have after the event?", answer, [thanks, evidence[0]], [1]) == [1]


GINA = [
    _message("j", "Gina", "Oh btw, I just teamed up with a local artist for some cool designs!", "2023-02-08T10:00:00"),
    _message("k", "Gina", "So I worked with the artist to make it happen.", "2023-02-08T10:00:00", 0.9),
    _message("l", "Gina", "Want to team up with a local artist for cool designs?", "2023-02-08T10:00:00", 0.8),
    _message("m", "Gina", "A local artist made these cool designs for my team.", "2023-03-01T10:00:00", 0.9),
]


def test_a_date_answer_cites_the_same_day_message_that_names_the_event():
    # "8 February 2023" is the day of what the model cited; the turn that tells the event is cited too.
    assert stating(
        "When did Gina team up with a local artist for some cool designs?", "8 February 2023", GINA, [2]
    ) == [
        1,
        2,
    ]


def test_naming_takes_neither_a_question_nor_another_days_message():
    question = "When did Gina team up with a local artist for some cool designs?"
    # The question turn names every word, and the March message most of them: neither states the event that day.
    assert stating(question, "8 February 2023", [GINA[1], GINA[2], GINA[3]], [1]) == [1]
    # A cited item that already names the asked words as well keeps what the model cited.
    assert stating(question, "8 February 2023", GINA, [1]) == [1]
