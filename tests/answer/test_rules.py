"""The answer stage's rules: named, each turned off by name, each reading only the languages
it declares, and the question read once per ask. Fixture: tests/fixtures/answering/."""

from __future__ import annotations

from pathlib import Path

import pytest

from localmem.answer import question as question_mod
from localmem.answer.rules import AFTER, BEFORE, RULES
from localmem.config import ANSWER_RULES, Config
from localmem.errors import ConfigError
from localmem.types import Refusal
from tests.fakes import HashEmbedder, ScriptedLLM
from tests.helpers import open_memory

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "answering" / "conversations.json"


def _memory(tmp_path, llm, namespace="nora-sam", **config):
    mem = open_memory(tmp_path / "m.db", namespace=namespace, embedder=HashEmbedder(), llm=llm, config=Config(**config))
    mem.ingest(FIXTURE, format="locomo")
    return mem


def _citing(answer, *needles):
    """A model answering ``answer``, citing the prompt items that say one of ``needles``."""

    def respond(messages):
        items = [line for line in messages[-1]["content"].splitlines() if line.startswith("[")]
        cited = [n for n, line in enumerate(items, 1) if any(needle in line for needle in needles)]
        return {"answer": answer, "supports": cited, "confidence": 0.9}

    return respond


def test_every_rule_is_declared_once_and_refuses_with_the_reason_named_after_it():
    assert tuple(r.name for r in RULES) == ANSWER_RULES and [r.name for r in BEFORE] == ["asks_about_someone_else"]
    refusing = {"asks_about_someone_else", "refusal_phrases", "someone_else", "image_description", "no_citation"}
    for name in refusing:
        assert Refusal[name.upper()] in Refusal  # the refusal reason each of them gives
    assert str(Refusal.NO_CITATION) == "no citation" and Refusal.REFUSAL_PHRASES is Refusal.MODEL
    assert all(r.doc and r.languages for r in AFTER)


def test_a_rule_turned_off_by_name_does_not_run(tmp_path):
    question = "What is Sam's favourite football team?"
    with _memory(tmp_path, ScriptedLLM(responder=_citing("Arsenal"))) as mem:
        on = mem.ask(question)
    assert on.refused and on.refusal == Refusal.NO_CITATION and on.unsupported == "Arsenal"
    with _memory(tmp_path, ScriptedLLM(responder=_citing("Arsenal")), ask_rules_off="no_citation") as mem:
        off = mem.ask(question)
    assert not off.refused and off.answer == "Arsenal" and off.citations == []


def test_another_way_of_saying_not_known_is_a_refusal_unless_that_rule_is_off(tmp_path):
    said = "It is not mentioned in the conversation."
    with _memory(tmp_path, ScriptedLLM(responder=_citing(said, "Lisbon"))) as mem:
        on = mem.ask("Where did Nora go to university?")
    assert on.refused and on.refusal == "model" and on.to_dict()["refusal"] == "model"
    with _memory(
        tmp_path, ScriptedLLM(responder=_citing(said, "Lisbon")), ask_rules_off="refusal_phrases, image_description"
    ) as mem:
        off = mem.ask("Where did Nora go to university?")
    assert not off.refused and off.answer == said


def test_the_rules_off_setting_names_rules_that_exist(tmp_path):
    load = Config.load
    assert load({}, env={"LOCALMEM_ASK_RULES_OFF": "no_citation,someone_else"}, config_file=tmp_path / "no.toml")
    with pytest.raises(ConfigError, match="no rule named no_such_rule"):
        load({}, env={"LOCALMEM_ASK_RULES_OFF": "no_such_rule"}, config_file=tmp_path / "no.toml")


def test_an_english_rule_does_not_read_a_question_in_another_language(tmp_path):
    # Jonas ran the marathon; the question asks about Lena, and the model answers with his words
    # citing hers. In English the rule someone_else refuses it; a German question it does not read.
    llm = ScriptedLLM(responder=_citing("in vier Stunden", "Obst"))
    with _memory(tmp_path, llm, namespace="lena-jonas") as mem:
        english = mem.ask("How fast did Lena run the Marathon?")
        german = mem.ask("Wie schnell ist Lena den Marathon gelaufen?")
    assert english.refused and english.refusal == Refusal.SOMEONE_ELSE
    assert not german.refused and german.answer == "in vier Stunden" and len(llm.calls) == 2


def test_the_question_is_read_once_an_ask(tmp_path, monkeypatch):
    read = []
    parse = question_mod.Question.parse.__func__  # type: ignore[attr-defined]

    def counted(cls, text, speakers, language=None):
        read.append(text)
        return parse(cls, text, speakers, language)

    monkeypatch.setattr(question_mod.Question, "parse", classmethod(counted))
    with _memory(tmp_path, ScriptedLLM(responder=_citing("Lisbon", "Lisbon"))) as mem:
        result = mem.ask("Where did Nora move for her new job?")
    assert read == ["Where did Nora move for her new job?"] and result.answer == "Lisbon"


@pytest.mark.models
def test_every_rule_changes_an_answer_of_the_fixture(tmp_path):
    """evals/answer_rules.py on the fixture, with the real embedder: a rule that changed nothing
    there would have nothing to show for itself (docs/answering.md)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "evals"))
    try:
        import answer_rules
    finally:
        sys.path.pop(0)
    offs = [(name,) for name in ANSWER_RULES] + [("asks_about_someone_else", "someone_else")]
    samples = answer_rules.load([FIXTURE])
    rows = answer_rules.measure(tmp_path / "fixture.db", Config(), samples, 1, offs)
    changed = {off[0]: answer_rules.scores(rows, off)["changed"] for off in offs[:-1]}
    assert all(changed.values()), changed
    every = answer_rules.scores(rows, ())
    assert every["refusal_f1"] > answer_rules.scores(rows, offs[-1])["refusal_f1"]
