"""Segment → extract → resolve → link with a scripted LLM."""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest

from localmem.config import Config
from localmem.pipeline.extract import (
    EpisodeMessage,
    annotate,
    event_time,
    interpret,
    is_chatter,
)
from localmem.pipeline.segment import PendingMessage, plan
from localmem.text.names import normalise
from localmem.text.times import Span, resolve_phrase
from tests.fakes import HashEmbedder, ScriptedLLM
from tests.helpers import open_memory


def _msgs(n, session="s1", start=dt.datetime(2023, 5, 8, 13, 0), gap_min=1):
    return [
        PendingMessage(
            i,
            session,
            i,
            "Ann" if i % 2 else "Bob",
            f"message {i}",
            (start + dt.timedelta(minutes=gap_min * i)).isoformat(),
            None,
        )
        for i in range(n)
    ]


def test_plan_cuts_at_the_cap_without_boundaries():
    calls = []
    out = plan(_msgs(30), lambda w: calls.append(len(w)) or [], final=True, cap=25)
    assert [len(e) for e in out] == [25, 5] and calls[0] == 25


def test_plan_keeps_the_tail_open_unless_final():
    detect = lambda w: [10] if len(w) >= 25 else []  # noqa: E731
    assert [len(e) for e in plan(_msgs(25), detect, final=False)] == [10]
    assert [len(e) for e in plan(_msgs(25), detect, final=True)] == [10, 15]


def test_sessions_and_long_gaps_are_hard_boundaries():
    msgs = _msgs(3, "s1") + _msgs(3, "s2")
    assert [len(e) for e in plan(msgs, lambda w: [], final=True)] == [3, 3]
    gappy = _msgs(4, gap_min=60 * 5)
    assert [len(e) for e in plan(gappy, lambda w: [], final=True)] == [1, 1, 1, 1]


def test_streaming_and_batch_make_the_same_calls():
    seen_batch, seen_stream = [], []
    detect = lambda log: lambda w: log.append([m.id for m in w]) or ([12] if len(w) >= 25 else [])  # noqa: E731
    msgs = _msgs(40)
    batch = plan(msgs, detect(seen_batch), final=True)
    closed: list = []
    for upto in range(1, 41):  # one message at a time: re-plan over the still-open ones
        open_ = [m for m in msgs[:upto] if all(m not in e for e in closed)]
        closed += plan(open_, detect(seen_stream), final=False)
    closed += plan([m for m in msgs if all(m not in e for e in closed)], detect(seen_stream), final=True)
    assert [[m.id for m in e] for e in closed] == [[m.id for m in e] for e in batch]
    assert seen_stream == seen_batch


@pytest.mark.parametrize(
    "phrase, expected",
    [
        ("yesterday", "2023-05-07"),
        ("last week", "2023-05-01"),
        ("last Friday", "2023-05-05"),
        ("next month", "2023-06"),
        ("two years ago", "2021"),
        ("in June 2022", "2022-06"),
        ("3 days ago", "2023-05-05"),
        ("this weekend", "2023-05-13"),
        ("the day before yesterday", "2023-05-06"),
    ],
)
def test_relative_phrases(phrase, expected):
    assert resolve_phrase(phrase, dt.date(2023, 5, 8)).iso() == expected


