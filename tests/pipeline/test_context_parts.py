"""Context parts: a message embedded with the turn before it in its session, so that a reply
("Scout!") is found by a question about what it answers (migration 0012)."""

from __future__ import annotations

import io
import json

from localmem.pipeline import ingest
from localmem.retrieval.search import SearchParams
from tests.fakes import HashEmbedder
from tests.helpers import count, open_memory, store_config, write_jsonl

QUESTION = "What is the name of your new puppy?"
REPLY = "Scout!"
ROWS = [
    {"speaker": "Ana", "text": QUESTION, "time": "2023-07-09T13:25:00", "session": "1"},
    {"speaker": "Ben", "text": REPLY, "time": "2023-07-09T13:26:00", "session": "1"},
    {"speaker": "Ana", "text": "So cute, I love it.", "time": "2023-07-09T13:27:00", "session": "1"},
    {"speaker": "Ben", "text": "Hello again, long week.", "time": "2023-07-16T10:00:00", "session": "2"},
    {"speaker": "Ana", "text": "The garden needs water.", "time": "2023-07-16T10:01:00", "session": "2"},
    {"speaker": "Ben", "text": "My car broke down again.", "time": "2023-07-16T10:02:00", "session": "2"},
]


def _open(path, **kwargs):
    """A store that gives every turn a context part (``context_parts`` "all"; the default,
    "questions", only a reply to a question: the last test)."""
    return open_memory(path, namespace="t", config=store_config(context_parts="all"), **kwargs)


def _contexts(conn) -> list[tuple[str, str]]:
    """(speaker, text) of every message with a context part, in part order."""
    return conn.execute(
        "select m.speaker, m.text from message_parts p join messages m on m.id = p.message_id "
        "where p.context = 1 order by p.id"
    ).fetchall()


def _ranked(mem, query: str = "the puppy name") -> list[str]:
    # Without the question handoff, which would lift the reply after a matching question anyway.
    only_parts = SearchParams(question_handoff=0.0)
    return [h.text for h in mem.search(query, channels=["vector"], k=10, recipe=only_parts)]


