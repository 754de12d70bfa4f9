"""``as_of``: search and ask with what was known then, tested both ways (as Hindsight's
supersession benchmark does): a value said later is found after it was said, and not before."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from localmem.cli import cli
from localmem.config import Config
from localmem.errors import LocalmemError
from localmem.retrieval.filters import as_of_bound
from tests.fakes import HashEmbedder, ScriptedLLM
from tests.helpers import open_memory, runner

MOVES = [
    ("Noor", "I live in Lisbon, in a flat near the river.", "2024-01-10T09:00:00"),
    ("Noor", "We moved to Leipzig last week, the new flat is lovely.", "2024-03-12T09:00:00"),
    ("Noor", "Leipzig in spring: the flat has a balcony now.", "2024-05-02T09:00:00"),
]


def _memory(path, llm=None):
    config = Config(ask_tally="current")  # the current value is read from the model's listing
    mem = open_memory(path, namespace="t", embedder=HashEmbedder(), llm=llm or ScriptedLLM(), config=config)
    for speaker, text, when in MOVES:
        mem.add(speaker, text, time=when)
    return mem


def test_a_value_is_found_after_it_was_said_and_not_before(tmp_path):
    with _memory(tmp_path / "m.db") as mem:
        before = mem.search("Where does Noor live? flat Leipzig Lisbon", as_of="2024-03-01")
        after = mem.search("Where does Noor live? flat Leipzig Lisbon", as_of="2024-03-12")
    assert before and all("Leipzig" not in h.text for h in before)
    assert any("moved to Leipzig" in h.text for h in after)
    assert all("balcony" not in h.text for h in after)  # said on 2 May: not known on 12 March


def test_ask_as_of_reads_only_what_was_known_and_counts_from_that_day(tmp_path):
    llm = ScriptedLLM(responder=lambda m: {"values": [{"n": 1, "value": "Lisbon"}]})
    with _memory(tmp_path / "m.db", llm) as mem:
        result = mem.ask("Where does Noor live now?", as_of=dt.date(2024, 2, 1))
    prompt = llm.calls[0][-1]["content"]
    assert "Today is 1 February 2024." in prompt and "Leipzig" not in prompt
    assert result.answer == "Lisbon" and result.today == "1 February 2024"


def test_as_of_takes_the_earlier_of_itself_and_until_and_says_what_is_wrong():
    assert as_of_bound("2024-05-01", "2024-03-01") == ("2024-03-01", dt.date(2024, 3, 1))
    assert as_of_bound("2024-02-01", "2024-03-01") == ("2024-02-01", dt.date(2024, 3, 1))
    assert as_of_bound(None, None) == (None, None)
    with pytest.raises(LocalmemError, match="--as-of"):
        as_of_bound(None, "the day after the party")


def test_the_cli_searches_and_asks_as_of_a_date(tmp_path, use_models):
    llm = ScriptedLLM(responder=lambda m: {"answer": "Lisbon", "supports": [1], "confidence": 0.9})
    use_models(embedder=HashEmbedder(), llm=llm)
    db = tmp_path / "m.db"
    _memory(db).close()
    found = runner().invoke(
        cli,
        ["--db", str(db), "-n", "t", "search", "Leipzig flat", "--as-of", "2024-03-01", "--json"],
        catch_exceptions=False,
    )
    assert found.exit_code == 0, found.output
    assert all("Leipzig" not in h["text"] for h in json.loads(found.output)["hits"])
    asked = runner().invoke(
        cli,
        ["--db", str(db), "-n", "t", "ask", "Where does Noor live now?", "--as-of", "2024-02-01", "--local", "--json"],
        catch_exceptions=False,
    )
    assert asked.exit_code == 0, asked.output
    assert json.loads(asked.output)["answer"] == "Lisbon" and "Leipzig" not in llm.calls[-1][-1]["content"]
    bad = runner().invoke(cli, ["--db", str(db), "-n", "t", "search", "flat", "--as-of", "soon"])
    assert bad.exit_code != 0 and "--as-of" in bad.stderr
