"""Counts, sums, the value now and the value before: the model lists, code works out the answer."""

from __future__ import annotations

import datetime as dt

import pytest

from localmem.answer.evidence import session_diverse
from localmem.answer.question import AT, BEFORE, COUNT, CURRENT, SUM, Question
from localmem.answer.tally import amount, same_thing, work_out
from localmem.config import Config, settings
from localmem.errors import ConfigError
from localmem.mcp_results import ask_out
from localmem.prompts import tally as listing
from localmem.types import Hit, HitSource
from tests.fakes import HashEmbedder, ScriptedLLM
from tests.helpers import open_memory

# A user's chat with an assistant, over sessions: bikes bought, one stolen; a job that changes.
CHAT = [
    (
        "user",
        "I've got two bikes: a Dawes Galaxy tourer and a Carrera hybrid for commuting.",
        "2024-01-07T20:00:00",
        "s1",
    ),
    ("assistant", "Nice pair: the Dawes for touring, the Carrera for town.", "2024-01-07T20:01:00", "s1"),
    ("user", "I work at Harrow & Pike Consulting as a structural engineer.", "2024-02-06T21:00:00", "s2"),
    ("user", "Bought a Genesis Croix de Fer today for £1,150!", "2024-03-26T12:00:00", "s3"),
    ("user", "I signed with Severn Rail Partners, I start on 15 April.", "2024-03-26T12:05:00", "s3"),
    ("user", "My Carrera hybrid was stolen from outside the station yesterday.", "2024-04-18T08:00:00", "s4"),
    ("user", "First week at Severn Rail Partners done.", "2024-04-20T08:00:00", "s4"),
    ("user", "Spent £95 on an ABUS D-lock after the theft.", "2024-04-21T08:00:00", "s5"),
    ("user", "And £120 on Ortlieb panniers for the Genesis.", "2024-07-30T20:00:00", "s6"),
]


# Every kind on: by default only sums are worked out by code (docs/timeq.md).
ALL = Config(ask_tally="count,sum,current,before,at")


def _memory(tmp_path, llm):
    mem = open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=llm, config=ALL)
    for speaker, text, when, session in CHAT:
        mem.add(speaker, text, time=when, role=speaker, conversation=session)
    return mem


def _items(messages) -> list[str]:
    return [line for line in messages[-1]["content"].splitlines() if line.startswith("[")]


def _n(messages, words: str) -> int:
    """The number of the prompt's item holding ``words``."""
    return next(i for i, line in enumerate(_items(messages), 1) if words in line)


@pytest.mark.parametrize(
    "question, kind",
    [
        ("How many bikes do I have at the moment?", COUNT),
        ("How often did I fly back to Tucson?", COUNT),
        ("How much have I spent altogether on the lock and the panniers?", SUM),
        ("What's the total distance of the rides I've done this year?", SUM),
        ("Where do I work now?", CURRENT),
        ("Which company did I work for before my current job?", BEFORE),
        ("How much more rent do I pay now than in Tucson?", None),  # a difference: the model's
        ("How many days after the race did I start?", None),  # a date question: dates.py's
        ("Wie viele Fahrräder habe ich?", COUNT),
        ("¿Cuánto he gastado en total en la mudanza?", SUM),
        ("Où est-ce que je travaille maintenant ?", CURRENT),
        ("Onde eu morava antes da minha casa atual?", BEFORE),
        ("我现在住在哪里？", CURRENT),
        ("自転車を何台持っていますか？", COUNT),
        ("What did Caroline paint?", None),
    ],
)
def test_the_kind_a_question_asks_is_read_by_rules_in_every_supported_language(question, kind):
    assert Question.parse(question, {}).kind == kind


def _hit(i: int, when: str, text: str, session: str, speaker: str = "user") -> Hit:
    source = HitSource(i, f"e{i}", "c", session, speaker, when)
    return Hit.message(f"m:{i}", speaker, text, when, [source])


