"""`localmem bench ask`: the per-question timings of ask, and their p50/p90."""

from __future__ import annotations

import pytest

from localmem.errors import LocalmemError
from localmem_bench import bench_ask
from tests.fakes import HashEmbedder, ScriptedLLM
from tests.helpers import open_memory


def test_each_question_gives_a_row_and_every_column_a_p50_and_p90(tmp_path):
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        '{"query": "Where did Ann move?", "namespace": "t"}\nWho is Zed?\n\n{"question": "Where did Ann move?"}\n',
        encoding="utf-8",
    )
    reply = {"answer": "Oslo", "supports": [1], "confidence": 0.9}
    llm = ScriptedLLM(responder=lambda messages: reply)
    with open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=llm) as mem:
        mem.add("Ann", "I moved to Oslo in May.")
        report = bench_ask.run(mem, bench_ask.read_questions(questions))
    assert report["questions"] == 3 and [r["query"] for r in report["rows"]][1] == "Who is Zed?"
    answered = [r for r in report["rows"] if not r["refused"]]
    assert answered and all(r["answer"] == "Oslo" and r["prompt_tokens"] > 0 for r in answered)
    assert all(r["first_text"] is not None and r["first_text"] <= r["wall"] for r in answered)
    cells = report["summary"]
    assert set(cells) == {name for name, _unit, _where in bench_ask.COLUMNS}
    assert cells["total"]["n"] == 3 and cells["total"]["p50"] <= cells["total"]["p90"]
    assert cells["model_load"]["p90"] == 0.0  # a scripted model loads nothing
    table = bench_ask.render(report)
    assert all(name in table for name, _unit, _where in bench_ask.COLUMNS)


def test_a_file_without_questions_is_refused_in_one_line(tmp_path):
    empty = tmp_path / "q.txt"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(LocalmemError, match="no questions"):
        bench_ask.read_questions(empty)
    bad = tmp_path / "b.jsonl"
    bad.write_text('{"nope": 1}\n', encoding="utf-8")
    with pytest.raises(LocalmemError, match="b.jsonl:1"):
        bench_ask.read_questions(bad)


def test_ask_json_timings_break_down_where_the_time_went(tmp_path):
    reply = {"answer": "Oslo", "supports": [1], "confidence": 0.9}
    with open_memory(
        tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=ScriptedLLM(replies=[reply])
    ) as mem:
        mem.add("Ann", "I moved to Oslo in May.")
        data = mem.ask("Where did Ann move?").to_dict()
        refused = mem.ask("Where did Zed move?", speaker="Zed").to_dict()  # nothing found: no model call
    assert {"search", "model_load", "prompt_eval", "generation", "answer", "total"} <= set(data["timings"])
    assert {"prompt", "reused", "completion"} <= set(data["tokens"])
    assert data["tokens"]["reused"] <= data["tokens"]["prompt"]
    assert refused["refused"] and "answer" not in refused["timings"]


class _TimedLLM(ScriptedLLM):
    """A scripted model that also answers the plain-call yardstick (with the sizes it was asked)."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.plain_calls: list[tuple[int, int]] = []

    def measure_speed(self, prompt_tokens: int = 512, gen_tokens: int = 128) -> dict:
        return {}

    def plain_call(self, prompt_tokens: int, gen_tokens: int) -> float:
        self.plain_calls.append((prompt_tokens, gen_tokens))
        return 2.0


def test_plain_gives_each_answered_question_a_ratio_to_a_plain_call_of_its_sizes(tmp_path):
    questions = tmp_path / "q.txt"
    questions.write_text("Where did Ann move?\nWhere did Ann move to?\n", encoding="utf-8")
    llm = _TimedLLM(responder=lambda messages: {"answer": "Oslo", "supports": [1], "confidence": 0.9})
    with open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=llm) as mem:
        mem.add("Ann", "I moved to Oslo in May.")
        report = bench_ask.run(mem, bench_ask.read_questions(questions), plain=True)
    rows = report["rows"]
    assert [(r["prompt_tokens"], r["gen_tokens"]) for r in rows] == llm.plain_calls
    assert all(r["plain"] == 2.0 and r["ratio"] == pytest.approx(r["wall"] / 2.0, abs=1e-3) for r in rows)
    assert report["p50_ratio"] == pytest.approx(report["summary"]["wall"]["p50"] / 2.0, abs=1e-3)
    assert "p50 wall / p50 plain call" in bench_ask.render(report)


def test_plain_needs_a_model_that_can_time_a_plain_call(tmp_path):
    questions = tmp_path / "q.txt"
    questions.write_text("Where did Ann move?\n", encoding="utf-8")
    with open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=ScriptedLLM()) as mem:
        with pytest.raises(LocalmemError, match="cannot time a plain call"):
            bench_ask.run(mem, bench_ask.read_questions(questions), plain=True)
