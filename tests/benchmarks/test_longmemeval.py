"""LongMemEval end to end: each haystack in its own namespace, now = the question date, answers
scored by containing the gold answer and token F1, abstention right when refused."""

from __future__ import annotations

import json
from pathlib import Path

from localmem_bench.longmemeval import (
    contains,
    longmemeval_answers,
    render_markdown,
)
from tests.benchmarks.test_evaluate import LONGMEMEVAL
from tests.fakes import HashEmbedder, ScriptedLLM
from tests.helpers import store_config


def test_contains_reads_the_gold_answer_as_people_write_it():
    assert contains("You adopted a beagle.", "beagle")
    assert contains("It was three days ago", "3 days")
    assert contains("84 days", "84 days (22 January to 15 April 2024)")
    assert contains("Rome and Oslo", "Oslo and Rome")  # every gold word, in any order
    assert not contains("Oslo", "Oslo and Rome")
    assert not contains("not in memory", "beagle")
    assert contains("£7,500", "About £7,500 (around half of the budget)")  # a hedge is not content
    assert not contains("£7,000", "About £7,500")
    # A number is read with its unit: the words of "13 days" are in this answer, not the count.
    assert not contains("2 days (11 August 2024 to 13 August 2024)", "13 days (11 August to 24 August 2024)")
    assert contains("13 July 2024", "July 13, 2024") and not contains("13 July 2023", "July 13, 2024")


def _responder(messages):
    prompt = messages[-1]["content"]
    if "breed" in prompt:
        return {"answer": "A beagle", "supports": [1], "confidence": 0.9}
    if "cities" in prompt:
        return {"answer": "Oslo", "supports": [1], "confidence": 0.6}
    return {"answer": "not in memory", "supports": [], "confidence": 0.2}


def test_longmemeval_answers_each_item_in_its_namespace_at_its_date(tmp_path: Path):
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(LONGMEMEVAL))
    llm = ScriptedLLM(responder=_responder)
    report = longmemeval_answers(path, store_config(db_path=tmp_path / "e.db"), embedder=HashEmbedder(), llm=llm)
    by_id = {d["question_id"]: d for d in report["details"]}
    assert by_id["q1"]["right"] == 1.0 and by_id["q1"]["now"] == "2023-06-01"
    assert by_id["q2"]["right"] == 0.0 and 0 < by_id["q2"]["f1"] < 1  # half the gold
    assert by_id["q3_abs"]["abstention"] and by_id["q3_abs"]["refused"] and by_id["q3_abs"]["right"] == 1.0
    assert report["refusal"]["recall"] == 1.0 and report["overall"]["n"] == 3
    # The model saw only its own item's haystack: q1's prompt names Rex, never Oslo.
    q1_prompt = next(c[-1]["content"] for c in llm.calls if "breed" in c[-1]["content"])
    assert "Rex" in q1_prompt and "Oslo" not in q1_prompt
    assert "Today is 1 June 2023" in q1_prompt or "1 June 2023" in q1_prompt
    assert "| **all** | 3 |" in render_markdown(report)


def test_items_with_the_same_haystack_share_one_namespace_built_once(tmp_path: Path):
    # q1 asked again over the same sessions (has_answer marks differ), and q2 over its own.
    again = json.loads(json.dumps(LONGMEMEVAL[0]))
    again.update(question_id="q1-again", question="What is my dog's breed?")
    again["haystack_sessions"][0][0]["has_answer"] = True
    path = tmp_path / "lme.json"
    path.write_text(json.dumps([LONGMEMEVAL[0], again, LONGMEMEVAL[1]]))
    llm = ScriptedLLM(responder=_responder)
    config = store_config(db_path=tmp_path / "e.db")
    report = longmemeval_answers(path, config, embedder=HashEmbedder(), llm=llm)
    assert [d["right"] for d in report["details"]] == [1.0, 1.0, 0.0]
    from localmem import Memory

    with Memory(tmp_path / "e.db", config=config, embedder=HashEmbedder()) as mem:
        names = {n.namespace: n.messages for n in mem.namespaces()}
    assert names == {"q1": 4, "q2": 3}  # q1-again read q1's store; nothing was stored twice
    # Each question still saw only its own haystack.
    for call in llm.calls:
        prompt = call[-1]["content"]
        assert not ("Rex" in prompt and "Oslo" in prompt)


def test_a_shared_haystack_keeps_its_namespace_whichever_questions_are_asked(tmp_path: Path):
    again = json.loads(json.dumps(LONGMEMEVAL[0]))
    again.update(question_id="q1-again")
    path = tmp_path / "lme.json"
    path.write_text(json.dumps([LONGMEMEVAL[0], again]))
    config = store_config(db_path=tmp_path / "e.db")
    report = longmemeval_answers(
        path, config, questions=["q1-again"], embedder=HashEmbedder(), llm=ScriptedLLM(responder=_responder)
    )
    assert report["details"][0]["right"] == 1.0
    from localmem import Memory

    with Memory(tmp_path / "e.db", config=config, embedder=HashEmbedder()) as mem:
        assert [n.namespace for n in mem.namespaces()] == ["q1"]
