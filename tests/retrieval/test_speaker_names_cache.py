"""The speakers' names a vector query leaves out are kept between searches and read again when
the store changes, through this Memory or another connection."""

from __future__ import annotations

from tests.fakes import HashEmbedder
from tests.helpers import open_memory


def test_names_follow_writes_from_this_memory_and_from_another(tmp_path):
    db = tmp_path / "n.db"
    with open_memory(db, embedder=HashEmbedder()) as mem:
        mem.add("Ann", "I moved to Oslo.", time="2024-03-02T10:00")
        mem.search("Where did Ann move?")
        assert mem._speaker_names() == ["Ann"]
        assert mem._speaker_names() is mem._speaker_names()  # kept while nothing changes
        mem.add("Bob", "Nice.", time="2024-03-02T10:05")
        assert sorted(mem._speaker_names()) == ["Ann", "Bob"]
        with open_memory(db, embedder=HashEmbedder()) as other:
            other.add("Zelda", "Hello from another connection.", time="2024-03-03T10:00")
        assert sorted(mem._speaker_names()) == ["Ann", "Bob", "Zelda"]
        assert mem._vector_texts(["What did Zelda say?"], mem.search_params(5)) != ["What did Zelda say?"]
