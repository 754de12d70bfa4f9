"""Consolidation: knowledge about people, changes kept as history, profiles.

The scripted model reads the K items and messages it is given and answers as a careful
model would; the tests check what the pipeline does with that: which statements are kept,
which supersede which, what repeats, and what the profile and search show.
"""

from __future__ import annotations

import json
import re

import pytest

from localmem import Memory
from localmem.cli import cli
from localmem.errors import LocalmemError, NotFoundError
from tests.fakes import HashEmbedder, ScriptedLLM
from tests.helpers import open_memory, runner
from tests.pipeline.test_pipeline import _responder as _extract

CHAT = """[2023-01-10 10:00]
Dana: I live in Leeds and work as a nurse at the hospital.
Omar: I love tea, never coffee.
[2023-03-05 10:00]
Dana: Big news, I moved to York last week!
Omar: Congrats on the move.
Dana: I took up painting this winter.
[2023-06-01 10:00]
Dana: I quit nursing, I'm a paramedic now.
Omar: I switched to coffee, tea bores me now.
[2023-08-01 10:00]
Dana: I also started climbing, and I still paint every weekend.
Omar: Nice.
"""

# (message keyword, subject, aspect, statement, text of the K item it replaces or None)
RULES = [
    ("live in Leeds", "Dana", "home", "Dana lives in Leeds.", None),
    ("work as a nurse", "Dana", "career", "Dana works as a nurse.", None),
    ("love tea", "Omar", "preference", "Omar prefers tea to coffee.", None),
    ("took up painting", "Dana", "hobby", "Dana paints.", None),
    ("moved to York", "Dana", "home", "Dana lives in York.", "Dana lives in Leeds."),
    ("paramedic", "Dana", "career", "Dana works as a paramedic.", "Dana works as a nurse."),
    ("switched to coffee", "Omar", "preference", "Omar prefers coffee to tea.", "Omar prefers tea to coffee."),
    ("started climbing", "Dana", "hobby", "Dana goes climbing.", None),
    ("still paint", "Dana", "hobby", "Dana paints.", None),  # a repeat: a new source, no copy
]


def _k_items(user: str) -> dict[str, int]:
    return {m.group(2): int(m.group(1)) for m in re.finditer(r"^\[K(\d+)\] (.*) \(\w+\)$", user, re.M)}


def _statements(user: str, rules=RULES) -> list[dict]:
    known = _k_items(user)
    out = []
    for line in user.splitlines():
        m = re.match(r"^\[(\d+)\] (\w+): (.*)$", line)
        if not m:
            continue
        for keyword, subject, aspect, text, replaces in rules:
            if keyword in m.group(3):
                out.append(
                    {
                        "subject": subject,
                        "aspect": aspect,
                        "text": text,
                        "source": int(m.group(1)),
                        "replaces": known.get(replaces, 0) if replaces else 0,
                    }
                )
    return out


def _model(rules=RULES):
    def respond(messages):
        system, user = messages[0]["content"], messages[-1]["content"]
        if "lasting knowledge" in system and '"expected"' in system:
            return {"expected": "They chat.", "statements": _statements(user, rules)}
        if "You predict what happened" in system:
            return {"prediction": "PREDICTED: they talk about their lives."}
        if "lasting knowledge" in system:
            return {"statements": _statements(user, rules)}
        return _extract(messages)

    return ScriptedLLM(responder=respond)


def _memory(tmp_path, llm, mode="fast") -> Memory:
    path = tmp_path / "chat.txt"
    path.write_text(CHAT, encoding="utf-8")
    mem = open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=llm)
    mem.ingest(path, extract="llm", consolidate=mode)
    return mem


def _knowledge(mem) -> dict[str, int]:
    return {text: uid for uid, text in mem.conn.execute("select id, text from units where kind = 'knowledge'")}


def _supersedes(mem) -> set[tuple[str, str]]:
    return set(
        mem.conn.execute(
            "select n.text, o.text from links l join units n on n.id = l.src_id join units o on o.id = l.dst_id "
            "where l.type = 'supersedes'"
        ).fetchall()
    )