def test_a_count_takes_out_what_was_later_lost_and_counts_one_thing_told_twice_once():
    evidence = [
        _hit(1, "2024-01-07T20:00:00", "Dawes Galaxy and a Carrera hybrid", "s1"),
        _hit(2, "2024-03-26T12:00:00", "Bought a Genesis Croix de Fer", "s3"),
        _hit(3, "2024-04-18T08:00:00", "My Carrera was stolen", "s4"),
        _hit(4, "2024-05-01T08:00:00", "the Genesis is great", "s5"),
    ]
    listed = {
        "entries": [
            {"n": 1, "what": "Dawes Galaxy", "amount": "", "status": "counts"},
            {"n": 1, "what": "Carrera hybrid", "amount": "", "status": "counts"},
            {"n": 2, "what": "Genesis Croix de Fer", "amount": "", "status": "counts"},
            {"n": 3, "what": "the Carrera", "amount": "", "status": "gone"},
            {"n": 4, "what": "Genesis", "amount": "", "status": "counts"},  # told again: once
            {"n": 9, "what": "a bike that is not there", "amount": "", "status": "counts"},  # no item 9
        ]
    }
    worked = work_out(COUNT, listed, evidence, "en", None)
    assert worked is not None
    assert worked.answer.startswith("2: Dawes Galaxy (7 January 2024), Genesis Croix de Fer (26 March 2024)")
    assert "not counted: Carrera hybrid (gone, 18 April 2024)" in worked.answer
    assert worked.details["count"] == 2 and worked.supports == [1, 2, 3, 4]


def test_a_sum_is_added_up_by_code_in_one_unit_and_refused_to_code_across_units():
    evidence = [_hit(1, "2024-04-21T08:00:00", "£95 lock", "s5"), _hit(2, "2024-07-30T20:00:00", "£120 panniers", "s6")]
    listed = {
        "entries": [
            {"n": 1, "what": "ABUS D-lock", "amount": "£95", "status": "counts"},
            {"n": 2, "what": "Ortlieb panniers", "amount": "£120", "status": "counts"},
        ]
    }
    worked = work_out(SUM, listed, evidence, "en", None)
    assert worked is not None and worked.answer.startswith("£215: £95 (ABUS D-lock, 21 April 2024) + £120")
    assert worked.details["arithmetic"] == "£95 + £120 = £215"
    listed["entries"][1]["amount"] = "$120"  # pounds and dollars do not add up: the model answers
    assert work_out(SUM, listed, evidence, "en", None) is None
    assert amount("1,650 dollars") == (1650.0, "|dollars") and amount("three") == (3.0, "")


def test_the_value_now_says_since_when_and_what_it_was_before_and_before_answers_the_older():
    evidence = [
        _hit(1, "2024-02-06T21:00:00", "I work at Harrow & Pike Consulting", "s2"),
        _hit(2, "2024-03-26T12:05:00", "I signed with Severn Rail Partners", "s3"),
        _hit(3, "2024-04-20T08:00:00", "First week at Severn Rail done", "s4"),
    ]
    listed = {
        "values": [
            {"n": 1, "value": "Harrow & Pike Consulting"},
            {"n": 2, "value": "Severn Rail Partners"},
            {"n": 3, "value": "Severn Rail"},
        ]
    }
    now = work_out(CURRENT, listed, evidence, "en", None)
    assert now is not None
    assert now.answer == "Severn Rail (since 26 March 2024; before that Harrow & Pike Consulting)"
    before = work_out(BEFORE, listed, evidence, "en", None)
    assert before is not None and before.answer.startswith("Harrow & Pike Consulting (until 26 March 2024")
    german = work_out(CURRENT, listed, evidence, "de", None)
    assert german is not None and "seit 26 March 2024; davor Harrow" in german.answer
    # A value in a message a correction replaced is not read.
    evidence[1].superseded_by = "m:99"
    evidence[2].superseded_by = "m:98"
    assert work_out(CURRENT, listed, evidence, "en", None).answer == "Harrow & Pike Consulting"  # type: ignore[union-attr]


