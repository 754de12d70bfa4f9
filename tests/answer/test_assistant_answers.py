"""Answers for a personal assistant (issue 22): facts that change, who "I" and "you" are, date
questions counted by rules, and the answer check. Scripted models; the real model's figures are
in docs/results.md and the evaluation set (evals/assistant)."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest

from localmem import Config
from localmem.cli import cli
from localmem.prompts import answer as answer_prompt
from localmem.retrieval.query_time import asks_present
from localmem.retrieval.search import newest_first
from localmem.types import Hit
from tests.fakes import HashEmbedder, ScriptedLLM
from tests.helpers import open_memory, runner, write_jsonl

# One user-assistant history in which four things change: a job, a home, a relationship, and
# a preference that changes and changes back. Each statement is on its own day.
CHANGES = [
    ("2024-01-10T09:00", "user", "I work at Harrow & Pike Consulting as a structural engineer."),
    ("2024-01-10T09:01", "assistant", "Noted: you work at Harrow & Pike Consulting."),
    ("2024-02-03T18:00", "user", "I live in Porto, in a flat near the river."),
    ("2024-02-20T08:30", "user", "I drink tea every morning, green tea mostly."),
    ("2024-03-05T20:00", "user", "My girlfriend Ines and I have been dating for two years."),
    ("2024-04-15T09:00", "user", "First day at Severn Rail Partners today: I work there now."),
    ("2024-05-02T19:00", "user", "We moved: I live in Lisbon now, in Alfama."),
    ("2024-05-20T07:45", "user", "I switched to coffee every morning, a flat white."),
    ("2024-06-08T21:00", "user", "Ines said yes! We are engaged, she is my fiancee."),
    ("2024-07-30T07:50", "user", "Back to tea every morning: green tea again, coffee kept me up."),
]


def _history(path: Path) -> Path:
    return write_jsonl(
        path,
        [{"conversation": "chat", "time": t, "role": role, "speaker": role, "text": text} for t, role, text in CHANGES],
    )


@pytest.fixture
def chat(tmp_path):
    with open_memory(tmp_path / "m.db", namespace="me", embedder=HashEmbedder()) as mem:
        mem.ingest(_history(tmp_path / "chat.jsonl"))
        yield mem


def _messages(hits: list[Hit]) -> list[str]:
    return [h.text for h in hits if h.kind == "message"]


@pytest.mark.parametrize(
    "question, newest, older",
    [
        ("Where do I work now?", "Severn Rail Partners", "Harrow & Pike"),
        ("Where do I live these days?", "Lisbon", "Porto"),
        ("What's my relationship with Ines now?", "engaged", "dating"),
        ("What do I drink every morning at the moment?", "Back to tea", "switched to coffee"),
    ],
)
def test_a_question_about_the_present_gets_the_newest_statement_first(chat, question, newest, older):
    assert asks_present(question)
    texts = _messages(chat.search(question, k=5))
    first_new = next(i for i, t in enumerate(texts) if newest in t)
    first_old = next((i for i, t in enumerate(texts) if older in t), len(texts))
    assert first_new < first_old, texts


def test_a_question_about_before_keeps_the_ranking(chat):
    question = "Which company did I work for before my current job?"
    assert not asks_present(question)
    plain = chat.search(question, k=5)
    chat.config = Config(present_first=0)
    assert [h.id for h in chat.search(question, k=5)] == [h.id for h in plain]


def test_present_first_reorders_only_the_dated_hits_of_the_head():
    def hit(i: int, time: str | None) -> Hit:
        return Hit(id=f"m:{i}", kind="message", text=str(i), score=1.0, channels={}, time=time)

    hits = [hit(1, "2024-01-01"), hit(2, None), hit(3, "2024-03-01"), hit(4, "2024-02-01"), hit(5, "2025-01-01")]
    assert [h.id for h in newest_first(hits, 4)] == ["m:3", "m:2", "m:4", "m:1", "m:5"]


def test_the_prompt_says_a_later_item_replaces_an_earlier_one():
    assert "the later item replaces the earlier one" in answer_prompt.SYSTEM
    assert answer_prompt.VERSION == "answer-v6"


def _replying(answer: str, supports: list[int]):
    return lambda messages: {"answer": answer, "supports": supports, "confidence": 0.9}


def test_in_a_user_assistant_chat_the_prompt_says_who_i_and_you_are(tmp_path):
    llm = ScriptedLLM(responder=_replying("Lisbon", [1]))
    with open_memory(
        tmp_path / "m.db", namespace="me", embedder=HashEmbedder(), llm=llm, config=Config(user_name="Sam")
    ) as mem:
        mem.ingest(_history(tmp_path / "chat.jsonl"))
        result = mem.ask("Where do I live now?")
    user_turn = llm.calls[0][-1]["content"]
    assert 'Sam is the user asking: "I", "me", "my" and "we" in the question mean Sam' in user_turn
    assert '"you" means assistant' in user_turn
    items = [line for line in user_turn.splitlines() if line.startswith("[")]
    assert items and not any(" - user: " in line for line in items)
    assert any(" - Sam: " in line for line in items)
    assert result.citations and all(c.speaker == "Sam" for c in result.citations if c.speaker != "assistant")


def test_without_a_user_name_the_user_is_called_as_the_history_calls_them(tmp_path):
    llm = ScriptedLLM(responder=_replying("Lisbon", [1]))
    with open_memory(tmp_path / "m.db", namespace="me", embedder=HashEmbedder(), llm=llm) as mem:
        mem.ingest(_history(tmp_path / "chat.jsonl"))
        mem.ask("Where do I live now?")
    assert "user is the user asking" in llm.calls[0][-1]["content"]


def test_a_chat_between_two_people_has_no_who_line(tmp_path):
    llm = ScriptedLLM(responder=_replying("Oslo", [1]))
    rows = [
        {"conversation": "c", "time": "2024-01-01T10:00", "speaker": "Ann", "text": "I moved to Oslo."},
        {"conversation": "c", "time": "2024-01-01T10:01", "speaker": "Ben", "text": "Nice, Oslo is lovely."},
    ]
    with open_memory(tmp_path / "m.db", embedder=HashEmbedder(), llm=llm) as mem:
        mem.ingest(write_jsonl(tmp_path / "c.jsonl", rows))
        mem.ask("Where did Ann move?")
    assert "is the user asking" not in llm.calls[0][-1]["content"]


def test_the_cli_takes_the_user_name(tmp_path, use_models):
    llm = ScriptedLLM(responder=_replying("Lisbon", [1]))
    use_models(embedder=HashEmbedder(), llm=llm)
    db = tmp_path / "m.db"
    assert (
        runner().invoke(cli, ["--db", str(db), "-n", "me", "ingest", str(_history(tmp_path / "c.jsonl"))]).exit_code
        == 0
    )
    done = runner().invoke(
        cli, ["--db", str(db), "-n", "me", "ask", "Where do I live now?", "--user-name", "Sam", "--json"]
    )
    assert done.exit_code == 0, done.output
    assert "Sam is the user asking" in llm.calls[-1][-1]["content"]


# -- dates worked out by rules ------------------------------------------------------------------

DATED = [
    ("2024-01-22T10:00", "user", "We adopted our dog Pilchard today from the shelter."),
    ("2024-03-25T12:00", "user", "Severn Rail offered me the job this morning."),
    ("2024-04-15T09:00", "user", "First day at my new job at Severn Rail today."),
]


def _dated(tmp_path: Path, llm: ScriptedLLM, **config):
    mem = open_memory(
        tmp_path / "m.db", namespace="me", embedder=HashEmbedder(), llm=llm, config=Config(ask_focus=False, **config)
    )
    mem.ingest(
        write_jsonl(
            tmp_path / "d.jsonl",
            [{"conversation": "d", "time": t, "role": r, "speaker": r, "text": x} for t, r, x in DATED],
        )
    )
    return mem


def _numbers(messages: list[dict], *needles: str) -> list[int]:
    """The item numbers of the prompt's evidence lines holding each needle."""
    lines = [line for line in messages[-1]["content"].splitlines() if line.startswith("[")]
    return [next(int(line[1 : line.index("]")]) for line in lines if needle in line) for needle in needles]