def test_a_move_a_job_change_and_a_preference_change_supersede_and_a_second_hobby_does_not(tmp_path):
    with _memory(tmp_path, _model()) as mem:
        assert _supersedes(mem) == {
            ("Dana lives in York.", "Dana lives in Leeds."),  # a move
            ("Dana works as a paramedic.", "Dana works as a nurse."),  # a job change
            ("Omar prefers coffee to tea.", "Omar prefers tea to coffee."),  # a preference change
        }
        known = _knowledge(mem)
        assert "Dana goes climbing." in known and "Dana paints." in known  # two hobbies, both current
        assert len(known) == 8  # the repeat of "Dana paints." made no copy...
        sources = [
            r[0]
            for r in mem.conn.execute(
                "select m.external_id from unit_sources s join messages m on m.id = s.message_id "
                "where s.unit_id = ? order by m.seq",
                (known["Dana paints."],),
            )
        ]
        assert len(sources) == 2  # ...but added its message as a second source
        # the old statements stay, with the time the change took effect
        valid = dict(
            mem.conn.execute(
                "select o.text, l.valid_at from links l join units o on o.id = l.dst_id where l.type = 'supersedes'"
            ).fetchall()
        )
        assert valid["Dana lives in Leeds."].startswith("2023-03-05")
        subjects = dict(
            mem.conn.execute(
                "select u.text, e.name from units u join mentions m on m.unit_id = u.id and m.role = 'subject' "
                "join entities e on e.id = m.entity_id where u.kind = 'knowledge'"
            ).fetchall()
        )
        assert subjects["Omar prefers coffee to tea."] == "Omar" and subjects["Dana goes climbing."] == "Dana"
        report = mem.conn.execute(
            "select count(*), sum(added), sum(reinforced), sum(superseded) from consolidations"
        ).fetchone()
        assert report == (4, 8, 1, 3)


def test_the_model_sees_held_knowledge_and_the_raw_messages(tmp_path):
    llm = _model()
    with _memory(tmp_path, llm) as mem:
        prompts = [c for c in llm.calls if "lasting knowledge" in c[0]["content"]]
        assert len(prompts) == 4  # fast: one call per episode
        first, second = prompts[0][-1]["content"], prompts[1][-1]["content"]
        assert "(nothing yet)" in first and "Dana: I live in Leeds" in first
        assert "[K" in second and "Dana lives in Leeds. (home)" in second  # what the first episode taught
        assert "Dana: Big news, I moved to York last week!" in second  # raw messages, not the narrative
        later = prompts[3][-1]["content"]
        assert "Dana lives in Leeds." not in later  # superseded knowledge is no longer shown as held
        stages = dict(mem.conn.execute("select stage, sum(calls) from llm_calls group by stage").fetchall())
        assert stages["consolidate"] == 4


def test_full_mode_predicts_from_the_title_then_calibrates_against_the_messages(tmp_path):
    llm = _model()
    with _memory(tmp_path, llm, mode="full") as mem:
        predicts = [c for c in llm.calls if "You predict what happened" in c[0]["content"]]
        calibrates = [c for c in llm.calls if "prediction of an episode" in c[0]["content"]]
        assert len(predicts) == len(calibrates) == 4
        assert "Dana:" not in predicts[1][-1]["content"]  # the prediction sees the title and knowledge only
        assert "Episode title: A chat" in predicts[1][-1]["content"]
        assert "PREDICTED: they talk" in calibrates[1][-1]["content"]
        assert "Dana: Big news" in calibrates[1][-1]["content"]
        assert len(_supersedes(mem)) == 3
        stages = dict(mem.conn.execute("select stage, sum(calls) from llm_calls group by stage").fetchall())
        assert stages["predict"] == 4 and stages["calibrate"] == 4


def test_replacing_someone_elses_statement_naming_a_stranger_or_inventing_is_refused(tmp_path):
    rules = RULES[:4] + [
        ("moved to York", "Dana", "home", "Dana lives in York.", "Omar prefers tea to coffee."),  # another person
        ("paramedic", "Zed", "career", "Zed is a paramedic.", None),  # no one of the episode
        ("Congrats", "Omar", "hobby", "Omar collects stamps.", None),  # no message says it
        ("switched to coffee", "Dana", "preference", "Dana switched to coffee.", None),  # Omar said it
        ("quit nursing", "Dana", "career", "Dana said I quit nursing.", None),  # copied, first person
    ]
    with _memory(tmp_path, _model(rules)) as mem:
        assert _supersedes(mem) == set()
        known = _knowledge(mem)
        assert "Dana lives in York." in known and "Zed is a paramedic." not in known
        assert "Omar collects stamps." not in known
        assert "Dana switched to coffee." not in known and "Dana said I quit nursing." not in known
        assert not mem.conn.execute("select 1 from entities where name = 'Zed'").fetchall()


def test_consolidation_is_off_by_default_and_a_second_pass_does_nothing(tmp_path):
    llm = _model()
    with _memory(tmp_path, llm, mode="off") as mem:
        assert _knowledge(mem) == {}
        first = mem.extraction.consolidate(mode="fast")
        assert first.episodes == 4 and first.added == 8 and first.superseded == 3
        calls = len(llm.calls)
        again = mem.extraction.consolidate(mode="fast")
        assert again.episodes == 0 and len(llm.calls) == calls
        with pytest.raises(LocalmemError, match="unknown"):
            mem.extraction.consolidate(mode="sometimes")