def test_the_rules_date_the_phrase_the_model_copied_or_the_one_the_message_holds():
    msgs = [
        EpisodeMessage(1, "Ann", "Last Fri I finally went to a pottery class.", "2023-07-15T10:00:00"),
        EpisodeMessage(2, "Bob", "We went camping two weekends ago.", "2023-07-15T10:01:00"),
        EpisodeMessage(3, "Ann", "Next month I start a job, and I moved in 2019.", "2023-07-15T10:02:00"),
        EpisodeMessage(4, "Bob", "Cool, what a lovely pot.", "2023-07-15T10:03:00"),
    ]
    ref = dt.date(2023, 7, 15)
    assert event_time("last Fri", [0], msgs, ref)[1:] == (
        Span(dt.date(2023, 7, 14), dt.date(2023, 7, 14), "day"),
        "rule",
    )
    phrase, span, how = event_time("", [1], msgs, ref)  # the model gave none; the message has one
    assert (phrase, span.start.isoformat(), how) == ("two weekends ago", "2023-07-01", "rule-found")
    assert event_time("", [2], msgs, ref) == ("", None, "none")  # two phrases: ambiguous, none taken
    assert event_time("last week", [0], msgs, ref)[::2] == ("Last Fri", "rule-found")  # not said there
    assert event_time("a while back", [0], msgs, ref)[0] == "Last Fri"
    assert event_time("", [0, 3], msgs, ref) == ("", None, "none")  # two messages: whose phrase?
    assert event_time("", [0], msgs, ref)[2] == "rule-found"


def test_chatter_is_not_a_fact():
    assert is_chatter("thanked", "Caroline thanked Melanie.")
    assert is_chatter("said", "Melanie asked Caroline how the group went.")
    assert not is_chatter("adopted", "Melanie adopted a dog.")


def test_pronoun_subjects_become_the_speaker():
    msgs = [EpisodeMessage(1, "Ann", "I bought a red bike today.", "2023-05-08T13:00:00")]
    data = {
        "title": "t",
        "narrative": "n",
        "entities": [],
        "facts": [
            {
                "text": "Ann bought a red bike.",
                "subject": "I",
                "predicate": "bought",
                "object": "a red bike",
                "time": "today",
                "source": 0,
            }
        ],
    }
    (event,) = interpret(data, msgs).events
    assert event.subject == "Ann" and event.text == "Ann bought a red bike (8 May 2023)."


def test_annotate_keeps_both_forms():
    span = resolve_phrase("yesterday", dt.date(2023, 5, 8))
    assert annotate("Ann went hiking yesterday.", "yesterday", span) == "Ann went hiking yesterday (7 May 2023)."
    assert annotate("Ann went hiking on 7 May 2023.", "yesterday", span) == "Ann went hiking on 7 May 2023."


def test_normalise_names():
    assert normalise("my mom", speaker="Caroline") == normalise("Caroline's mother")
    assert normalise("The Support Group") == "support group"


def _responder(messages):
    """A plausible model: no segment boundaries; extraction lists each message as an event."""
    user = messages[-1]["content"]
    if "Where do new episodes start?" in user:
        return {"boundaries": []}
    lines = [line for line in user.splitlines() if line.startswith("[")]
    events = []
    for line in lines:
        idx = int(line[1 : line.index("]")])
        speaker, text = line[line.index("]") + 2 :].split(": ", 1)
        when = "yesterday" if "yesterday" in text else ""
        third = re.sub(r"\bI\b", speaker, re.sub(r"\b[Mm]y\b", f"{speaker}'s", text))
        events.append(
            {
                "text": f"{speaker} noted: {third}",
                "subject": speaker,
                "predicate": "noted",
                "object": text[:60],
                "time": when,
                "source": idx,
            }
        )
    names = sorted({line[line.index("]") + 2 :].split(": ", 1)[0] for line in lines})
    entities = [{"name": n, "type": "person", "tag": "chat"} for n in names]
    if "mom" in user:
        entities.append({"name": "my mom", "type": "person", "tag": "visit"})
    if "mother" in user:
        entities.append({"name": "Caroline's mother", "type": "person", "tag": "cooking"})
    return {"title": "A chat", "narrative": "They talked.", "facts": events[:8], "entities": entities[:8]}


def _transcript(tmp_path):
    path = tmp_path / "chat.txt"
    path.write_text(
        "[2023-05-08 13:00]\nCaroline: My mom visited yesterday.\nMel: How nice, my sister visited too.\n"
        "Caroline: Mom and I cooked together.\n[2023-05-20 10:00]\n"
        "Melanie: Caroline's mother liked the food, I heard.\nCaroline: She loved the lasagna.\n",
        encoding="utf-8",
    )
    return path


