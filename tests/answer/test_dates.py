"""Date questions are counted by rules from the evidence the model picked."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

import pytest

from localmem.answer.dates import DateQuestion, classify, events_of, work_out
from localmem.types import Hit


def _hit(i: int, when: str, text: str) -> Hit:
    return Hit(id=f"m:{i}", kind="message", text=text, score=0.0, channels={}, time=when)


@pytest.mark.parametrize(
    "question, kind, unit, events",
    [
        (
            "How many days after we adopted Pilchard did I start my new job?",
            "between",
            "days",
            ("we adopted Pilchard", "I start my new job"),
        ),
        (
            "How many weeks ago did I ride the Mendip Spring Sportive?",
            "ago",
            "weeks",
            ("I ride the Mendip Spring Sportive",),
        ),
        (
            "How many days were there between Severn Rail offering me the job and my first day there?",
            "between",
            "days",
            ("Severn Rail offering me the job", "my first day there"),
        ),
        (
            "Which happened first: getting engaged or riding the Dartmoor Demon?",
            "order",
            None,
            ("getting engaged", "riding the Dartmoor Demon"),
        ),
        ("How long ago did I move to Lisbon?", "ago", None, ("I move to Lisbon",)),
        (
            "How many days had we had Mango when we moved to Portland?",
            "between",
            "days",
            ("Mango", "we moved to Portland"),
        ),
        ("Where do I work now?", None, None, None),
        ("Did the move happen before the wedding?", "order", None, ("the move", "the wedding")),
        ("Where did Dana live before York?", None, None, None),  # asks for a place, not an order
        ("Which company did I work for before my current job?", None, None, None),
        ("On what date was my hybrid stolen?", None, None, None),
    ],
)
def test_classify(question, kind, unit, events):
    found = classify(question)
    if kind is None:
        assert found is None
    else:
        assert found == DateQuestion(kind, unit, events)


def test_events_read_relative_days_against_the_day_said():
    hits = [_hit(1, "2024-04-16T09:00:00", "user: My hybrid was stolen yesterday. I am gutted.")]
    events = events_of(hits)
    assert [(e.day, e.text) for e in events] == [
        (dt.date(2024, 4, 15), "user: My hybrid was stolen yesterday."),
        (dt.date(2024, 4, 16), "I am gutted."),
    ]


def test_between_two_events_counts_days_from_their_own_days():
    hits = [
        _hit(1, "2024-01-22T10:00:00", "user: We adopted a cat today, his name is Pilchard!"),
        _hit(2, "2024-04-16T08:00:00", "user: I started my new job yesterday at Severn Rail."),
    ]
    worked = work_out(classify("How many days after we adopted Pilchard did I start my new job?"), hits, None)
    assert worked is not None and worked.answer.startswith("84 days (22 January 2024 to 15 April 2024)")
    assert "84 days" in worked.arithmetic and [e["id"] for e in worked.events] == ["m:1", "m:2"]


def test_ago_counts_to_now_in_the_unit_asked():
    hits = [_hit(1, "2024-03-24T18:00:00", "user: Just finished the Mendip Spring Sportive, 100 km!")]
    question = classify("How many weeks ago did I ride the Mendip Spring Sportive?")
    worked = work_out(question, hits, dt.date(2024, 9, 24))
    assert worked is not None and worked.answer.startswith("26 weeks")


def test_order_names_the_earlier_option():
    hits = [
        _hit(1, "2024-06-30T20:00:00", "user: Rode the Dartmoor Demon today, brutal hills."),
        _hit(2, "2024-06-09T09:00:00", "user: Big news: Ines and I got engaged yesterday!"),
    ]
    worked = work_out(classify("Which happened first: getting engaged or riding the Dartmoor Demon?"), hits, None)
    assert worked is not None and worked.answer.startswith("getting engaged (8 June 2024")


def test_an_event_on_a_day_said_with_its_month_counts_from_that_day():
    # Said on 26 March and 25 February: the start date and the ride are ahead of the message.
    hits = [
        _hit(1, "2024-01-22T10:00:00", "user: We adopted a cat today, his name is Pilchard!"),
        _hit(2, "2024-03-26T12:50:00", "user: They offered me the job! My start date is Monday 15 April."),
    ]
    worked = work_out(classify("How many days after we adopted Pilchard did I start my new job?"), hits, None)
    assert worked is not None and worked.answer.startswith("84 days (22 January 2024 to 15 April 2024)")
    ride = [_hit(3, "2024-02-25T09:00:00", "user: I've signed up for the Mendip Spring Sportive on 24 March.")]
    worked = work_out(classify("How many weeks ago did I ride the Mendip Spring Sportive?"), ride, dt.date(2024, 9, 24))
    assert worked is not None and worked.answer.startswith("26 weeks (24 March 2024 to 24 September 2024)")


def test_an_event_the_model_did_not_cite_is_looked_for_in_the_rest_of_the_evidence():
    cited = [_hit(1, "2024-01-22T10:00:00", "user: We adopted a cat today, his name is Pilchard!")]
    rest = [
        _hit(2, "2024-03-02T10:00:00", "user: I like tea."),
        _hit(3, "2024-04-16T08:00:00", "user: I started my new job yesterday at Severn Rail."),
    ]
    question = classify("How many days after we adopted Pilchard did I start my new job?")
    assert work_out(question, cited, None) is None
    worked = work_out(question, cited, None, rest)
    assert (
        worked is not None
        and worked.answer.startswith("84 days")
        and [e["id"] for e in worked.events] == ["m:1", "m:3"]
    )


def test_an_event_said_to_the_year_is_counted_in_years_and_shown_as_said():
    hits = [_hit(1, "2023-10-22T10:00:00", "user: My 18th birthday was ten years ago, what a party.")]
    worked = work_out(classify("How long ago was my 18th birthday?"), hits, dt.date(2023, 10, 22))
    assert worked is not None and worked.answer == "10 years (2013 to 22 October 2023)"
    # Days cannot be counted from a year: no worked answer rather than a false one.
    assert work_out(classify("How many days ago was my 18th birthday?"), hits, dt.date(2023, 10, 22)) is None


def test_nothing_matching_means_no_worked_answer():
    hits = [_hit(1, "2024-06-30T20:00:00", "user: I like tea.")]
    assert work_out(classify("How many days after the wedding did we move?"), hits, None) is None


@pytest.mark.parametrize(
    "question, language, kind, unit, events",
    [
        (
            "Wie viele Tage lagen zwischen dem Umzug und dem neuen Job?",
            "de",
            "between",
            "days",
            ("dem Umzug", "dem neuen Job"),
        ),
        ("¿Cuántos días pasaron entre la mudanza y la boda?", "es", "between", "days", ("la mudanza", "la boda")),
        (
            "Combien de semaines entre le déménagement et le mariage ?",
            "fr",
            "between",
            "weeks",
            ("le déménagement", "le mariage"),
        ),
        ("Há quantos dias comecei o novo trabalho?", "pt", "ago", "days", ("comecei o novo trabalho",)),
        ("Was war zuerst: die Hochzeit oder der Umzug?", "de", "order", None, ("die Hochzeit", "der Umzug")),
        ("Wie alt war ich, als ich nach Berlin zog?", "de", "age", None, ("ich nach Berlin zog",)),
        ("搬家和婚礼之间相隔多少天？", "zh", "between", "days", ("搬家", "婚礼")),
        ("引っ越しから結婚式まで何日？", "ja", "between", "days", ("引っ越し", "結婚式")),
        # "After X did Y": the second event starts at its verb.
        (
            "Combien de jours après avoir adopté Minou ai-je commencé mon nouveau travail ?",
            "fr",
            "between",
            "days",
            ("avoir adopté Minou", "ai-je commencé mon nouveau travail"),
        ),
        (
            "¿Cuántos días después de adoptar a Lola empecé en La Fe?",
            "es",
            "between",
            "days",
            ("adoptar a Lola", "empecé en La Fe"),
        ),
        (
            "Quantos dias depois do casamento nos mudamos para Lisboa?",
            "pt",
            "between",
            "days",
            ("casamento", "nos mudamos para Lisboa"),
        ),
        ("Wo arbeite ich jetzt?", "de", None, None, None),
        # An English pattern does not read another language's question, nor the other way round.
        ("How many days between the move and the wedding?", "de", None, None, None),
    ],
)
def test_classify_reads_date_questions_in_the_supported_languages(question, language, kind, unit, events):
    found = classify(question, language)
    if kind is None:
        assert found is None
    else:
        assert found == DateQuestion(kind, unit, events)


def test_a_german_date_question_is_counted_from_german_time_words():
    asked = classify("Wie viele Tage lagen zwischen dem Umzug nach Leipzig und dem ersten Arbeitstag?", "de")
    assert asked is not None
    evidence = [
        _hit(1, "2024-03-12T09:00:00", "Wir sind gestern nach Leipzig umgezogen, der Umzug war anstrengend."),
        _hit(2, "2024-04-15T18:00:00", "Heute war mein erster Arbeitstag bei Siemens!"),
    ]
    worked = work_out(asked, evidence, dt.date(2024, 5, 1), english=False)
    assert worked is not None and worked.answer.startswith("35 days (11 March 2024 to 15 April 2024)")


def test_ask_counts_a_german_date_question_by_rule_not_by_the_model(tmp_path):
    from tests.fakes import HashEmbedder, ScriptedLLM
    from tests.helpers import open_memory

    llm = ScriptedLLM(responder=lambda m: {"answer": "etwa einen Monat", "supports": [1, 2], "confidence": 0.8})
    with open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=llm) as mem:
        mem.add("Lena", "Wir sind gestern nach Leipzig umgezogen, der Umzug war anstrengend.", time="2024-03-12T09:00")
        mem.add("Lena", "Heute war mein erster Arbeitstag bei Siemens, nach dem Umzug!", time="2024-04-15T18:00")
        result = mem.ask("Wie viele Tage lagen zwischen dem Umzug nach Leipzig und dem ersten Arbeitstag?")
    assert result.answer.startswith("35 days") and result.details["dates"]["model_answer"] == "etwa einen Monat"


def test_a_day_of_the_month_without_its_month_is_that_day_near_when_it_was_said():
    # Said on Tuesday 14 May: "Sunday the 12th" is two days before, not the day it was said.
    hits = [
        _hit(1, "2024-05-14T19:00:00", "user: The Leeds Half was on Sunday the 12th and I ran 1:48:37!"),
        _hit(2, "2024-05-14T19:01:00", "user: Halden Health offered me the job. I start on 15 July."),
    ]
    worked = work_out(classify("How many days after the Leeds Half did I start my new job?"), hits, None)
    assert worked is not None and worked.answer.startswith("64 days (12 May 2024 to 15 July 2024)")


@pytest.mark.parametrize(
    "text, born",
    [
        ("Some background. I'm 30, born 22 September 1993, and I live in Ancoats.", "1993-09-22"),
        ("Ich bin am 11. November 1988 geboren, also mit 35 noch mal ein Neuanfang.", "1988-11-11"),
        ("Cumplí 34 el día 3 (nací el 3 de marzo de 1990).", "1990-03-03"),
        ("My brother was born on 2 May 1995. I was born on 1 June 1992.", "1992-06-01"),
    ],
)
def test_age_counts_from_a_birth_told_in_any_supported_language_and_cited_or_not(text, born):
    question = classify("How old was I when I ran my first half marathon?")
    race = _hit(
        1, "2024-01-14T20:00:00", "user: My first ever half marathon was the Great North Run on 8 September 2019."
    )
    birth = _hit(2, "2024-01-14T20:01:00", text)
    # The model cited the race only: the birth is read from the rest of what it saw.
    worked = work_out(question, [race], None, [birth])
    born_day = dt.date.fromisoformat(born)
    years = 2019 - born_day.year - ((9, 8) < (born_day.month, born_day.day))
    assert worked is not None and worked.answer == f"{years} years old"


def test_a_birthday_party_is_not_a_birth():
    question = classify("How old was I when I ran my first half marathon?")
    race = _hit(
        1, "2024-01-14T20:00:00", "user: My first ever half marathon was the Great North Run on 8 September 2019."
    )
    party = _hit(2, "2024-05-14T20:00:00", "user: I flew down for Mom's 70th birthday on 3 May 2024.")
    assert work_out(question, [race], None, [party]) is None


def test_ask_searches_each_event_of_a_date_question_on_its_own(tmp_path):
    from tests.fakes import HashEmbedder, ScriptedLLM
    from tests.helpers import open_memory

    llm = ScriptedLLM(responder=lambda m: {"answer": "a few weeks", "supports": [1], "confidence": 0.8})
    with open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=llm) as mem:
        mem.add("user", "We adopted a cat today, his name is Pilchard!", time="2024-01-22T10:00")
        # Many messages sharing the question's words, none about the cat: one search for the
        # whole question fills its candidates with them.
        for day in range(1, 29):
            mem.add(
                "user",
                f"How many days after the interview did they say I start the new job? Day {day} of waiting.",
                time=f"2024-02-{day:02d}T09:00",
            )
        mem.add("user", "New job! I started my new job yesterday.", time="2024-04-16T08:00")
        result = mem.ask("How many days after we adopted Pilchard did I start my new job?")
    assert result.answer.startswith("84 days (22 January 2024 to 15 April 2024)"), result.answer


def test_an_event_is_dated_by_the_sentence_naming_its_day_and_the_users_words_first():
    question = classify("How many days after we adopted Lola did I start at La Fe?")
    own = [
        [_hit(1, "2024-02-17T12:05:00", "Daniel: La he adoptado esta mañana en la protectora, se llama Lola.")],
        [
            replace(
                _hit(
                    2, "2024-07-20T10:00:00", "assistant: Since you started at La Fe on 1 June, you'll have leave soon."
                ),
                speaker="assistant",
            ),
            replace(
                _hit(3, "2024-07-20T10:01:00", "user: Just to correct you: I started on 1 July, not 1 June."),
                speaker="user",
            ),
        ],
    ]
    others = [_hit(4, "2024-10-02T10:00:00", "user: Lola's vet said her ears are fine.")]
    worked = work_out(question, [], None, others, True, own)
    # "esta mañana" is the day it was said; the user's correction outranks the assistant.
    assert worked is not None and worked.answer.startswith("135 days (17 February 2024 to 1 July 2024)")


def test_each_event_is_searched_only_in_what_was_known_as_of_the_day_asked(tmp_path):
    from tests.fakes import HashEmbedder, ScriptedLLM
    from tests.helpers import open_memory

    llm = ScriptedLLM(responder=lambda m: {"answer": "a few weeks", "supports": [1], "confidence": 0.8})
    with open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=llm) as mem:
        mem.add("user", "We adopted a cat today, his name is Pilchard!", time="2024-01-22T10:00")
        mem.add("user", "I started my new job yesterday at Severn Rail.", time="2024-04-16T08:00")
        question = "How many days after we adopted Pilchard did I start my new job?"
        assert mem.ask(question).answer.startswith("84 days")
        before = mem.ask(question, as_of="2024-03-01")
    # The start was said after 1 March: its own search does not find it then.
    assert not before.answer.startswith("84 days")
    assert all(h.time is None or h.time < "2024-03-02" for h in before.evidence)


@pytest.mark.parametrize(
    "messages, question, answer",
    [
        (
            [
                (
                    "Lena",
                    "Ich bin am 11. November 1988 geboren, also mit 35 noch mal ein Neuanfang.",
                    "2024-01-10T09:00",
                ),
                ("Lena", "Das Wetter ist schön.", "2024-05-02T18:00"),
                ("Lena", "Heute bin ich nach Hamburg umgezogen!", "2024-09-02T18:00"),
            ],
            "Wie alt war ich, als ich nach Hamburg umgezogen bin?",
            "35 years old",
        ),
        (
            [
                ("Chloé", "Nous avons adopté un chat hier, il s'appelle Minou.", "2024-02-10T09:00"),
                ("Chloé", "Il pleut encore.", "2024-02-20T18:00"),
                ("Chloé", "J'ai commencé mon nouveau travail aujourd'hui chez Airbus !", "2024-03-11T18:00"),
            ],
            "Combien de jours après avoir adopté Minou ai-je commencé mon nouveau travail ?",
            "31 days (9 February 2024 to 11 March 2024)",
        ),
        (
            [
                ("Daniel", "La he adoptado esta mañana en la protectora, se llama Lola.", "2024-02-17T12:05"),
                ("Daniel", "Empecé en La Fe el 1 de julio.", "2024-07-03T10:00"),
            ],
            "¿Cuántos días después de adoptar a Lola empecé en La Fe?",
            "135 days (17 February 2024 to 1 July 2024)",
        ),
    ],
)
def test_ask_works_out_date_questions_in_other_languages(tmp_path, messages, question, answer):
    from tests.fakes import HashEmbedder, ScriptedLLM
    from tests.helpers import open_memory

    llm = ScriptedLLM(responder=lambda m: {"answer": "keine Ahnung", "supports": [1], "confidence": 0.8})
    with open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=llm) as mem:
        for who, text, when in messages:
            mem.add(who, text, time=when)
        result = mem.ask(question)
    assert result.answer == answer
    # The working shows the messages as they were said, not their English reading.
    assert all(e["text"] in {f"{w}: {t}" for w, t, _ in messages} for e in result.details["dates"]["events"])