def test_a_days_between_question_is_counted_by_the_rules_from_the_cited_items(tmp_path):
    def responder(messages):
        return {"answer": "about 3 months", "supports": _numbers(messages, "adopted", "First day"), "confidence": 0.7}

    with _dated(tmp_path, ScriptedLLM(responder=responder)) as mem:
        result = mem.ask("How many days after we adopted Pilchard did I start my new job?", now="2024-09-24")
    assert result.answer.startswith("84 days") and not result.refused
    worked = result.details["dates"]
    assert worked["rule"] == "between" and worked["model_answer"] == "about 3 months"
    assert worked["arithmetic"].endswith("= 84 days = 84 whole days")
    assert [e["day"] for e in worked["events"]] == ["2024-01-22", "2024-04-15"]
    assert "check" not in result.details  # the rules are the check


def test_an_event_the_model_left_uncited_is_counted_and_cited(tmp_path):
    def responder(messages):  # cites the adoption only
        return {"answer": "about 3 months", "supports": _numbers(messages, "adopted"), "confidence": 0.7}

    with _dated(tmp_path, ScriptedLLM(responder=responder)) as mem:
        result = mem.ask("How many days after we adopted Pilchard did I start my new job?", now="2024-09-24")
    assert result.answer.startswith("84 days") and not result.refused
    assert [c.text for c in result.citations] == [DATED[0][2], DATED[2][2]]