def test_build_end_to_end_with_a_scripted_model(tmp_path):
    llm = ScriptedLLM(responder=_responder)
    with open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=llm) as mem:
        report = mem.ingest(_transcript(tmp_path), extract="llm")
        build = report.build["t"]
        assert build["episodes"] == 2 and build["failed"] == 0
        assert build["units"] == {"gist": 5, "fact": 5}
        assert build["links"].get("next") == 1
        rows = mem.conn.execute("select kind, count(*) from units group by kind").fetchall()
        assert dict(rows) == {"episode": 2, "gist": 5, "fact": 5}
        # every unit keeps its source messages
        orphans = mem.conn.execute(
            "select count(*) from units u where not exists (select 1 from unit_sources s where s.unit_id = u.id)"
        ).fetchone()[0]
        assert orphans == 0
        # "yesterday" resolved against the message time
        when = mem.conn.execute(
            "select occurred_start, text from units where kind='gist' and text like '%visited%'"
        ).fetchone()
        assert when[0] == "2023-05-07" and "(7 May 2023)" in when[1]
        # "my mom" from Caroline and "Caroline's mother" are one entity; "Mel" joined "Melanie"
        mother = mem.conn.execute(
            "select e.id, count(distinct m.unit_id) from entities e "
            "join mentions m on m.entity_id = e.id join units u on u.id = m.unit_id "
            "where u.kind = 'episode' and e.norm_name = 'caroline''s mother' group by e.id"
        ).fetchall()
        assert len(mother) == 1 and mother[0][1] == 2  # one entity, in both episodes
        names = {
            r[0]: r[1]
            for r in mem.conn.execute(
                "select a.alias, e.id from entity_aliases a join entities e on e.id = a.entity_id"
            )
        }
        assert names["Mel"] == names["Melanie"]
        hits = mem.search("Caroline's mother cooked", k=5)
        assert any(h.kind in ("gist", "fact") for h in hits)
        calls = {r[0]: r[1] for r in mem.conn.execute("select stage, sum(calls) from llm_calls group by stage")}
        assert calls["extract"] == 2


def test_rebuild_is_a_no_op_and_failed_episodes_keep_raw_text(tmp_path):
    replies = iter(["garbage", "still garbage"])

    def responder(messages):
        if "Where do new episodes start?" in messages[-1]["content"]:
            return {"boundaries": []}
        return next(replies, None) or _responder(messages)

    llm = ScriptedLLM(responder=responder)
    with open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=llm) as mem:
        report = mem.ingest(_transcript(tmp_path), extract="llm")
        assert report.build["t"]["failed"] == 1 and report.build["t"]["episodes"] == 1
        raw = mem.conn.execute("select raw from llm_calls where ok = 0").fetchone()[0]
        assert json.loads(raw) == ["garbage", "still garbage"]
        before = mem.conn.execute("select count(*) from units").fetchone()[0]
        again = mem.extraction.extract()
        assert again.episodes == 0 and mem.conn.execute("select count(*) from units").fetchone()[0] == before


def test_llm_detector_applies_the_threshold_and_ignores_out_of_range_answers():
    from localmem.pipeline.segment import LLMDetector

    llm = ScriptedLLM(
        [
            {
                "boundaries": [
                    {"index": 0, "confidence": 0.9},
                    {"index": 2, "confidence": 0.69},
                    {"index": 3, "confidence": 0.7},
                    {"index": 4, "confidence": 85},
                    {"index": 99, "confidence": 1},
                ]
            }
        ]
    )
    assert LLMDetector(llm)(_msgs(6)) == [3, 4]
    assert "[5] Ann: message 5" in llm.calls[0][-1]["content"]


