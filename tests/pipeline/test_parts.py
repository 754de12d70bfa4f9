"""Message parts: the sentences of a long message, each with its own vector, so that the
vector channel ranks a message by the sentence that matches."""

from __future__ import annotations

import json

import pytest

from localmem.retrieval import vector_index
from localmem.text.sentences import sentence_spans
from tests.fakes import HashEmbedder
from tests.helpers import count, open_memory, write_jsonl

LONG = (
    "Work at the studio has been hectic all month. We finally repainted the front room. "
    "My cousin got noticed by fashion editors in Milan. The new students keep asking about "
    "evening classes and summer workshops."
)
QUERY = "cousin noticed by fashion editors Milan"


def test_sentence_spans_cut_sentences_worth_a_vector():
    text = 'Hey Jon! Long time no chat! He said "I will go." Then he went home.\nA new line of words'
    spans = sentence_spans(text, min_words=3)
    assert [text[a:b] for a, b in spans] == [
        "Long time no chat!",
        'He said "I will go."',
        "Then he went home.",
        "A new line of words",
    ]
    # by default a part has six words at least: shorter ones are mostly the speaker's name
    assert [text[a:b] for a, b in sentence_spans(text + " And a last sentence of seven words.")] == []
    assert len(sentence_spans(LONG)) == 4
    assert sentence_spans("One sentence only, with several words in it.") == []  # the message is its own part
    assert sentence_spans("") == []
    assert len(sentence_spans("This is a sentence of six words. " * 100)) == 64  # bounded


def test_ingest_stores_parts_once_and_forget_removes_them(tmp_path, store_kind):
    path = write_jsonl(
        tmp_path / "c.jsonl",
        [
            {"speaker": "Gina", "text": LONG, "time": "2023-07-09T13:25:00"},
            {"speaker": "Jon", "text": "Wow, that is great news.", "time": "2023-07-09T13:26:00"},
        ],
    )
    with open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder()) as mem:
        mem.ingest(path)
        conn = mem.conn
        parts = conn.execute(
            'select m.speaker, substr(m.text, cast(p.start + 1 as integer), cast(p."end" - p.start as integer)) '
            "from message_parts p join messages m on m.id = p.message_id order by p.id"
        ).fetchall()
        assert [s for s, _ in parts] == ["Gina"] * 4
        assert parts[2][1] == "My cousin got noticed by fashion editors in Milan."
        assert count(conn, "select count(*) from vec_message_parts") == 4
        mem.ingest(path)  # the same input again: nothing new, parts included
        assert count(conn, "select count(*) from message_parts") == 4
        mem.forget(namespace="t")
        codes = ("vec_part_codes",) if store_kind != "postgres" else ()  # PostgreSQL keeps no binary codes
        for table in ("message_parts", "vec_message_parts", *codes):
            assert count(conn, f"select count(*) from {table}") == 0


def _ranked(mem, **kwargs):
    return [h.text for h in mem.search(QUERY, channels=["vector"], k=10, **kwargs)]


def _store_with_distractors(tmp_path):
    mem = open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder())
    mem.add("Gina", LONG, time="2023-07-09T13:25:00")
    # short messages that share some of the question's words, and little else
    for i, text in enumerate(
        [
            "Fashion editors in Milan",
            "My cousin noticed Milan",
            "Editors noticed fashion",
            "Milan is far away",
            "Noticed the rain today",
        ]
    ):
        mem.add("Jon", text, time=f"2023-07-09T13:3{i}:00")
    return mem


def test_a_message_ranks_by_its_best_matching_sentence(tmp_path):
    with _store_with_distractors(tmp_path) as mem:
        assert _ranked(mem)[0].endswith(LONG)
        # the same store without parts: the long message's average loses to the short ones
        mem.conn.execute("delete from message_parts")
        assert _ranked(mem).index("Gina: " + LONG) > 0


def test_the_part_path_at_scale_matches_the_exact_scan(tmp_path, monkeypatch):
    with _store_with_distractors(tmp_path) as mem:
        exact = _ranked(mem)
        monkeypatch.setattr(vector_index, "EXACT_BELOW", 0)  # the binary-code path
        assert _ranked(mem)[0] == exact[0]


def test_a_store_bound_before_parts_gets_their_tables_and_reembed_cuts_them(tmp_path):
    path = tmp_path / "m.db"
    with open_memory(path, namespace="t", embedder=HashEmbedder()) as mem:
        mem.add("Gina", LONG, time="2023-07-09T13:25:00")
        with mem.conn:  # as a store bound before migration 0008 looked
            mem.conn.execute("drop trigger vec_message_parts_gone")
            mem.conn.execute("drop table vec_message_parts")
            mem.conn.execute("drop table vec_part_codes")
            mem.conn.execute("delete from message_parts")
            mem.conn.execute("delete from vec_code_changes where name = 'parts'")
    with open_memory(path, namespace="t", embedder=HashEmbedder()) as mem:
        assert mem.conn.has_vectors()
        assert count(mem.conn, "select count(*) from vec_message_parts") == 0
        assert mem.search(QUERY, channels=["vector"])  # whole-message vectors still work
        report = mem.admin.reembed().to_dict()
        assert report["parts"] == 4
        assert count(mem.conn, "select count(*) from vec_message_parts") == 4
        assert _ranked(mem)[0].endswith(LONG)


def test_raw_messages_only_search_ignores_parts(tmp_path):
    from dataclasses import replace

    from localmem.retrieval import search

    with _store_with_distractors(tmp_path) as mem:
        vec = mem.embedder.embed([QUERY])[0]
        params = replace(mem.search_params(k=10, channels=["vector"]), units=False, parts=False)
        plain = [h.text for h in search.search(mem.conn, "t", QUERY, vec, params)]
        mem.conn.execute("delete from message_parts")
        assert plain == _ranked(mem)


@pytest.mark.parametrize("vectors", [True, False])
def test_export_and_restore_keep_parts(tmp_path, vectors):
    import io

    with _store_with_distractors(tmp_path) as mem:
        out = io.StringIO()
        mem.admin.export(out, vectors=vectors)
        records = [json.loads(line) for line in out.getvalue().splitlines()]
        assert any(r["type"] == "part" for r in records) is vectors
        (tmp_path / "e.jsonl").write_text(out.getvalue(), encoding="utf-8")
        with open_memory(tmp_path / "r.db", namespace="t", embedder=HashEmbedder()) as fresh:
            fresh.admin.restore(tmp_path / "e.jsonl")
            assert count(fresh.conn, "select count(*) from message_parts") == 4
            assert count(fresh.conn, "select count(*) from vec_message_parts") == 4
            assert _ranked(fresh) == _ranked(mem)