def test_an_invalid_reply_is_recorded_and_not_retried_forever(tmp_path):
    llm = _model()
    with _memory(tmp_path, llm, mode="off") as mem:
        llm.replies = ["{broken", "{still broken"]  # the first episode's call and its repair
        report = mem.extraction.consolidate(mode="fast")
        assert report.failed == 1 and report.episodes == 4
        assert (
            mem.conn.execute("select count(*) from llm_calls where stage = 'consolidate' and ok = 0").fetchone()[0] == 1
        )
        assert mem.extraction.consolidate(mode="fast").episodes == 0


def test_search_and_ask_show_the_current_statement_first_and_keep_the_old(tmp_path):
    llm = _model()
    with _memory(tmp_path, llm) as mem:
        hits = mem.search("Where does Dana live? Leeds York", k=10, channels=["vector", "bm25"])
        texts = [h.text for h in hits]
        assert "Dana lives in York." in texts and "Dana lives in Leeds." in texts
        assert texts.index("Dana lives in York.") < texts.index("Dana lives in Leeds.")
        old = next(h for h in hits if h.text == "Dana lives in Leeds.")
        new = next(h for h in hits if h.text == "Dana lives in York.")
        assert old.superseded_by == new.id and old.id in new.supersedes
        llm.responder = lambda messages: {"answer": "Leeds", "supports": [1], "confidence": 0.8}
        mem.ask("Where did Dana live before York?", channels=["vector", "bm25"])
        items = [line for line in llm.calls[-1][-1]["content"].splitlines() if "Dana lives in Leeds." in line]
        assert items and "replaced later" in items[0]


def test_profile_shows_the_timeline_with_roles_and_knowledge_by_aspect(tmp_path):
    with _memory(tmp_path, _model()) as mem:
        prof = mem.profile("dana")
        assert prof.name == "Dana"
        assert [e.role for e in prof.episodes] == ["main"] * 4
        assert [e.time[:10] for e in prof.episodes] == ["2023-01-10", "2023-03-05", "2023-06-01", "2023-08-01"]
        home = prof.knowledge["home"]
        assert [(s.text, s.current) for s in home] == [("Dana lives in York.", True), ("Dana lives in Leeds.", False)]
        assert home[1].until.startswith("2023-03-05") and home[1].superseded_by == home[0].unit_id
        assert home[0].sources and home[0].time.startswith("2023-03-05")
        assert {s.text for s in prof.knowledge["hobby"]} == {"Dana paints.", "Dana goes climbing."}
        assert "preference" not in prof.knowledge  # Omar's, not Dana's
        with pytest.raises(NotFoundError, match="no one called 'Zed'.*Dana"):
            mem.profile("Zed")


def test_profile_cli_text_and_json(tmp_path):
    with _memory(tmp_path, _model()):
        pass
    db = str(tmp_path / "m.db")
    out = runner().invoke(cli, ["--db", db, "--namespace", "t", "profile", "Omar"])
    assert out.exit_code == 0, out.output
    assert "Omar (person)" in out.output and "Timeline: 4 episodes" in out.output
    assert "Omar prefers coffee to tea." in out.output
    assert re.search(r"Omar prefers tea to coffee\..*until 2023-06-01, replaced by the newer u:\d+", out.output)
    data = json.loads(runner().invoke(cli, ["--db", db, "--namespace", "t", "profile", "Omar", "--json"]).output)
    assert data["name"] == "Omar" and [s["current"] for s in data["knowledge"]["preference"]] == [True, False]
    now, before = data["knowledge"]["preference"]
    assert before["superseded_by"] == now["unit_id"] and now["supersedes"] == [before["unit_id"]]
    assert re.fullmatch(r"u:\d+", now["unit_id"]) and data["episodes"][0]["episode_id"].startswith("u:")
    missing = runner().invoke(cli, ["--db", db, "--namespace", "t", "profile", "Zed"])
    assert missing.exit_code != 0 and "no one called 'Zed'" in missing.output