def test_llm_detector_skips_short_windows_and_survives_garbage():
    from localmem.pipeline.segment import LLMDetector

    llm = ScriptedLLM(["nonsense", "more nonsense"])
    detector = LLMDetector(llm)
    assert detector(_msgs(3)) == [] and llm.calls == []
    assert detector(_msgs(6)) == [] and detector.stats.failures == 1 and detector.stats.calls == 2


_KILL_SCRIPT = """
import sys, time
sys.path.insert(0, sys.argv[1])
from tests.helpers import open_memory
from localmem.config import Config
from tests.fakes import HashEmbedder, ScriptedLLM
from tests.pipeline.test_pipeline import _responder

def slow(messages):
    time.sleep(0.15)
    return _responder(messages)

with open_memory(sys.argv[2], namespace="k", embedder=HashEmbedder(), llm=ScriptedLLM(responder=slow)) as mem:
    mem.ingest(sys.argv[3], extract="llm")
print("finished")
"""


@pytest.mark.slow
def test_sigkill_during_extraction_then_rerun_finishes_without_duplicates(tmp_path):
    import sys
    from pathlib import Path

    from tests.helpers import read_count, sigkill_when

    sessions = 30
    lines = []
    for s in range(sessions):
        lines.append(f"[2023-{1 + s // 28:02d}-{1 + s % 28:02d} 10:00]")
        lines += [
            f"Ann: Session {s} news: bought lamp {s}.",
            f"Bob: Reply {s}: sold bike {s}.",
            f"Ann: Later {s}: painted fence {s}.",
        ]
    transcript = tmp_path / "long.txt"
    transcript.write_text("\n".join(lines) + "\n", encoding="utf-8")
    db_path = tmp_path / "kill.db"
    repo = Path(__file__).resolve().parents[2]

    def done_episodes() -> int:
        return read_count(db_path, "select count(*) from units where kind='episode' and stage='done'")

    sigkill_when(
        [sys.executable, "-c", _KILL_SCRIPT, str(repo), str(db_path), str(transcript)], lambda: done_episodes() >= 3
    )
    at_kill = done_episodes()
    assert 3 <= at_kill < sessions

    with open_memory(db_path, namespace="k", embedder=HashEmbedder(), llm=ScriptedLLM(responder=_responder)) as mem:
        report = mem.extraction.extract()
        assert report.episodes == sessions - at_kill and report.failed == 0
        conn = mem.conn
        assert conn.execute("pragma integrity_check").fetchall() == [("ok",)]
        stages = dict(conn.execute("select stage, count(*) from units where kind='episode' group by stage"))
        assert stages == {"done": sessions}
        # one gist and one fact per message, none twice
        assert conn.execute("select count(*) from units where kind='gist'").fetchone()[0] == 3 * sessions
        assert (
            conn.execute(
                "select count(*) from (select text from units where kind='gist' group by text having count(*) > 1)"
            ).fetchone()[0]
            == 0
        )
        assert (
            conn.execute("select count(*) from vec_units").fetchone()[0]
            == conn.execute("select count(*) from units").fetchone()[0]
        )


def test_a_time_phrase_not_in_the_cited_message_is_dropped():
    msgs = [
        EpisodeMessage(1, "Ann", "I went hiking yesterday.", "2023-05-08T13:00:00"),
        EpisodeMessage(2, "Bob", "Cool, I want to see the photos.", "2023-05-08T13:01:00"),
    ]
    data = {
        "title": "t",
        "narrative": "n",
        "entities": [],
        "facts": [
            {
                "text": "Ann went hiking.",
                "subject": "Ann",
                "predicate": "went",
                "object": "hiking",
                "time": "yesterday",
                "source": 0,
            },
            {
                "text": "Bob wants to see what Ann saw.",
                "subject": "Bob",
                "predicate": "wants to see",
                "object": "Ann's photos",
                "time": "last week",
                "source": 1,
            },
        ],
    }
    hiking, wants = interpret(data, msgs).events
    assert hiking.span.iso() == "2023-05-07" and hiking.text == "Ann went hiking (7 May 2023)."
    assert wants.span is None and wants.time_checked == "none" and wants.mentioned_at == "2023-05-08T13:01:00"


