"""Context fusion: a message is scored with its session, the one speaker a question names, the
question it answers and the time it says (docs/decisions.md#session-weight)."""

from __future__ import annotations

import pytest

from localmem.retrieval.search import SearchParams
from tests.conftest import FIXTURES
from tests.fakes import HashEmbedder
from tests.helpers import open_memory, write_jsonl

LOCOMO = FIXTURES / "tiny_locomo.json"


def test_the_default_search_weighs_the_session_lightly_and_the_speaker_named():
    assert 0 < SearchParams().session_weight < 0.2 and SearchParams().speaker_weight > 0
    assert SearchParams().question_handoff == 1.0 and SearchParams().when_weight == 1.0


def _ids(hits):
    return [h.sources[0].external_id for h in hits]


def test_a_question_hands_its_score_to_the_turn_that_answers_it(tmp_path):
    with open_memory(tmp_path / "m.db", namespace="all", embedder=HashEmbedder()) as mem:
        mem.ingest(LOCOMO)
    with open_memory(tmp_path / "m.db", namespace="tiny-1", embedder=HashEmbedder()) as m1:
        # "breed" is in Ben's question (D1:2) and, as the turn before, in the context of Ana's answer (D1:3)
        # (the session weight off: it adds the session's score to both)
        plain = m1.search("breed", channels=["bm25"], recipe=SearchParams(question_handoff=0.0, session_weight=0.0))
        assert _ids(plain)[:2] == ["D1:2", "D1:3"]
        handed = m1.search("breed", channels=["bm25"], recipe=SearchParams(session_weight=0.0))  # handoff on by default
        assert _ids(handed)[:2] == ["D1:3", "D1:2"]  # the answer first
        # the question keeps the third of its score that is not asked ("Congrats!"); its answer gains the rest
        assert handed[1].score == pytest.approx(plain[0].score / 3, abs=1e-5)
        assert handed[0].score == pytest.approx(plain[1].score + plain[0].score * 2 / 3, abs=1e-5)
        # a message that asks nothing keeps its score and lifts nothing after it
        assert _ids(m1.search("pottery", channels=["bm25"])) == _ids(
            m1.search("pottery", channels=["bm25"], recipe=SearchParams(question_handoff=0.0))
        )


def test_with_no_similarity_floor_the_temporal_channel_ranks_every_message_of_the_range(tmp_path):
    with open_memory(tmp_path / "m.db", namespace="all", embedder=HashEmbedder()) as mem:
        mem.ingest(LOCOMO)
    with open_memory(tmp_path / "m.db", namespace="tiny-1", embedder=HashEmbedder()) as m1:
        # hashed vectors are far apart: a floor of 0.4 would keep (nearly) none of them
        everything = m1.search("What happened on 27 June 2023?", channels=["temporal"])
        assert sorted(_ids(everything)) == ["D2:1", "D2:2"]  # session 2, and only it


def test_a_when_question_prefers_the_messages_that_say_a_time(tmp_path):
    with open_memory(tmp_path / "m.db", namespace="w", embedder=HashEmbedder()) as mem:
        mem.add("Ana", "The puppy is great, I love the puppy and puppy toys", time="2024-03-01")
        mem.add("Ana", "We brought the puppy home last Friday", time="2024-03-02")
        unweighted = SearchParams(when_weight=0.0)
        plain = [h.text for h in mem.search("When did Ana get the puppy?", channels=["bm25"], recipe=unweighted)]
        assert plain[0].startswith("Ana: The puppy is great")  # "puppy" three times
        timed = [h.text for h in mem.search("When did Ana get the puppy?", channels=["bm25"])]  # on by default
        assert timed[0] == "Ana: We brought the puppy home last Friday"
        # a question that does not ask when is left as it was
        what = "What about the puppy at home?"
        assert [h.text for h in mem.search(what, channels=["bm25"])] == [
            h.text for h in mem.search(what, channels=["bm25"], recipe=unweighted)
        ]


def test_the_answer_to_a_matching_question_comes_in_though_no_channel_found_it(tmp_path):
    rows = [
        {
            "speaker": "Ana",
            "text": "What is the name of your new puppy?",
            "time": "2023-07-09T13:25:00",
            "session": "1",
        },
        {"speaker": "Ben", "text": "Scout!", "time": "2023-07-09T13:26:00", "session": "1"},
        {"speaker": "Ana", "text": "The garden needs water.", "time": "2023-07-16T10:01:00", "session": "2"},
    ]
    path = write_jsonl(tmp_path / "c.jsonl", rows)
    with open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder()) as mem:
        mem.ingest(path)
        # the vector channel only, one candidate, no context parts: it finds the question alone
        mem.conn.execute("delete from message_parts where context = 1")
        plain = mem.search("puppy name", channels=["vector"], k=1, budget=1, recipe=SearchParams(question_handoff=0.0))
        assert [h.text for h in plain] == ["Ana: What is the name of your new puppy?"]
        handed = mem.search("puppy name", channels=["vector"], k=1, budget=1)
        assert [h.text for h in handed] == ["Ben: Scout!"]  # the question asks all it says: it keeps nothing
        assert handed[0].channels == {"neighbour": {"rank": 1, "score": 0.0}}  # beside the first hit
        # a filter that leaves the answer out keeps it out
        only_ana = mem.search("puppy name", channels=["vector"], k=3, speaker="Ana")
        assert only_ana and all(h.sources[0].speaker == "Ana" for h in only_ana)
