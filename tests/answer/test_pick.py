"""ask_pick: the LLM picks among the first candidates, and the picked go first into the budget."""

from __future__ import annotations

from dataclasses import replace

import pytest

from localmem.answer.pick import MAX_WORDS, candidate_line, pick
from localmem.config import Config
from localmem.errors import ConfigError
from localmem.prompts import pick as prompt
from localmem.types import Hit
from tests.fakes import ScriptedLLM
from tests.helpers import open_memory


def _hits(n: int) -> list[Hit]:
    return [
        Hit(f"m:{i}", "message", f"Ann: message number {i}", 1.0 / i, {}, "2023-05-08T10:00:00")
        for i in range(1, n + 1)
    ]


def _choosing(p: dict[str, float]):
    """A fake chooser: ``p`` by label, every other label 0."""
    return lambda messages, labels: [p.get(label, 0.0) for label in labels]


def test_picked_candidates_go_first_and_the_rest_keep_the_search_order():
    hits = _hits(12)
    # Of 10 shown, a share of at least 2/10 is picked: E (0.5) then C (0.3); A's 0.1 is not.
    llm = ScriptedLLM(choose=_choosing({"A": 0.1, "C": 0.3, "E": 0.5, "G": 0.05}))
    out = pick(llm, "What did Ann say?", hits, 10)
    assert [h.id for h in out.hits] == ["m:5", "m:3", "m:1", "m:2", "m:4", "m:6", "m:7", "m:8", "m:9", "m:10"] + [
        "m:11",
        "m:12",
    ]
    assert out.report["picked"] == ["m:5", "m:3"] and out.report["candidates"] == 10
    assert out.report["version"] == prompt.VERSION and len(out.report["p"]) == 10
    (messages,) = llm.chosen
    assert messages[0] == {"role": "system", "content": prompt.SYSTEM}  # the fixed prefix, first
    body = messages[1]["content"]
    assert "A. 8 May 2023 - Ann: message number 1" in body and "K. 8 May 2023 - Ann: message number 10" in body
    assert "message number 11" not in body and body.endswith("Reply with its letter only.")


def test_shares_are_of_the_labels_mass_so_a_diffident_model_still_picks():
    # Only 0.05 of the mass is on the labels, all of it on B: B is the model's pick.
    out = pick(ScriptedLLM(choose=_choosing({"B": 0.05})), "q?", _hits(5), 20)
    assert [h.id for h in out.hits] == ["m:2", "m:1", "m:3", "m:4", "m:5"] and out.report["candidates"] == 5


def test_an_undecided_model_changes_nothing():
    hits = _hits(8)
    out = pick(ScriptedLLM(), "q?", hits, 20)  # every label alike: none reaches twice its share
    assert out.hits == hits and out.report["picked"] == []
    assert pick(ScriptedLLM(choose=_choosing({})), "q?", hits, 20).hits == hits  # no mass at all


def test_one_candidate_is_not_asked_about():
    llm = ScriptedLLM()
    assert pick(llm, "q?", _hits(1), 20).hits == _hits(1) and llm.chosen == []


def test_a_backend_without_next_token_probabilities_is_a_config_error():
    class NoChooser:
        model_id = "server"

        def complete_json(self, *args, **kwargs):
            raise AssertionError("not called")

    with pytest.raises(ConfigError, match="ask_pick needs next-token probabilities.*server"):
        pick(NoChooser(), "q?", _hits(3), 20)


def test_a_long_candidate_is_cut_and_labels_are_limited():
    long = Hit("m:1", "message", "Ann: " + "word " * 200, 1.0, {}, None)
    line = candidate_line(long)
    assert len(line.split()) == MAX_WORDS + 1 and line.endswith("…")
    with pytest.raises(ValueError, match="at most 25"):
        prompt.render("q?", ["x"] * 26)
    assert len(set(prompt.LABELS)) == 25 and "I" not in prompt.LABELS


def test_the_setting_is_checked():
    with pytest.raises(ConfigError, match="ask_pick"):
        Config.load(env={"LOCALMEM_ASK_PICK": "26"})


def test_ask_gives_the_model_the_picked_message_the_budget_would_have_cut(tmp_path, embedder):
    def respond(messages):
        return {"answer": "Lisbon", "confidence": 0.9, "supports": [1]}

    def choose(messages, labels):  # the candidate about Lisbon
        lines = messages[1]["content"].split("\n")
        return [
            0.9 if any(line.startswith(f"{label}. ") and "Lisbon" in line for line in lines) else 0.001
            for label in labels
        ]

    def asked(pick_n: int):
        llm = ScriptedLLM(responder=respond, choose=choose)
        config = replace(Config(), ask_pick=pick_n, ask_max_tokens=12)  # one message fits (words, as the fake counts)
        with open_memory(tmp_path / f"m{pick_n}.db", namespace="t", embedder=embedder, llm=llm, config=config) as mem:
            for day in range(1, 9):
                mem.add(
                    "Priya",
                    f"Where did Priya move for work? day {day}",
                    f"2023-05-0{day}T10:00:00",
                )
            mem.add("Priya", "I got the offer from the Lisbon design studio", "2023-05-09T10:00:00")
            return mem.ask("Where did Priya move for work?", now="2023-05-10"), llm

    off, off_llm = asked(0)
    on, on_llm = asked(20)
    assert off_llm.chosen == [] and "pick" not in off.details and "pick" not in off.timings
    assert not any("Lisbon" in h.text for h in off.evidence)  # the search ranks it below the budget
    assert len(on_llm.chosen) == 1 and [h.text for h in on.evidence] == [
        "Priya: I got the offer from the Lisbon design studio"
    ]
    assert on.details["pick"]["picked"] == [on.evidence[0].id] and on.timings["pick"] >= 0