def test_sources_come_from_the_matching_message_not_the_copied_index():
    from localmem.pipeline.extract import EpisodeMessage, match_sources

    msgs = [
        EpisodeMessage(1, "Caroline", "Hey Mel! Good to see you!", None),
        EpisodeMessage(2, "Melanie", "Hi! How have you been?", None),
        EpisodeMessage(3, "Caroline", "I went to an LGBTQ support group yesterday.", None),
        EpisodeMessage(4, "Melanie", "I ran a charity race for mental health last Saturday.", None),
    ]
    assert match_sources("Caroline attended an LGBTQ support group.", msgs, [0]) == [2]
    assert match_sources("Melanie ran a charity race.", msgs, [3]) == [3]
    assert match_sources("Nothing in common here.", msgs, [1]) == [1]


def test_verification_drops_facts_the_model_does_not_confirm(tmp_path):
    from localmem.prompts import verify as verify_prompt

    def judge(prompts):
        # Confirm everything but the lasagna; record what was asked.
        return [0.1 if "lasagna" in p[-1]["content"].split("Fact:")[1] else 0.9 for p in prompts]

    llm = ScriptedLLM(responder=_responder, judge=judge)
    with open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=llm) as mem:
        build = mem.ingest(_transcript(tmp_path), extract="llm").build["t"]
        assert build["units"] == {"gist": 4, "fact": 4}
        texts = [r[0] for r in mem.conn.execute("select text from units where kind = 'gist'")]
        assert not any("lasagna" in t for t in texts)
        asked = [p[-1]["content"] for p in llm.judged]
        assert len(asked) == 5
        yesterday = next(a for a in asked if "visited" in a.split("Fact:")[1])
        assert "Caroline: My mom visited yesterday." in yesterday  # the cited message is shown
        assert "(7 May 2023)" not in yesterday.split("Fact:")[1]  # without the rules' dates
        rows = mem.conn.execute("select prompt_version, calls, raw from llm_calls where stage = 'verify'").fetchall()
        assert {r[0] for r in rows} == {verify_prompt.VERSION} and sum(r[1] for r in rows) == 5
        assert any(0.1 in json.loads(json.loads(r[2])[0]) for r in rows)
    off = ScriptedLLM(responder=_responder, judge=judge)
    with open_memory(
        tmp_path / "n.db", namespace="t", embedder=HashEmbedder(), llm=off, config=Config(verify_facts=0)
    ) as mem:
        assert mem.ingest(_transcript(tmp_path), extract="llm").build["t"]["units"] == {"gist": 5, "fact": 5}
        assert off.judged == []


def test_doubtful_facts_are_dropped():
    from localmem.pipeline.extract import doubtful

    ask = EpisodeMessage(1, "Mel", "Wow, looks awesome! Did you join in?", None)
    tell = EpisodeMessage(2, "Caro", "I went to a pride parade a few weeks ago.", None)
    assert doubtful("Mel joined the parade.", [ask], frozenset({"mel", "caro"})) == "question"
    assert doubtful("Caro went to a pride parade.", [tell]) is None
    assert doubtful("Caro had a great time at the L", [tell]) == "cut-off"
    assert doubtful("Seeing my mentee smile was the best.", [tell]) == "copied"
    assert doubtful("We love painting together lately.", [tell]) == "copied"
    assert doubtful("Caro went to a parade and saw their eyes亮.", [tell]) == "garbled"
    assert doubtful("Caro ate 寿司 in Tokyo.", [EpisodeMessage(3, "Caro", "I ate 寿司 in Tokyo.", None)]) is None