def test_a_weeks_ago_question_counts_from_now(tmp_path):
    def responder(messages):
        return {"answer": "a while ago", "supports": _numbers(messages, "offered"), "confidence": 0.7}

    with _dated(tmp_path, ScriptedLLM(responder=responder)) as mem:
        result = mem.ask("How many weeks ago did Severn Rail offer me the job?", now="2024-09-24")
    assert result.answer.startswith("26 weeks"), result  # 25 March to 24 September: 183 days
    assert result.details["dates"]["rule"] == "ago"


def test_a_refusal_is_not_turned_into_a_count(tmp_path):
    with _dated(tmp_path, ScriptedLLM(responder=_replying("not in memory", []))) as mem:
        result = mem.ask("How many days ago did I sell my car?", now="2024-09-24")
    assert result.refused and "dates" not in result.details


# -- the answer check -------------------------------------------------------------------------


def _judge(p_by_line: dict[str, float], default: float = 0.02):
    """P(yes) by the evidence lines the check asks about (its item numbers, read back from the
    answer prompt it continues): the P of the first needle found in them."""

    def judge(prompts):
        out = []
        for prompt in prompts:
            lines = {int(m.group(1)): m.group(2) for m in re.finditer(r"^\[(\d+)\] (.*)$", prompt[1]["content"], re.M)}
            asked = " ".join(lines[int(n)] for n in re.findall(r"\[(\d+)\]", prompt[-1]["content"]))
            out.append(next((p for needle, p in p_by_line.items() if needle in asked), default))
        return out

    return judge


def test_the_answer_is_not_checked_by_the_model_after_it_is_written(tmp_path):
    # The check after the model is gone (docs/decisions.md#no-answer-check): a model that can
    # judge is never asked to, and a reply no item states is returned as the model gave it.
    llm = ScriptedLLM(
        responder=lambda m: {"answer": "Bristol", "supports": _numbers(m, "adopted"), "confidence": 0.8},
        judge=_judge({}),
    )
    with _dated(tmp_path, llm) as mem:
        result = mem.ask("Which city did we adopt Pilchard in?")
    assert result.answer == "Bristol" and "check" not in result.details and not llm.judged


def test_dates_module_counts_whole_units():
    from localmem.answer.dates import DateQuestion, work_out

    hits = [
        Hit(
            id="m:1",
            kind="message",
            text="user: We adopted Pilchard today.",
            score=1.0,
            channels={},
            time="2024-02-29T10:00",
        ),
        Hit(
            id="m:2",
            kind="message",
            text="user: I started the new job today.",
            score=1.0,
            channels={},
            time="2025-02-28T10:00",
        ),
    ]
    worked = work_out(
        DateQuestion("between", "years", ("adopted Pilchard", "started the new job")), hits, dt.date(2025, 3, 1)
    )
    # 29 February to 28 February of the next year is one whole year (times.years_between)
    assert worked is not None and worked.answer.startswith("1 year (29 February 2024 to 28 February 2025)")
    assert worked.arithmetic == "28 February 2025 − 29 February 2024 = 365 days = 1 whole years"
