"""Forgotten means gone from the file: its bytes (and its WAL's) hold no trace of what a forget
deleted, whatever kind of forget it was; and `localmem vacuum` compacts what is left."""

from __future__ import annotations

import json
from pathlib import Path

import apsw
import numpy as np
import pytest

from localmem.cli import cli
from localmem.retrieval.search import SearchParams
from localmem.store import db
from localmem.store.purge import file_size
from tests.fakes import HashEmbedder, ScriptedLLM
from tests.helpers import open_memory, postgres_url, raw_connection, runner, store_bytes, write_jsonl
from tests.trials import forget_bytes as trial


@pytest.fixture(scope="module")
def forgotten(tmp_path_factory):
    """The trial's store (a namespace and a source to forget, built with a scripted LLM), what
    the file held before, and what it held after each forget, open and closed."""
    root = tmp_path_factory.mktemp("forget")
    return trial.trial(root)


@pytest.mark.parametrize("kind", ["namespace", "source"])
def test_forgotten_text_and_vectors_are_not_in_the_file(forgotten, kind):
    before = forgotten["before"][kind]
    # the test can fail: the marker and every vector were in the file before
    assert before["marker"] > 50 and before["vectors_found"] == before["vectors"] > 100
    for when in ("open", "closed"):  # right after forget returns, and once the store is closed
        after = forgotten[f"{kind}_{when}"]
        assert after["marker"] == 0 and after["marker_tail"] == 0, (kind, when, after)
        assert after["vectors_found"] == 0, (kind, when, after)


def test_nothing_of_a_forgotten_namespace_or_source_is_found_or_logged(forgotten):
    assert forgotten["gone_llm_calls"] > 0 and forgotten["llm_calls_left"] == 0
    # the message after the forgotten source's last one had it as its full-text context
    assert forgotten["source_search_hits"] == 0


def test_a_namespaces_llm_calls_go_with_it_even_those_of_no_episode(tmp_path):
    with open_memory(tmp_path / "m.db", namespace="gone", embedder=HashEmbedder()) as mem:
        mem.add("Ann", "hello")
        for ns in ("gone", "kept"):  # a segmentation call is logged without an episode
            mem.conn.execute(
                "insert into llm_calls (ns, stage, prompt_version, model_id, ok, raw, created_at) "
                "values (?, 'segment', 'v', 'm', 0, 'qzrawreply', 'x')",
                (ns,),
            )
        mem.forget(namespace="gone")
        assert mem.conn.execute("select ns from llm_calls").fetchall() == [("kept",)]


def _chat(tmp_path: Path, name: str, rows: list[tuple[str, str]], start: int = 0) -> Path:
    return write_jsonl(
        tmp_path / name,
        [
            {"conversation": "c", "session": "s", "id": f"m{start + i}", "speaker": sp, "text": tx}
            for i, (sp, tx) in enumerate(rows)
        ],
    )


def test_the_message_after_a_forgotten_one_is_indexed_again(tmp_path):
    first = [("Ann", "plain words"), ("Bob", "the secret word is qzvorpal")]
    with open_memory(tmp_path / "m.db", embedder=HashEmbedder()) as mem:
        mem.ingest(_chat(tmp_path, "a.jsonl", first))
        mem.ingest(_chat(tmp_path, "b.jsonl", first + [("Ann", "then we spoke of tea")]))
        bm25 = {"channels": ["bm25"], "recipe": SearchParams(session_weight=0.0)}
        assert [h.text for h in mem.search("qzvorpal", **bm25)] == [
            "Bob: the secret word is qzvorpal",
            "Ann: then we spoke of tea",
        ]  # found by its context too
        mem.forget(source_id=mem.browse.sources()[0].id)
        assert mem.search("qzvorpal", **bm25) == []
        assert [h.text for h in mem.search("tea", **bm25)] == ["Ann: then we spoke of tea"]
        if postgres_url(mem.path) is None:
            context = mem.conn.execute("select count(*) from messages_fts where messages_fts match 'context:qzvorpal'")
        else:  # the context is the tsvector's weight B (sql/postgres/migrations/0001_init.sql)
            context = mem.conn.execute(
                "select count(*) from messages_fts where doc @@ to_tsquery('localmem', 'qzvorpal')"
            )
        assert context.fetchone()[0] == 0


def test_a_summary_written_from_forgotten_memory_is_dropped(tmp_path):
    llm = ScriptedLLM(responder=trial.responder)
    with open_memory(tmp_path / "m.db", embedder=HashEmbedder(), llm=llm) as mem:
        mem.ingest(
            _chat(tmp_path, "a.jsonl", [("Ann", "I adopted a cat named Qzmochi"), ("Bob", "lovely")]), extract="llm"
        )
        mem.ingest(_chat(tmp_path, "b.jsonl", [("Ann", "I run on Sundays"), ("Bob", "nice")], start=10), extract="llm")
        conn = mem.conn
        conn.execute("update entities set summary = 'Ann adopted Qzmochi.' where name = 'Ann'")
        mem.forget(source_id=mem.browse.sources()[0].id)
        assert conn.execute("select summary from entities where name = 'Ann'").fetchone() == (None,)
    assert b"Qzmochi" not in store_bytes(tmp_path / "m.db")


