"""Agentic ask: the tool loop with a scripted model over a small built store."""

from __future__ import annotations

import pytest

from localmem import Memory
from localmem.errors import LocalmemError
from localmem.prompts import agent as agent_prompt
from tests.fakes import HashEmbedder, ScriptedLLM
from tests.helpers import open_memory


def _store(tmp_path, llm) -> tuple[Memory, dict[str, int]]:
    mem = open_memory(tmp_path / "a.db", namespace="t", embedder=HashEmbedder(), llm=llm)
    m1 = mem.add("Caroline", "I went to an adoption agency meeting today.", time="2023-05-08T10:00", id="D1:1").id
    m2 = mem.add("Caroline", "My pottery class starts next week.", time="2023-06-02T10:00", id="D2:1").id
    conn = mem.conn
    ids: dict[str, int] = {}
    with conn:
        ep = conn.execute(
            "insert into units (ns, kind, title, text, created_at, stage) values "
            "('t', 'episode', 'Plans', 'Caroline talked about adoption and pottery.', '2024', 'done') "
            "returning id"
        ).fetchone()[0]
        for name, text, when, mid in (
            ("adopt", "Caroline went to an adoption agency meeting.", "2023-05-08", m1),
            ("pottery", "Caroline signed up for a pottery class.", "2023-06-02", m2),
        ):
            uid = conn.execute(
                "insert into units (ns, kind, text, occurred_start, episode_id, created_at) "
                "values ('t', 'gist', ?, ?, ?, '2024') returning id",
                (text, when, ep),
            ).fetchone()[0]
            conn.execute("insert into unit_sources values (?, ?)", (uid, mid))
            conn.execute("insert into unit_sources values (?, ?)", (ep, mid))
            ids[name] = uid
        eid = conn.execute(
            "insert into entities (ns, name, norm_name, type, created_at) values "
            "('t', 'Caroline', 'caroline', 'person', '2024') returning id"
        ).fetchone()[0]
        conn.execute("insert into entity_aliases values (?, 'Caroline', 'caroline')", (eid,))
        conn.execute("insert into mentions values (?, ?, 'mentioned', 'adoption')", (ids["adopt"], eid))
        conn.execute("insert into mentions values (?, ?, 'mentioned', 'pottery')", (ids["pottery"], eid))
    ids["episode"] = ep
    return mem, ids


def _is_agent(messages) -> bool:
    return messages[0]["content"] == agent_prompt.SYSTEM


def test_the_loop_keeps_evidence_calls_tools_and_answers_from_what_it_kept(tmp_path):
    plan = [
        {"keep": [], "tool": "entity_units", "entity": "Caroline", "tag": "pottery", "count": True},
        {"keep": [1], "tool": "answer"},
    ]

    def respond(messages):
        if _is_agent(messages):
            return plan.pop(0)
        return {"answer": "2 June 2023", "supports": [1], "confidence": 0.8}

    llm = ScriptedLLM(responder=respond)
    mem, ids = _store(tmp_path, llm)
    steps = []
    with mem:
        result = mem.ask("When did Caroline sign up for pottery?", mode="agentic", trace=steps.append)
    assert result.mode == "agentic" and result.answer == "2 June 2023"
    assert [s.tool for s in steps] == ["semantic_retrieve", "entity_units"]
    assert steps[1].note == "count: 1" and steps[1].results[0].startswith(f"u:{ids['pottery']} ")
    assert result.steps[1]["kept"] == [f"u:{ids['pottery']}"]
    assert [h.id for h in result.evidence] == [f"u:{ids['pottery']}"]
    assert [c.external_id for c in result.citations] == ["D2:1"]
    assert result.calls == 3  # two loop steps and the answer
    second = llm.calls[1][-1]["content"]
    assert "Results of entity_units(entity='Caroline', tag='pottery', count=True)" in second
    assert "Step 2 of 4" in second


def test_the_step_limit_forces_the_answer_and_episode_context_reads_the_episode(tmp_path):
    def respond(messages):
        if _is_agent(messages):
            return {"keep": [1], "tool": "episode_context", "item": 1}
        return {"answer": "pottery", "supports": [1, 2], "confidence": 0.6}

    llm = ScriptedLLM(responder=respond)
    mem, ids = _store(tmp_path, llm)
    with mem:
        result = mem.ask("What is Caroline learning?", mode="agentic", steps=2)
    assert [s["tool"] for s in result.steps] == ["semantic_retrieve", "episode_context", "episode_context"]
    assert any(line.startswith(f"u:{ids['episode']} ") for line in result.steps[1]["results"])
    assert result.calls == 3 and not result.refused


def test_nothing_kept_is_a_refusal_without_an_answer_call(tmp_path):
    llm = ScriptedLLM(
        responder=lambda m: {"keep": [], "tool": "lexical_retrieve", "query": "zebra", "start": "2030-01-01"}
    )
    mem, _ids = _store(tmp_path, llm)
    with mem:
        result = mem.ask("Who owns a zebra?", mode="agentic", steps=2)
        assert result.refused and result.calls == 2 and result.citations == []
        assert result.steps[1]["note"] == "no results"  # the time filter left nothing
        with pytest.raises(LocalmemError, match="steps"):
            mem.ask("x", mode="agentic", steps=0)


def test_agent_queries_handle_messages_and_units(tmp_path):
    mem, ids = _store(tmp_path, ScriptedLLM(replies=[]))
    with mem:
        of = lambda kind, i: mem.conn.run("agent_episode_of", {"kind": kind, "id": i}).fetchone()[0]  # noqa: E731
        assert of("u", ids["adopt"]) == ids["episode"] == of("u", ids["episode"])
        message = mem.conn.execute("select id from messages where external_id = 'D1:1'").fetchone()[0]
        episode = of("m", message)  # add() already cut an episode of its own around the message
        assert mem.conn.execute("select kind from units where id = ?", (episode,)).fetchone()[0] == "episode"
        assert mem.conn.execute(
            "select 1 from unit_sources where unit_id = ? and message_id = ?", (episode, message)
        ).fetchone()