def test_the_users_own_words_outrank_the_assistants_restatement_the_same_day():
    evidence = [
        _hit(1, "2024-03-01T10:00:00", "I drive a 2019 Subaru Outback now", "s1"),
        _hit(2, "2024-03-01T10:01:00", "Your Honda is a good car", "s1", speaker="assistant"),
    ]
    listed = {"values": [{"n": 1, "value": "2019 Subaru Outback"}, {"n": 2, "value": "Honda"}]}
    assert work_out(CURRENT, listed, evidence, "en", "user").answer == "2019 Subaru Outback"  # type: ignore[union-attr]
    assert work_out(CURRENT, listed, evidence, "en", None).answer.startswith("Honda")  # type: ignore[union-attr]


def test_nothing_listed_leaves_the_question_to_the_model():
    assert work_out(COUNT, {"entries": []}, [], "en", None) is None
    assert work_out(CURRENT, {"values": []}, [], "en", None) is None
    assert not same_thing("Dawes Galaxy", "Genesis Croix de Fer") and same_thing("the Carrera", "Carrera hybrid")


def test_session_diverse_evidence_puts_each_sessions_best_first():
    hits = [_hit(1, None, "a", "s1"), _hit(2, None, "b", "s1"), _hit(3, None, "c", "s2"), _hit(4, None, "d", "s3")]  # type: ignore[arg-type]
    assert [h.id for h in session_diverse(hits)] == ["m:1", "m:3", "m:4", "m:2"]


def test_ask_counts_with_code_over_every_session_and_cites_what_it_counted(tmp_path):
    def responder(messages):
        if messages[0]["content"] == listing.COUNT_SYSTEM:
            return {
                "entries": [
                    {"n": _n(messages, "Dawes Galaxy"), "what": "Dawes Galaxy", "amount": "", "status": "counts"},
                    {"n": _n(messages, "Dawes Galaxy"), "what": "Carrera hybrid", "amount": "", "status": "counts"},
                    {
                        "n": _n(messages, "Genesis Croix"),
                        "what": "Genesis Croix de Fer",
                        "amount": "",
                        "status": "counts",
                    },
                    {"n": _n(messages, "stolen"), "what": "Carrera", "amount": "", "status": "gone"},
                ]
            }
        raise AssertionError("the answer prompt is not called when the listing is worked out")

    llm = ScriptedLLM(responder=responder)
    with _memory(tmp_path, llm) as mem:
        result = mem.ask("How many bikes do I have at the moment?")
    assert result.answer.startswith("2: Dawes Galaxy (7 January 2024), Genesis Croix de Fer (26 March 2024)")
    assert "Carrera hybrid (gone, 18 April 2024)" in result.answer and not result.refused
    assert {c.external_id for c in result.citations} >= {"s1", "s3", "s4"} or len(result.citations) >= 3
    assert result.details["tally"]["count"] == 2 and result.details["tally"]["prompt_version"] == listing.VERSION
    assert len(llm.calls) == 1 and "tally" in result.timings
    # The MCP ask tool and the JSON say what was counted.
    worked = ask_out(result).worked_out
    assert worked is not None and worked["count"] == 2
    assert [(t["what"], t["status"]) for t in worked["things"]][-1] == ("Carrera hybrid", "gone")
    assert result.to_dict()["details"]["tally"]["things"][0]["what"] == "Dawes Galaxy"


def test_ask_falls_back_to_the_answer_call_when_nothing_is_listed(tmp_path):
    replies = [{"values": []}, {"answer": "Severn Rail Partners", "supports": [1], "confidence": 0.9}]
    llm = ScriptedLLM(replies=replies)
    with _memory(tmp_path, llm) as mem:
        result = mem.ask("Where do I work now?")
    assert llm.calls[0][0]["content"] == listing.VALUES_SYSTEM and len(llm.calls) == 2
    assert result.answer == "Severn Rail Partners" and result.details["tally"]["answered_by"] == "model"