def test_a_profile_summary_is_written_from_current_knowledge_and_rewritten_only_when_it_changes(tmp_path):
    llm = _model()
    with _memory(tmp_path, llm, mode="off") as mem:
        mem.extraction.consolidate(mode="fast")
        summaries = []

        def respond(messages):
            summaries.append(messages[-1]["content"])
            return {"summary": f"Summary {len(summaries)} of Dana."}

        llm.responder = respond
        assert mem.profile("Dana").summary is None  # not asked for: no call
        prof = mem.profile("Dana", summary=True)
        assert prof.summary == "Summary 1 of Dana." and prof.summary_at
        shown = summaries[0]
        assert "Dana lives in York." in shown and "Dana lives in Leeds." not in shown  # current only
        assert "(home, 2023-03-05)" in shown and "A chat" in shown  # aspects, dates, episode titles
        again = mem.profile("Dana", summary=True)
        assert again.summary == "Summary 1 of Dana." and len(summaries) == 1  # nothing changed: kept
        assert mem.profile("Dana").summary == "Summary 1 of Dana."  # stored with the person
        # New knowledge arrives: the next request rewrites it.
        with mem.conn:
            uid = mem.conn.execute(
                "insert into units (ns, kind, text, occurred_start, created_at) values "
                "('t', 'knowledge', 'Dana has a cat.', '2023-09-01', '2024') returning id"
            ).fetchone()[0]
            entity = mem.conn.execute("select id from entities where name = 'Dana'").fetchone()[0]
            mem.conn.execute(
                "insert into mentions (unit_id, entity_id, role, tag) values (?, ?, 'subject', 'pets')", (uid, entity)
            )
        assert mem.profile("Dana", summary=True).summary == "Summary 2 of Dana." and "Dana has a cat." in summaries[1]
    out = runner().invoke(cli, ["--db", str(tmp_path / "m.db"), "--namespace", "t", "profile", "Dana"])
    assert "Summary (" in out.output and "Summary 2 of Dana." in out.output


def test_the_agent_reads_personal_knowledge_by_aspect(tmp_path):
    llm = _model()
    with _memory(tmp_path, llm) as mem:
        script = iter(
            [
                {"keep": [], "tool": "personal_knowledge", "entity": "Dana"},  # which aspects?
                {"keep": [], "tool": "personal_knowledge", "entity": "Dana", "tag": "home"},
                {"keep": [1, 2], "tool": "answer"},
                {"answer": "Leeds", "supports": [1], "confidence": 0.9},
            ]
        )
        llm.responder = lambda messages: next(script)
        result = mem.ask("Where did Dana live before York?", mode="agentic")
        first, second = [s for s in result.steps if s["tool"] == "personal_knowledge"]
        assert first["note"].startswith("aspects: ") and "home (2)" in first["note"]
        assert second["results"][0].endswith("Dana lives in York.")  # current first
        assert "Dana lives in Leeds." in second["results"][1] and "replaced later" in second["results"][1]
        assert result.answer == "Leeds" and [c.external_id for c in result.citations]


def test_a_replacement_in_the_same_words_is_a_repeat_and_a_dated_event_is_not_knowledge(tmp_path):
    rules = RULES[:4] + [
        ("still paint", "Dana", "hobby", "Dana paints!", None),  # copied with "!": dropped
        ("still paint", "Dana", "hobby", "DANA PAINTS.", "Dana paints."),  # "replaces" itself
        ("moved to York", "Dana", "home", "Dana moved to York last week.", None),  # an event
    ]
    with _memory(tmp_path, _model(rules)) as mem:
        assert _supersedes(mem) == set()
        known = _knowledge(mem)
        assert "DANA PAINTS." not in known and "Dana moved to York last week." not in known
        sources = mem.conn.execute(
            "select count(*) from unit_sources where unit_id = ?", (known["Dana paints."],)
        ).fetchone()[0]
        assert sources == 2


def test_full_mode_stores_only_statements_the_fact_check_confirms(tmp_path):
    llm = _model()
    llm.judge_fn = lambda prompts: [0.1 if "Fact: Dana goes climbing." in p[-1]["content"] else 0.99 for p in prompts]
    with _memory(tmp_path, llm, mode="off") as mem:
        report = mem.extraction.consolidate(mode="full")
        known = _knowledge(mem)
        assert "Dana goes climbing." not in known and "Dana paints." in known
        assert report.added == 7 and report.dropped >= 1
        checked = [p for p in llm.judged if "Fact: Dana goes climbing." in p[-1]["content"]]
        assert len(checked) == 1 and "Dana: I also started climbing" in checked[0][-1]["content"]  # its message
        stages = dict(mem.conn.execute("select stage, sum(calls) from llm_calls group by stage").fetchall())
        assert stages["verify-knowledge"] == 9  # every statement the model wrote, before the rules
    fast = _model()
    fast.judge_fn = llm.judge_fn
    (tmp_path / "fast").mkdir()
    with _memory(tmp_path / "fast", fast, mode="fast") as mem:
        assert "Dana goes climbing." in _knowledge(mem)  # fast mode: one call per episode, no check
        assert not [p for p in fast.judged if "Fact: Dana goes climbing." in p[-1]["content"]]
