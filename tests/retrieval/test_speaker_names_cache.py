"""The speakers' names a vector query leaves out are kept between searches and read again when
the store changes, through this Memory or another connection."""

from __future__ import annotations

from localmem.retrieval.batch import vector_texts
from tests.fakes import HashEmbedder
from tests.helpers import open_memory


def test_names_follow_writes_from_this_memory_and_from_another(tmp_path):
    db = tmp_path / "n.db"
    with open_memory(db, embedder=HashEmbedder()) as mem:

        def names() -> list[str]:
            return mem._names(mem.conn, mem.namespace, mem.config.user_name)

        mem.add("Ann", "I moved to Oslo.", time="2024-03-02T10:00")
        mem.search("Where did Ann move?")
        assert names() == ["Ann"]
        assert names() is names()  # kept while nothing changes
        mem.add("Bob", "Nice.", time="2024-03-02T10:05")
        assert sorted(names()) == ["Ann", "Bob"]
        with open_memory(db, embedder=HashEmbedder()) as other:
            other.add("Zelda", "Hello from another connection.", time="2024-03-03T10:00")
        assert sorted(names()) == ["Ann", "Bob", "Zelda"]
        query = ["What did Zelda say?"]
        assert vector_texts(mem.conn, mem.namespace, query, mem.search_params(k=5), None, mem._names) != query