def test_a_turn_gets_a_context_part_with_the_turn_before_it_in_its_session(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", ROWS)
    embedder = HashEmbedder()
    with _open(tmp_path / "m.db", embedder=embedder) as mem:
        mem.ingest(path)
        # the first turn of each session has none: nothing came before it there
        assert _contexts(mem.conn) == [
            ("Ben", REPLY),
            ("Ana", "So cute, I love it."),
            ("Ana", "The garden needs water."),
            ("Ben", "My car broke down again."),
        ]
        embedded = [text for call in embedder.calls for text in call]
        assert f"Ana: {QUESTION}\nBen: {REPLY}" in embedded
        start, end = mem.conn.execute('select start, "end" from message_parts where context = 1 order by id').fetchone()
        assert (start, end) == (0, len(REPLY))
        assert count(mem.conn, "select count(*) from vec_message_parts") == 4
        mem.ingest(path)  # the same input again adds nothing
        assert len(_contexts(mem.conn)) == 4


def test_a_reply_is_found_by_the_question_it_answers(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", ROWS)
    with _open(tmp_path / "m.db", embedder=HashEmbedder()) as mem:
        mem.ingest(path)
        assert f"Ben: {REPLY}" in _ranked(mem)[:2]  # after the question itself
        mem.conn.execute("delete from message_parts where context = 1")
        assert f"Ben: {REPLY}" not in _ranked(mem)[:2]


def test_a_session_cut_across_embedding_windows_takes_the_turn_before_from_the_store(tmp_path, monkeypatch):
    monkeypatch.setattr(ingest, "EMBED_WINDOW", 1)
    path = write_jsonl(tmp_path / "c.jsonl", ROWS)
    embedder = HashEmbedder()
    config = store_config(ingest_batch=1, context_parts="all")
    with open_memory(tmp_path / "m.db", namespace="t", embedder=embedder, config=config) as mem:
        mem.ingest(path)
        assert len(_contexts(mem.conn)) == 4
        assert f"Ana: {QUESTION}\nBen: {REPLY}" in [text for call in embedder.calls for text in call]


def test_messages_without_a_session_get_none(tmp_path):
    with _open(tmp_path / "m.db", embedder=HashEmbedder()) as mem:
        mem.add("Ana", QUESTION)
        mem.add("Ben", REPLY)
        assert _contexts(mem.conn) == []


def test_a_correction_is_embedded_after_the_turn_before_the_replaced_message(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", ROWS)
    embedder = HashEmbedder()
    with _open(tmp_path / "m.db", embedder=embedder) as mem:
        mem.ingest(path)
        (reply_id,) = mem.conn.execute("select id from messages where text = ?", (REPLY,)).fetchone()
        mem.correct(f"m:{reply_id}", "Rex!")
        assert ("Ben", "Rex!") in _contexts(mem.conn)
        assert f"Ana: {QUESTION}\nBen: Rex!" in embedder.calls[-1]


def test_excerpts_read_sentence_parts_only(tmp_path):
    long = "Work was hectic all month long. " * 3 + "We finally repainted the whole front room."
    rows = [dict(ROWS[0]), {**ROWS[1], "text": long}]
    path = write_jsonl(tmp_path / "c.jsonl", rows)
    with _open(tmp_path / "m.db", embedder=HashEmbedder()) as mem:
        mem.ingest(path)
        (mid,) = mem.conn.execute("select id from messages where speaker = 'Ben'").fetchone()
        assert count(mem.conn, "select count(*) from message_parts where message_id = ? and context = 1", mid) == 1
        spans = mem.conn.run("parts_with_codes", {"ids": json.dumps([mid])}).fetchall()
        assert len(spans) == 4 and all(end - start < len(long) for _mid, start, end, _code in spans)


def test_doctor_counts_messages_without_one_and_reembed_makes_them(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", ROWS)
    with _open(tmp_path / "m.db", embedder=HashEmbedder()) as mem:
        mem.ingest(path)
        assert mem.admin.doctor().db["context_parts"] == "ok"
        mem.conn.execute("delete from message_parts where context = 1")  # as a store made before them
        assert mem.admin.doctor().db["context_parts"].startswith("4 messages")
        assert _ranked(mem)  # search works without them
        report = mem.admin.reembed().to_dict()
        assert report["parts"] == 4
        assert mem.admin.doctor().db["context_parts"] == "ok"
        assert f"Ben: {REPLY}" in _ranked(mem)[:2]


def test_export_and_restore_keep_them(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", ROWS)
    with _open(tmp_path / "m.db", embedder=HashEmbedder()) as mem:
        mem.ingest(path)
        for vectors in (True, False):
            out = io.StringIO()
            mem.admin.export(out, vectors=vectors)
            records = [json.loads(line) for line in out.getvalue().splitlines()]
            assert sum(r["type"] == "part" and r["context"] == 1 for r in records) == (4 if vectors else 0)
            (tmp_path / f"e{vectors}.jsonl").write_text(out.getvalue(), encoding="utf-8")
            with _open(tmp_path / f"r{vectors}.db", embedder=HashEmbedder()) as fresh:
                fresh.admin.restore(tmp_path / f"e{vectors}.jsonl")  # without vectors: embedded again
                assert _contexts(fresh.conn) == _contexts(mem.conn)
                assert _ranked(fresh) == _ranked(mem)


def test_the_setting_questions_frames_only_replies_to_a_question_and_none_frames_nothing(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", ROWS)
    with open_memory(tmp_path / "q.db", namespace="t", embedder=HashEmbedder(), config=store_config()) as mem:
        mem.ingest(path)  # "questions" is the default
        assert _contexts(mem.conn) == [("Ben", REPLY)]  # the only turn after a "?"
        assert mem.admin.doctor().db["context_parts"] == "ok"
        assert mem.admin.reembed().parts == 1
        assert _contexts(mem.conn) == [("Ben", REPLY)]
    config = store_config(context_parts="none")
    with open_memory(tmp_path / "n.db", namespace="t", embedder=HashEmbedder(), config=config) as mem:
        mem.ingest(path)
        (reply_id,) = mem.conn.execute("select id from messages where text = ?", (REPLY,)).fetchone()
        mem.correct(f"m:{reply_id}", "Rex!")
        assert _contexts(mem.conn) == []
        assert mem.admin.doctor().db["context_parts"].startswith("off")
    with _open(tmp_path / "n.db", embedder=HashEmbedder()) as mem:  # "all"
        assert mem.admin.doctor().db["context_parts"].startswith("5 messages")  # the correction too


def test_forgetting_a_turn_drops_the_context_part_embedded_with_it(tmp_path):
    """The reply's context part was embedded with the question: forgetting the question leaves
    nothing derived from it in the reply's vectors; reembed frames the reply anew."""
    path = write_jsonl(tmp_path / "c.jsonl", ROWS)
    embedder = HashEmbedder()
    with _open(tmp_path / "m.db", embedder=embedder) as mem:
        mem.ingest(path)
        (question_id,) = mem.conn.execute("select id from messages where text = ?", (QUESTION,)).fetchone()
        before = count(mem.conn, "select count(*) from vec_message_parts")
        mem.forget(ids=[f"m:{question_id}"])
        assert ("Ben", REPLY) not in _contexts(mem.conn)  # the reply had the question as its turn before
        assert count(mem.conn, "select count(*) from vec_message_parts") == before - 1
        assert ("Ana", "So cute, I love it.") in _contexts(mem.conn)  # its turn before stays
        assert mem.admin.doctor().db["context_parts"] == "ok"  # the reply is first in its session now
        calls = len(embedder.calls)
        mem.admin.reembed()
        assert ("Ben", REPLY) not in _contexts(mem.conn)  # now the first turn of its session
        assert not any(QUESTION in text for call in embedder.calls[calls:] for text in call)