def test_ask_tally_off_leaves_every_question_to_the_answer_call(tmp_path):
    llm = ScriptedLLM(responder=lambda m: {"answer": "Severn Rail Partners", "supports": [1], "confidence": 0.9})
    mem = open_memory(
        tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=llm, config=Config(ask_tally="none")
    )
    with mem:
        for speaker, text, when, session in CHAT:
            mem.add(speaker, text, time=when, role=speaker, conversation=session)
        mem.ask("Where do I work now?")
    assert len(llm.calls) == 1 and "not in memory" in llm.calls[0][0]["content"]


def test_a_corrected_value_is_not_the_current_one(tmp_path):
    def responder(messages):
        # The model lists the replaced message's value too (it is in the evidence, marked).
        return {
            "values": [
                {"n": _n(messages, "Harrow"), "value": "Harrow & Pike Consulting"},
                {"n": _n(messages, "Severn Trent"), "value": "Severn Trent"},
                {"n": _n(messages, "Severn Rail Partners"), "value": "Severn Rail Partners"},
            ]
        }

    llm = ScriptedLLM(responder=responder)
    with open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=llm, config=ALL) as mem:
        mem.add("user", "I work at Harrow & Pike Consulting.", time="2024-02-06T21:00:00", role="user")
        wrong = mem.add("user", "Started at Severn Trent today, new job.", time="2024-04-15T08:00:00", role="user")
        mem.correct(f"m:{wrong.id}", "Started at Severn Rail Partners today, new job.")
        result = mem.ask("Where do I work now?")
    assert result.answer.startswith("Severn Rail Partners (since 15 April 2024; before that Harrow & Pike")
    assert "Severn Trent" not in result.answer


def test_a_count_reads_a_long_message_as_its_best_sentence_alone():
    from localmem.answer.excerpts import excerpted

    body = "We went to Cardiff. I rode the Chew Valley 200 audax on Sunday. It rained. Then we had tea."
    hit = _hit(1, "2024-08-13T07:45:00", body, "s11")
    starts = [body.index(s) for s in ("We went", "I rode", "It rained", "Then we")]
    parts = [(s, s + 5, score) for s, score in zip(starts, (0.1, 0.9, 0.2, 0.1))]
    assert excerpted(hit, parts).said == "We went to Cardiff. I rode the Chew Valley 200 audax on Sunday. It rained. …"
    assert excerpted(hit, parts, 0, 1).said == "… I rode the Chew Valley 200 audax on Sunday. …"


def test_the_value_at_a_time_the_question_names_is_the_latest_said_by_then(tmp_path):
    assert Question.parse("Where did I live in March 2024?", {}).kind == AT
    assert Question.parse("Where did Caroline go in March?", {}).kind is None  # not a state of "I"

    def responder(messages):
        lines = _items(messages)
        wanted = {"Lisbon": "Lisbon", "Leipzig": "Leipzig"}
        return {
            "values": [{"n": i, "value": v} for i, line in enumerate(lines, 1) for k, v in wanted.items() if k in line]
        }

    llm = ScriptedLLM(responder=responder)
    with open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=llm, config=ALL) as mem:
        mem.add("user", "I live in Lisbon, near the river.", time="2024-01-10T09:00:00", role="user")
        mem.add("user", "We moved to Leipzig yesterday!", time="2024-04-12T09:00:00", role="user")
        then = mem.ask("Where did I live in March 2024?")
        now = mem.ask("Where do I live now?")
    assert then.answer == "Lisbon (10 January 2024)" and then.details["tally"]["kind"] == AT
    assert now.answer == "Leipzig (since 12 April 2024; before that Lisbon)"


