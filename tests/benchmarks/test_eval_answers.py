"""End-to-end evaluation: LoCoMo's scoring rules, and a scripted run over the tiny fixture."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localmem.errors import LocalmemError
from localmem_bench.answers import (
    bleu1,
    f1_score,
    locomo_answers,
    multi_f1,
    normalise,
    render_markdown,
    score,
)
from tests.conftest import FIXTURES
from tests.fakes import HashEmbedder, ScriptedLLM
from tests.helpers import store_config

FIXTURE = FIXTURES / "tiny_locomo.json"


def test_locomo_normalisation_and_token_f1():
    assert normalise("The cat, and a Dog!") == "cat dog"
    assert f1_score("running in the park", "ran in parks") == pytest.approx(2 / 3)  # run/ran differ
    assert f1_score("Adoption agencies", "adoption agency") == 1.0  # Porter stems both alike
    assert f1_score("Lisbon", "Oslo") == 0.0
    # multi-hop: every gold part gets its best predicted part
    assert multi_f1("pottery, painting", "painting, pottery, running") == pytest.approx(2 / 3)
    assert bleu1("7 May 2023", "7 May 2023") == 1.0 and bleu1("May", "7 May 2023") < 0.34
    assert score(5, "not in memory", "beagle", refused=True)["f1"] == 1.0
    assert score(5, "beagle", "beagle", refused=False)["f1"] == 0.0
    assert score(4, "not in memory", "Oslo", refused=True)["f1"] == 0.0
    assert score(3, "psychology", "Psychology; maybe counseling", refused=False)["f1"] == 1.0


def test_a_scripted_run_scores_every_category_and_refusals(tmp_path: Path):
    answers = {"puppy": "Biscuit", "pottery": "July 2023", "cat": "a beagle", "Cy": "not in memory"}

    def respond(messages):
        question = messages[-1]["content"].rsplit("Question:", 1)[1]
        said = next(v for k, v in answers.items() if k in question)
        items = messages[-1]["content"].count("\n[")
        return {"answer": said, "supports": list(range(1, min(items, 6) + 1)), "confidence": 0.8}

    llm = ScriptedLLM(responder=respond)
    config = store_config(db_path=tmp_path / "e.db")
    report = locomo_answers(FIXTURE, config, embedder=HashEmbedder(), llm=llm)
    rows = {r["category"]: r for r in report["rows"]}
    assert report["questions"] == 4 and set(rows) == {"2", "4", "5"}
    assert rows["4"]["f1"] == 0.5  # Biscuit right, Oslo refused
    assert rows["2"]["f1"] == 0.5  # "July 2023" against "June 2023": one token of two
    # "a beagle" for Ben's cat rests on Ana's words: refused as an answer about someone else.
    assert rows["5"]["f1"] == 1.0 and rows["5"]["refused"] == 1.0
    assert report["refusal"] == {"refusals": 2, "adversarial": 1, "precision": 0.5, "recall": 1.0, "f1": 0.6667}
    assert report["overall"]["n"] == 3
    detail = next(d for d in report["details"] if d["question"].startswith("What is the name"))
    assert detail["answer"] == "Biscuit" and detail["citations"] and detail["evidence_recall"] in (0.0, 1.0)
    assert detail["refusal"] is None
    # why each refusal happened: the model's own, or the someone-else check's
    reasons = {d["question"].split()[-1]: d["refusal"] for d in report["details"] if d["refused"]}
    # Ben asks about the breed ("What breed is Biscuit?"): his question is about the listener, so
    # the cat question is refused before the model is called
    assert sorted(reasons.values()) == ["asks about someone else", "model"], reasons
    # each conversation was answered in its own namespace, with "now" at its own last message
    namespaces = {json.dumps(c[-1]["content"].split("\n")[0]) for c in llm.calls}
    assert len(namespaces) == 2
    text = render_markdown(report)
    assert "| 4 single-hop | 2 | 50.0 |" in text and "Refusal on category 5" in text


def test_unknown_system_is_refused_before_anything_runs(tmp_path: Path):
    from localmem.errors import LocalmemError

    with pytest.raises(LocalmemError, match="unknown --system"):
        locomo_answers(FIXTURE, store_config(db_path=tmp_path / "e.db"), system="oracle")
    assert not (tmp_path / "e.db").exists()


def test_cli_eval_answers_writes_the_reports(tmp_path: Path, use_models):
    from localmem.cli import cli
    from tests.helpers import runner

    llm = ScriptedLLM(responder=lambda messages: {"answer": "not in memory", "supports": [], "confidence": 0.5})
    fake = HashEmbedder()
    use_models(embedder=fake, llm=llm)
    out = tmp_path / "out"
    result = runner().invoke(
        cli,
        ["--db", str(tmp_path / "e.db"), "eval", "locomo", str(FIXTURE), "--system", "raw-hybrid", "--out", str(out)],
    )
    assert result.exit_code == 0, result.output
    assert "system `raw-hybrid`" in result.stdout and "| 5 adversarial | 1 | 100.0 |" in result.stdout
    saved = json.loads((out / "answers.json").read_text())
    assert saved["refusal"]["recall"] == 1.0 and saved["refusal"]["precision"] == 0.25
    assert (out / "answers.md").read_text() == render_markdown(saved)


def test_a_baseline_runs_plain_unless_given_the_ask_filters(tmp_path: Path):
    def respond(messages):
        return {"answer": "a beagle", "supports": [1], "confidence": 0.8}

    def run(system: str, **kw):
        llm = ScriptedLLM(responder=respond)
        report = locomo_answers(
            FIXTURE,
            store_config(db_path=tmp_path / f"{system}{kw}.db"),
            conversations=["tiny-1"],
            embedder=HashEmbedder(),
            llm=llm,
            system=system,
            **kw,
        )
        cat = next(d for d in report["details"] if d["category"] == 5)
        prompt = next((c[-1]["content"] for c in llm.calls if "Ben's cat" in c[-1]["content"]), None)
        return report, cat, prompt

    plain, cat, prompt = run("raw-hybrid")
    # No focus on Ben (Ana's messages are shown) and no someone-else check: the answer stands.
    assert (plain["ask_focus"], plain["ask_check"]) == (False, False) and not cat["refused"]
    assert plain["ask_rules_off"] == "asks_about_someone_else,someone_else"  # the check, by its rules
    assert (
        prompt is not None and "Ana: A beagle" in prompt and "focus on the person asked off" in render_markdown(plain)
    )
    filtered, cat, prompt = run("raw-hybrid", ask_filters=True)
    assert (filtered["ask_focus"], filtered["ask_check"]) == (True, True) and cat["refused"]
    # refused before the model: Ben only asks about the breed ("What breed is Biscuit?")
    assert cat["refusal"] == "asks about someone else" and prompt is None
    own, cat, _ = run("localmem")
    assert (own["ask_focus"], own["ask_check"]) == (True, True) and cat["refused"]


def test_every_nth_question_is_a_sample_of_each_conversation(tmp_path: Path):
    llm = ScriptedLLM(responder=lambda messages: {"answer": "not in memory", "supports": [], "confidence": 0.1})
    config = store_config(db_path=tmp_path / "e.db")
    every_one = locomo_answers(FIXTURE, config, embedder=HashEmbedder(), llm=llm)
    every_two = locomo_answers(FIXTURE, config, embedder=HashEmbedder(), llm=llm, every=2)
    questions = [d["question"] for d in every_one["details"]]
    # the first, third, ... question of each conversation, in order
    taken = [d["question"] for d in every_two["details"]]
    assert taken and len(taken) < len(questions) and every_two["every"] == 2
    for conversation in {d["conversation"] for d in every_one["details"]}:
        own = [d["question"] for d in every_one["details"] if d["conversation"] == conversation]
        assert [q for q in taken if q in own] == own[::2]
    with pytest.raises(LocalmemError, match="--every"):
        locomo_answers(FIXTURE, config, embedder=HashEmbedder(), llm=llm, every=0)
