"""The vector channels embed a question without its speakers' names (retrieval.query_text)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from localmem.retrieval.query_text import speaker_names, without_names
from localmem.retrieval.search import SearchParams
from localmem_bench.baselines import RAW_TURNS
from tests.fakes import HashEmbedder, ScriptedLLM
from tests.helpers import open_memory


@pytest.mark.parametrize(
    "query, expected",
    [
        ("What book is Dana reading?", "What book is reading?"),
        ("What is Dana's favourite book?", "What is favourite book?"),
        ("What is Dana’s cat called?", "What is cat called?"),
        ("What do Leo and Dana have in common?", "What do and have in common?"),
        ("What did Danae say?", "What did Danae say?"),  # another word that starts with a name
        ("what did dana say?", "what did dana say?"),  # names are matched as written
        ("Dana?", "Dana?"),  # nothing but the name: kept, there is nothing else to embed
        ("What did Dana Ruiz say?", "What did say?"),  # the longest name first
    ],
)
def test_names_come_out_whole_with_their_possessive(query, expected):
    assert without_names(query, ["Dana", "Leo", "Dana Ruiz"]) == expected


def test_role_named_speakers_stay_in_the_question():
    assert speaker_names(["user", "assistant", "Sam", " "]) == ["Sam"]
    assert (
        without_names("What did the assistant suggest for my blight?", speaker_names(["user", "assistant"]))
        == "What did the assistant suggest for my blight?"
    )


CHAT = [
    ("Leo", "Hey Dana, how's it going?"),
    ("Dana", "I'm currently reading a novel about lighthouse keepers on the Irish coast."),
    ("Leo", "Go get 'em, Dana!"),
    ("Dana", "Thanks, Leo! Talk soon."),
]


@pytest.fixture
def chat(tmp_path):
    embedder = HashEmbedder()
    llm = ScriptedLLM(responder=lambda messages: {"answer": "not in memory", "supports": [], "confidence": 0.0})
    with open_memory(tmp_path / "m.db", namespace="t", embedder=embedder, llm=llm) as mem:
        for i, (speaker, text) in enumerate(CHAT):
            mem.add(speaker, text, time=f"2024-03-0{i + 1}T10:00:00")
        yield mem, embedder


def test_search_embeds_the_question_without_the_speakers_names(chat):
    mem, embedder = chat
    hits = mem.search("What book is Dana reading?", k=4)
    assert embedder.calls[-1] == ["What book is reading?"]
    # The book message is near the top; its exact rank is an artefact of the hashing embedder.
    assert any("lighthouse" in h.text for h in hits[:3]), [h.text for h in hits]
    # BM25 still matches the name: alone, it finds the messages that only name Dana.
    by_words = mem.search("What book is Dana reading?", k=4, channels=["bm25"])
    for said in ("Go get 'em, Dana!", "Hey Dana, how's it going?"):
        assert any(said in h.text for h in by_words), [h.text for h in by_words]


def test_ask_reads_excerpts_by_the_same_question(chat):
    mem, embedder = chat
    mem.ask("What book is Dana reading?")
    embedded = [text for batch in embedder.calls for text in batch]
    assert "What book is Dana reading?" not in embedded
    assert embedded.count("What book is reading?") >= 1


def test_a_recipe_can_keep_the_question_as_asked(chat):
    mem, embedder = chat
    mem.search("What book is Dana reading?", recipe=replace(SearchParams(), without_speakers=False))
    assert embedder.calls[-1] == ["What book is Dana reading?"]
    # The plain-RAG baseline embeds the question as asked.
    assert RAW_TURNS.without_speakers is False