def test_entities_must_be_grounded_in_the_messages():
    from localmem.pipeline.extract import grounded

    msgs = [
        EpisodeMessage(1, "Melanie", "Hey Caroline! We celebrated my daughter's birthday.", None),
        EpisodeMessage(2, "Caroline", "Wow, my mom came to the advocacy event.", None),
    ]
    assert grounded("Melanie's daughter", msgs) and grounded("Caroline's mother", msgs)
    assert not grounded("Caroline's daughter", msgs)  # by analogy, never said
    assert not grounded("Melanie's husband", msgs) and not grounded("Matt Patterson", msgs)
    assert grounded("advocacy events", msgs)


def test_extract_none_segments_without_an_llm_and_a_later_flush_extracts(tmp_path):
    llm = ScriptedLLM(responder=_responder)
    with open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder()) as mem:
        report = mem.ingest(_transcript(tmp_path))  # --extract none: no model needed
        assert report.episodes == {"t": 2}  # the two sessions
        stages = mem.conn.execute("select stage, count(*) from units where kind='episode' group by 1").fetchall()
        assert stages == [("segmented", 2)]
    with open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=llm) as mem:
        built = mem.extraction.flush()
        assert built.episodes == 2
        assert [c for c in llm.calls if "Where do new episodes start?" in c[-1]["content"]] == []


def test_embedding_detector_cuts_at_a_clear_topic_shift():
    import numpy as np

    from localmem.pipeline.segment import EmbeddingDetector

    window = _msgs(12)
    topic_a, topic_b = np.eye(4, dtype=np.float32)[0], np.eye(4, dtype=np.float32)[1]
    vecs = np.stack([topic_a] * 7 + [topic_b] * 5)
    assert EmbeddingDetector(lambda w: vecs[: len(w)])(window) == [7]
    assert EmbeddingDetector(lambda w: np.stack([topic_a] * len(w)))(window) == []


_NAMESAKES = (
    "[2023-05-08 13:00]\nAnn: My coworker John at Acme got promoted.\nBob: Good for John.\n"
    "[2023-06-20 10:00]\nAnn: My brother John visited{extra}.\nBob: Nice, say hi to John.\n"
)


def _namesake_responder(match: int):
    def respond(messages):
        user = messages[-1]["content"]
        if "Where do new episodes start?" in user:
            return {"boundaries": []}
        if user.startswith("Case 0:"):
            return {"answers": [{"case": 0, "match": match}]}
        entities = [{"name": "John", "type": "person", "tag": "coworker" if "coworker" in user else "brother"}]
        if "Acme" in user:
            entities.append({"name": "Acme", "type": "organization", "tag": "employer"})
        return {"title": "t", "narrative": "n", "facts": [], "entities": entities}

    return respond


@pytest.mark.parametrize("match, johns", [(-1, 2), (0, 1)])
def test_a_borderline_name_is_decided_by_the_model_in_one_call(tmp_path, match, johns):
    path = tmp_path / "chat.txt"
    path.write_text(_NAMESAKES.format(extra=" from Ohio"), encoding="utf-8")
    llm = ScriptedLLM(responder=_namesake_responder(match))
    with open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=llm) as mem:
        mem.ingest(path, extract="llm")
        asked = [c for c in llm.calls if c[-1]["content"].startswith("Case 0:")]
        assert len(asked) == 1  # only the second episode's John is in doubt
        assert '"John" (brother)' in asked[0][-1]["content"] and "coworker" in asked[0][-1]["content"]
        names = mem.conn.execute("select count(*) from entities where norm_name = 'john'").fetchone()[0]
        assert names == johns
        stages = dict(mem.conn.execute("select stage, count(*) from llm_calls group by stage").fetchall())
        assert stages.get("resolve") == 1


def test_shared_company_resolves_a_name_without_the_model(tmp_path):
    path = tmp_path / "chat.txt"
    path.write_text(_NAMESAKES.format(extra=" Acme"), encoding="utf-8")
    llm = ScriptedLLM(responder=_namesake_responder(-1))
    with open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=llm) as mem:
        mem.ingest(path, extract="llm")
        assert not [c for c in llm.calls if c[-1]["content"].startswith("Case 0:")]
        assert mem.conn.execute("select count(*) from entities where norm_name = 'john'").fetchone()[0] == 1


