"""The ask pipeline as a stage: its options come from the config, and it answers as the facade does."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

from localmem.answer import pipeline
from localmem.answer.fast import AnswerOptions
from localmem.config import Config
from localmem.retrieval import batch
from tests.fakes import ScriptedLLM
from tests.helpers import open_memory


def test_options_are_read_from_the_config():
    config = replace(Config(), ask_max_tokens=123, ask_focus=False, ask_dates=True, rrf_k=7)
    options = pipeline.AskOptions.from_config(config)
    assert options.max_tokens == 123 and options.focus is False
    assert options.answer == AnswerOptions(dates=True, user_name=None)
    assert options.search.rrf_k == 7 and options.search == batch.SearchOptions.from_config(config)


def test_the_pipeline_answers_as_memory_ask_does(tmp_path, embedder):
    reply = {"answer": "Oslo", "confidence": 0.9, "supports": [1]}
    llm = ScriptedLLM([reply, reply])
    with open_memory(tmp_path / "m.db", namespace="test", embedder=embedder, llm=llm) as mem:
        mem.add("Ann", "I moved to Oslo in May", "2023-05-08T10:00:00")
        mem.add("Bob", "I like chess", "2023-05-09T10:00:00")
        via_facade = mem.ask("Where did Ann move?", now="2023-05-10")
        options = pipeline.AskOptions.from_config(mem.config)
        today = date(2023, 5, 10)
        params = mem.search_params(k=options.candidates, now=today)
        direct = pipeline.ask(mem.conn, mem.namespace, mem.models, "Where did Ann move?", params, today, options)
    assert direct.answer == via_facade.answer == "Oslo"
    assert [c.text for c in direct.citations] == [c.text for c in via_facade.citations] != []
    assert len(llm.calls) == 2 and llm.calls[0] == llm.calls[1]  # the same prompt, word for word