def test_a_count_of_a_time_that_has_ended_counts_what_was_said_by_its_end():
    evidence = [
        _hit(1, "2024-01-07T20:00:00", "Trek FX and a Brompton", "s1"),
        _hit(2, "2024-05-03T20:00:00", "sold the Brompton", "s2"),
        _hit(3, "2024-06-01T20:00:00", "new Ribble e-bike", "s3"),
    ]
    listed = {
        "entries": [
            {"n": 1, "what": "Trek FX", "amount": "", "status": "counts"},
            {"n": 1, "what": "Brompton", "amount": "", "status": "counts"},
            {"n": 2, "what": "Brompton", "amount": "", "status": "gone"},
            {"n": 3, "what": "Ribble e-bike", "amount": "", "status": "counts"},
        ]
    }
    april = work_out(COUNT, listed, evidence, "en", None, until=dt.date(2024, 4, 30))
    now = work_out(COUNT, listed, evidence, "en", None)
    assert april is not None and april.answer.startswith("2: Trek FX (7 January 2024), Brompton (7 January 2024)")
    assert now is not None and now.answer.startswith("2: Trek FX (7 January 2024), Ribble e-bike (1 June 2024)")
    assert Question.parse("How many bikes did I own in April 2024?", {}).kind == COUNT
    assert Question.parse("What was my half-marathon PB before the Leeds Half?", {}).kind == BEFORE
    assert Question.parse("How much was I paying in rent in June 2024?", {}).kind == AT
    assert Question.parse("¿Qué coche tenía en abril de 2024?", {}).kind == AT


def test_by_default_no_kind_is_worked_out_by_code_and_a_kind_turned_on_is(tmp_path):
    assert Config().ask_tally == "none"
    with pytest.raises(ConfigError, match="no question kind median"):
        settings()["ask_tally"].parse("count,median")
    replies = [
        {"answer": "£215", "supports": [1], "confidence": 0.9},
        {"entries": [{"n": 1, "what": "ABUS D-lock", "amount": "£95", "status": "counts"}]},
    ]
    llm = ScriptedLLM(replies=replies)
    with open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=llm) as mem:
        for speaker, text, when, session in CHAT:
            mem.add(speaker, text, time=when, role=speaker, conversation=session)
        plain = mem.ask("How much have I spent altogether on the lock?")
        mem.config = Config(ask_tally="sum")
        spent = mem.ask("How much have I spent altogether on the lock?")
    assert "not in memory" in llm.calls[0][0]["content"] and plain.answer == "£215"
    assert llm.calls[1][0]["content"] == listing.COUNT_SYSTEM and spent.answer.startswith("£95")


def test_a_state_at_a_time_named_is_asked_of_what_had_been_said_by_its_end(tmp_path):
    """By default (no listing), "where did I live in March 2024?" reads what had been said by
    the end of March, searched without the month's words: the January message that tells it,
    not the later move; a question about now still reads the move."""
    llm = ScriptedLLM(responder=lambda messages: {"answer": "x", "supports": [1], "confidence": 0.5})
    with open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=llm) as mem:
        mem.add("user", "I live in Lisbon, near the river.", time="2024-01-10T09:00:00", role="user")
        mem.add("user", "March in Lisbon: rain, and the trams on strike.", time="2024-03-20T09:00:00", role="user")
        mem.add("user", "We moved to Leipzig yesterday, I live there now!", time="2024-04-12T09:00:00", role="user")
        mem.ask("Where did I live in March 2024?", now="2024-11-01")
        then = "\n".join(_items(llm.calls[-1]))
        mem.ask("Where did I live in March 2024?", now="2024-11-01", as_of="2024-02-01")
        earlier = "\n".join(_items(llm.calls[-1]))
        mem.ask("Where do I live now?", now="2024-11-01")
        now = "\n".join(_items(llm.calls[-1]))
        mem.ask("Where do I live this year?", now="2024-11-01")  # a time not yet ended: no bound
        this_year = "\n".join(_items(llm.calls[-1]))
    assert "I live in Lisbon" in then and "Leipzig" not in then
    assert "I live in Lisbon" in earlier and "March in Lisbon" not in earlier  # the earlier bound holds
    assert "Leipzig" in now and "Leipzig" in this_year