def test_an_events_gist_and_fact_are_one_search_hit(tmp_path):
    llm = ScriptedLLM(responder=_responder)
    with open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder(), llm=llm) as mem:
        mem.ingest(_transcript(tmp_path), extract="llm")
        hits = mem.search("lasagna", k=20)
        units = [h for h in hits if h.kind in ("gist", "fact")]
        assert units and all(any(m.startswith("u:") for m in h.merged) for h in units)  # its twin
        keys = [frozenset(s.message_id for s in h.sources) for h in units]
        assert len(keys) == len(set(keys))


def test_facts_about_a_speaker_come_from_their_own_messages():
    from localmem.pipeline.extract import own_speaker

    mel = EpisodeMessage(1, "Melanie", "Your empathy will really help the people you work with.", None)
    caro = EpisodeMessage(2, "Caroline", "I'm researching adoption agencies.", None)
    speakers = {"melanie", "caroline"}
    assert not own_speaker("Caroline", [mel], speakers)
    assert own_speaker("Caroline", [caro], speakers)
    assert not own_speaker("Melanie and Caroline", [caro], speakers)
    assert own_speaker("the adoption agency", [caro], speakers)  # not about a speaker
    assert is_chatter("said", "Caroline said talk to you soon.")
    assert is_chatter("expressed", "Melanie expressed support for Caroline.")


def _episode_texts(conn) -> list[str]:
    """Each episode's messages, joined by '|' in order (portable SQL: it runs on both engines)."""
    texts: dict[int, list[str]] = {}
    for unit_id, text in conn.execute(
        "select u.id, m.text from units u join unit_sources s on s.unit_id = u.id "
        "join messages m on m.id = s.message_id where u.kind = 'episode' order by u.id, m.id"
    ):
        texts.setdefault(unit_id, []).append(text)
    return ["|".join(t) for t in texts.values()]


def test_streaming_without_an_llm_closes_episodes_as_a_batch_ingest_does(tmp_path):
    from localmem.importers.formats import parse, read_input

    path = _transcript(tmp_path)
    with open_memory(tmp_path / "batch.db", namespace="t", embedder=HashEmbedder()) as batch:
        batch.ingest(path)
        batch_episodes = _episode_texts(batch.conn)
    parsed = parse(path, read_input(path), None, None, 100_000)
    with open_memory(tmp_path / "stream.db", namespace="t", embedder=HashEmbedder()) as stream:
        for _ns, messages in parsed.groups:
            for m in messages:
                stream.add(m.speaker, m.text, time=m.sent_at, conversation=m.conversation)
        stream.extraction.segment_without_llm()  # closes the open buffer, as the end of a batch does
        stream_episodes = _episode_texts(stream.conn)
    assert stream_episodes == batch_episodes and len(batch_episodes) == 2


def test_a_question_turned_into_a_fact_is_dropped_and_dates_follow_whole_words():
    from localmem.pipeline.extract import doubtful

    asked = EpisodeMessage(
        1, "Caroline", "Wow, Melanie, love the details of the horse! Do you like painting animals?", None
    )
    assert doubtful("Caroline likes painting animals.", [asked], frozenset({"caroline", "melanie"})) == "question"
    told = EpisodeMessage(2, "Caroline", "I chose them 'cause they help LGBTQ+ folks with adoption.", None)
    assert doubtful("Caroline chose the agency that helps LGBTQ+ folks.", [told]) is None
    span = resolve_phrase("last Tues", dt.date(2023, 7, 20))
    assert (
        annotate("Caroline joined a group last Tuesday.", "last Tues", span)
        == "Caroline joined a group last Tuesday (18 July 2023)."
    )