def test_sqlite_vec_zeroes_a_deleted_vector_in_its_chunk():
    """What the sqlite-vec pin (>= 0.1.7) is for: 0.1.6 left deleted vectors in the chunk blob."""
    conn = apsw.Connection(":memory:")
    db._load_sqlite_vec(conn)
    conn.execute("create virtual table v using vec0(embedding float[8], ns text partition key)")
    vectors = {i: np.random.default_rng(i).standard_normal(8).astype(np.float32).tobytes() for i in range(1, 9)}
    for i, vec in vectors.items():
        conn.execute("insert into v (rowid, embedding, ns) values (?, ?, 'a')", (i, vec))
    conn.execute("delete from v where rowid <= 4")
    chunks = b"".join(bytes(r[0]) for r in conn.execute("select vectors from v_vector_chunks00"))
    assert [i for i in vectors if vectors[i] in chunks] == [5, 6, 7, 8]


def _reader(path: Path):
    """Another connection to the store at ``path``, autocommitting (the test begins its own)."""
    url = postgres_url(path)
    if url is None:
        return raw_connection(path)
    import psycopg

    return psycopg.connect(url, autocommit=True)


def test_forget_reports_a_wal_another_reader_keeps(tmp_path):
    """A reader in a transaction keeps what a forget deleted: on SQLite the WAL's old pages, on
    PostgreSQL the lock its read holds on the table, which VACUUM FULL waits for in vain. The
    forget says so, and `localmem vacuum` finishes once the reader is done."""
    with open_memory(tmp_path / "m.db", embedder=HashEmbedder(), config=_quick()) as mem:
        mem.add("Ann", "one qzpeach message")
        reader = _reader(mem.path)
        reader.execute("BEGIN")
        reader.execute("select count(*) from messages").fetchall()  # holds a snapshot
        try:
            done = mem.forget(namespace="default").to_dict()
        finally:
            reader.execute("COMMIT")
            reader.close()
        assert done["file"]["wal_emptied"] is False and done["file"]["pending"] is True
        if postgres_url(mem.path) is not None:
            assert "skipped: messages (held by another session)" in done["file"]["vacuum_reason"]
            assert b"qzpeach" in store_bytes(mem.path)  # the dead tuple's bytes, until the vacuum
        assert mem.admin.vacuum().wal_emptied is True
    assert b"qzpeach" not in store_bytes(tmp_path / "m.db")


def _quick():
    from localmem.config import Config

    return Config(busy_timeout_ms=200)


def _old_store(path: Path) -> None:
    """A store as localmem made it before auto_vacuum was set, with free pages (left by a
    table dropped while secure_delete was off, as every delete was then)."""
    with open_memory(path, embedder=HashEmbedder()) as mem:
        for i in range(300):
            mem.add("Ann", f"message {i} about the harbour and the ferry to the island")
    conn = raw_connection(path)
    conn.execute("pragma auto_vacuum = none; vacuum; pragma secure_delete = off")
    conn.execute(
        "create table scratch (x); with recursive n (i) as (select 1 union all select i + 1 "
        "from n where i < 40) insert into scratch select 'qzoldfree ' || hex(randomblob(1500)) "
        "from n; drop table scratch"
    )
    conn.close()


@pytest.mark.plain_only
def test_vacuum_switches_an_old_store_to_incremental_and_reclaims_space(tmp_path, use_models):
    path = tmp_path / "old.db"
    _old_store(path)
    assert b"qzoldfree" in trial.file_bytes(path)  # in its free pages
    use_models(embedder=HashEmbedder())
    result = runner().invoke(cli, ["--db", str(path), "vacuum", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["auto_vacuum"] == "none -> incremental" and report["wal_emptied"] is True
    assert report["reclaimed_bytes"] > 0 and report["bytes_after"] == file_size(path)
    assert b"qzoldfree" not in trial.file_bytes(path)
    conn = raw_connection(path)
    assert conn.pragma("auto_vacuum") == 2
    conn.close()
    text = runner().invoke(cli, ["--db", str(path), "vacuum"])
    assert text.exit_code == 0 and text.stdout.startswith("vacuumed: ")


@pytest.mark.plain_only
def test_a_forget_in_an_old_store_writes_the_file_anew(tmp_path):
    """Its free pages were never zeroed: what earlier deletes left there must go too."""
    path = tmp_path / "old.db"
    _old_store(path)
    with open_memory(path, embedder=HashEmbedder()) as mem:
        done = mem.forget(ids=["m:1"]).file
        assert done["vacuumed"] is True and "made before auto_vacuum" in done["vacuum_reason"]
        assert mem.conn.pragma("auto_vacuum") == 2
        assert mem.forget(ids=["m:2"]).file["vacuumed"] is False  # once is enough
    assert b"qzoldfree" not in trial.file_bytes(path)


def test_a_new_store_frees_forgotten_pages_at_once(tmp_path):
    with open_memory(tmp_path / "m.db", namespace="big", embedder=HashEmbedder()) as mem:
        if postgres_url(mem.path) is None:  # PostgreSQL: VACUUM FULL hands the space back
            assert mem.conn.pragma("auto_vacuum") == 2  # incremental, set before the first table
        mem.ingest(
            write_jsonl(tmp_path / "a.jsonl", [{"speaker": "Ann", "text": f"line {i} " * 40} for i in range(400)])
        )
        grown = file_size(mem.path) if postgres_url(mem.path) is None else None
        done = mem.forget(namespace="big").to_dict()
        assert done["file"]["freed_bytes"] > 0
        assert done["file"]["bytes_after"] < (grown or done["file"]["bytes_before"]) / 2
