"""The store: schema and migrations, named SQL, idempotent and resumable ingest, add,
search, export/import, forget and re-embed."""

from __future__ import annotations

import datetime as dt
import io
import json
import random
import re
import sys
from pathlib import Path

import apsw
import pytest

from localmem import Memory
from localmem.cli import cli
from localmem.config import Config
from localmem.errors import EmbedderMismatchError, LocalmemError, NotFoundError
from localmem.models.embedding import to_blob, unit_text
from localmem.retrieval.search import SearchParams, fts_query, rrf
from localmem.store import db
from localmem.store.queries import q, query_names, sql_dir
from localmem.text.sentences import question_share
from tests.conftest import FIXTURES
from tests.fakes import HashEmbedder
from tests.helpers import (
    REPO,
    SAMPLE_CHAT,
    count,
    fts_matches,
    on_postgres,
    open_memory,
    read_count,
    runner,
    sigkill_when,
    snapshot,
    table_counts,
    vec_id,
    vector_dims,
    vector_ids,
    write_jsonl,
)

LOCOMO = FIXTURES / "tiny_locomo.json"

DESIGN_TABLES = {
    "meta",
    "sources",
    "messages",
    "units",
    "unit_sources",
    "entities",
    "entity_aliases",
    "mentions",
    "links",
    "messages_fts",
    "units_fts",
}


def tables(conn) -> set[str]:
    return {r[0] for r in conn.execute("select name from sqlite_schema where type = 'table'")}


def rows(n: int, start: int = 0, **extra) -> list[dict]:
    return [
        {"speaker": "Ana" if i % 2 else "Ben", "text": f"message number {i} about topic{i}", **extra}
        for i in range(start, start + n)
    ]


def export_text(mem: Memory, **kwargs) -> str:
    buf = io.StringIO()
    mem.admin.export(buf, **kwargs)
    return buf.getvalue()


def other(mem: Memory, namespace: str, embedder=None) -> Memory:
    """Another handle on the same store, in another namespace."""
    return open_memory(mem.path, namespace=namespace, embedder=embedder or mem.embedder)


def add_units(mem: Memory, ns: str, message_ids: list[int]) -> dict[str, int]:
    """Derived rows of every kind (episode, fact, entity, alias, mention, link, vectors), by hand."""
    conn, emb = mem.conn, mem.embedder
    with conn:
        episode = conn.execute(
            "insert into units (ns, kind, conversation, title, text, occurred_start, time_precision, "
            "data, created_at) values (?, 'episode', 'c', 'The puppy', 'Ana adopted a beagle puppy', "
            "'2023-05-08T13:56:00', 'day', '{\"k\": [1, 2]}', '2024-01-01T00:00:00') returning id",
            (ns,),
        ).fetchone()[0]
        fact = conn.execute(
            "insert into units (ns, kind, episode_id, text, subject, predicate, object, created_at) "
            "values (?, 'fact', ?, 'The puppy is called Biscuit', 'puppy', 'named', 'Biscuit', "
            "'2024-01-01T00:00:00') returning id",
            (ns, episode),
        ).fetchone()[0]
        for unit in (episode, fact):
            for mid in message_ids:
                conn.execute("insert into unit_sources values (?, ?)", (unit, mid))
        entity = conn.execute(
            "insert into entities (ns, name, norm_name, type, summary, created_at) values "
            "(?, 'Biscuit', 'biscuit', 'animal', 'a beagle', '2024-01-01T00:00:00') returning id",
            (ns,),
        ).fetchone()[0]
        conn.execute("insert into entity_aliases values (?, 'Bisc', 'bisc')", (entity,))
        conn.execute("insert into mentions values (?, ?, 'main', 'pet')", (fact, entity))
        conn.execute(
            "insert into links (src_id, dst_id, type, weight, created_at) values "
            "(?, ?, 'semantic', 0.5, '2024-01-01T00:00:00')",
            (fact, episode),
        )
        for uid, kind, text, when in conn.execute(
            "select id, kind, coalesce(title || '. ', '') || text, occurred_start from units where id in (?, ?)",
            (episode, fact),
        ).fetchall():
            conn.run(
                "vec_unit_insert",
                {"id": uid, "ns": ns, "kind": kind, "embedding": to_blob(emb.embed([unit_text(text, when)])[0])},
            )
    return {"episode": episode, "fact": fact, "entity": entity}


@pytest.fixture
def populated(mem):
    """Three namespaces: tiny-1 and tiny-2 (LoCoMo) and test (sample chat + units)."""
    mem.ingest(LOCOMO)
    mem.ingest(SAMPLE_CHAT)
    ids = [
        r[0] for r in mem.conn.execute("select id from messages where ns = 'test' and text like '%Mochi%' order by id")
    ]
    add_units(mem, "test", ids[:2])
    return mem


# -- schema and migrations ----------------------------------------------------------------------


def test_fresh_store_schema(mem):
    conn = mem.conn
    n_migrations = len(list((sql_dir() / "sqlite" / "migrations").glob("*.sql")))
    assert n_migrations >= 1
    assert conn.pragma("user_version") == n_migrations == db.latest_version()
    assert conn.pragma("journal_mode") == "wal"
    assert conn.pragma("foreign_keys") == 1
    assert conn.execute("select vec_version()").fetchone()[0].startswith("v")
    assert DESIGN_TABLES <= tables(conn)
    assert not {"vec_messages", "vec_units"} & tables(conn)  # no embedder bound yet
    mem.add("Ana", "first message")
    assert {"vec_messages", "vec_units"} <= tables(conn)
    assert conn.all_meta()["embed_model_id"] == "hash-embedder"
    assert conn.all_meta()["embed_dim"] == "64"


def test_vector_tables_appear_on_first_ingest(mem, tmp_path):
    assert not mem.conn.has_vectors()
    mem.ingest(write_jsonl(tmp_path / "a.jsonl", rows(3)))
    assert mem.conn.has_vectors()
    assert count(mem.conn, "select count(*) from vec_messages") == 3


def test_reopen_applies_nothing_and_keeps_data(mem):
    mem.add("Ana", "kept across reopen")
    path = mem.path
    mem.close()
    with open_memory(path, namespace="test", embedder=HashEmbedder()) as again:
        assert db.migrate(again.conn, str(path)) == []
        assert again.stats().messages == 1
        assert again.conn.pragma("foreign_keys") == 1


def test_foreign_keys_are_enforced(mem):
    with pytest.raises(apsw.ConstraintError):
        mem.conn.execute(
            "insert into messages (ns, source_id, conversation, seq, external_id, speaker, "
            "text) values ('test', 999, 'c', 0, 'x', 's', 't')"
        )


@pytest.fixture
def bound_conn(mem):
    mem.add("Ana", "bind the embedder")
    return mem.conn


DDL_QUERIES = {"vec_create", "vec_drop", "codes_add_int8"}  # the last is run by test_vector_index


def statements(sql: str) -> list[str]:
    out, current = [], ""
    for line in sql.splitlines(keepends=True):
        current += line
        if apsw.complete(current):
            out.append(current)
            current = ""
    assert not re.sub(r"--[^\n]*", "", current).strip(), f"incomplete SQL: {current!r}"
    return out


@pytest.mark.parametrize("name", [n for n in query_names() if n not in DDL_QUERIES])
def test_named_query_explains(bound_conn, name):
    stmts = statements(q(name))
    assert stmts
    if name.startswith("purge_"):  # they read the tables purge_watch makes, inside a forget
        bound_conn.run("purge_watch")
    if name.startswith("reembed_"):  # the table a reembed makes while it runs
        bound_conn.run("reembed_staging_create")
    for stmt in stmts:
        params = dict.fromkeys(re.findall(r"(?<![:\w]):([a-z_][a-z0-9_]*)", stmt))
        bound_conn.execute("EXPLAIN " + stmt, params).fetchall()


def test_ddl_queries_run_on_a_scratch_store(tmp_path):
    with open_memory(tmp_path / "scratch.db", embedder=HashEmbedder()) as scratch:
        conn = scratch.conn
        conn.execute(q("vec_create").replace("{dim}", "8"))
        assert {"vec_messages", "vec_units"} <= tables(conn)
        conn.execute(q("vec_create").replace("{dim}", "8"))  # idempotent
        conn.run("vec_drop")
        assert not {"vec_messages", "vec_units"} & tables(conn)
        triggers = {r[0] for r in conn.execute("select name from sqlite_schema where type = 'trigger'")}
        assert not {"vec_messages_delete", "vec_units_delete"} & triggers


def test_query_names_cover_the_code():
    """Every named query the package runs (store.run("name"), q("name")) exists."""
    used = set()
    for path in (REPO / "localmem").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        used |= set(re.findall(r'\bq\(\s*"([a-z_0-9]+)"\s*\)', text))
        used |= set(re.findall(r'\.run(?:_many)?\(\s*"([a-z_0-9]+)"', text))
    assert used and used <= set(query_names())


# -- idempotent ingest ----------------------------------------------------------------------------


def test_same_file_twice_adds_nothing(mem, embedder, tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", rows(5))
    first = mem.ingest(path)
    assert (first.added, first.skipped) == (5, 0)
    before, calls = table_counts(mem.conn), len(embedder.calls)
    second = mem.ingest(path)
    assert (second.added, second.skipped) == (0, 5)
    assert second.namespaces[0].already_loaded
    assert table_counts(mem.conn) == before
    assert len(embedder.calls) == calls  # nothing was embedded again


def test_appended_file_adds_only_new_messages(mem, embedder, tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", rows(3))
    mem.ingest(path)
    with path.open("a") as fh:
        for row in rows(2, start=3):
            fh.write(json.dumps(row) + "\n")
    calls = len(embedder.calls)
    report = mem.ingest(path)
    assert (report.added, report.skipped, report.conflicts) == (2, 3, 0)
    assert mem.stats().messages == 5
    embedded = [t for call in embedder.calls[calls:] for t in call]
    assert sorted(embedded) == sorted(f"{r['speaker']}: {r['text']}" for r in rows(2, start=3))
    ext = [r[0] for r in mem.conn.execute("select external_id from messages order by seq")]
    assert ext == ["L1", "L2", "L3", "L4", "L5"]


def test_changed_text_is_a_conflict_and_keeps_stored_text(mem, tmp_path):
    mem.ingest(
        write_jsonl(
            tmp_path / "a.jsonl", [{"id": "x", "conversation": "c", "speaker": "Ana", "text": "the original words"}]
        )
    )
    report = mem.ingest(
        write_jsonl(
            tmp_path / "b.jsonl",
            [
                {"id": "x", "conversation": "c", "speaker": "Ana", "text": "rewritten words"},
                {"id": "y", "conversation": "c", "speaker": "Ben", "text": "a new one"},
            ],
        )
    )
    assert (report.added, report.skipped, report.conflicts) == (1, 1, 1)
    assert mem.conn.execute("select text from messages where external_id = 'x'").fetchone()[0] == "the original words"
    assert not mem.search("rewritten", channels=["bm25"])


def test_same_file_into_two_namespaces(mem, tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", rows(4))
    mem.ingest(path)
    report = mem.ingest(path, namespace="second")
    assert report.added == 4
    assert {r.namespace: r.messages for r in mem.namespaces()} == {"test": 4, "second": 4}


def test_resume_after_a_crash_between_batches(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", rows(5))
    cfg = Config(ingest_batch=2)
    seen = []

    def crash(done: int, total: int) -> None:
        seen.append((done, total))
        raise RuntimeError("simulated crash")

    with open_memory(tmp_path / "m.db", namespace="ns", config=cfg, embedder=HashEmbedder()) as mem:
        with pytest.raises(RuntimeError, match="simulated crash"):
            mem.ingest(path, progress=crash)
        assert seen == [(2, 5)]
        assert mem.stats().messages == 2 and mem.stats().unfinished_sources == 1
        assert [s.status for s in mem.browse.sources()] == ["loading"]
    progress = []
    with open_memory(tmp_path / "m.db", namespace="ns", config=cfg, embedder=HashEmbedder()) as mem:
        report = mem.ingest(path, progress=lambda d, t: progress.append((d, t)))
        assert (report.added, report.skipped) == (3, 2)
        assert progress == [(2, 5), (4, 5), (5, 5)]
        assert [(s.status, s.messages) for s in mem.browse.sources()] == [("loaded", 5)]
        assert count(mem.conn, "select count(distinct external_id) from messages") == 5
        assert table_counts(mem.conn)["messages_fts"] == table_counts(mem.conn)["vec_messages"] == 5


_KILL_SCRIPT = """
import sys, time
sys.path.insert(0, sys.argv[1])
from tests.helpers import open_memory
from localmem.config import Config
from tests.fakes import HashEmbedder

class SlowEmbedder(HashEmbedder):
    def embed(self, texts, role="passage"):
        time.sleep(0.05)
        return super().embed(texts)

with open_memory(sys.argv[2], namespace="kill", config=Config(ingest_batch=100),
            embedder=SlowEmbedder()) as mem:
    mem.ingest(sys.argv[3])
print("finished")
"""


def _committed_messages(path: Path) -> int:
    return read_count(path, "select count(*) from messages")


@pytest.mark.slow
def test_sigkill_during_ingest_then_rerun(tmp_path):
    n = 3000
    data = write_jsonl(tmp_path / "big.jsonl", rows(n))
    path = tmp_path / "kill.db"
    sigkill_when(
        [sys.executable, "-c", _KILL_SCRIPT, str(REPO), str(path), str(data)], lambda: _committed_messages(path) >= 200
    )
    at_kill = _committed_messages(path)
    assert 200 <= at_kill < n and at_kill % 100 == 0  # whole batches only

    with open_memory(path, namespace="kill", config=Config(ingest_batch=500), embedder=HashEmbedder()) as mem:
        assert [s.status for s in mem.browse.sources()] == ["loading"]
        report = mem.ingest(data)
        assert (report.added, report.skipped) == (n - at_kill, at_kill)
        conn = mem.conn
        assert conn.execute("pragma integrity_check").fetchall() == [("ok",)]
        conn.execute("insert into messages_fts (messages_fts) values ('integrity-check')")
        assert count(conn, "select count(*) from messages") == n
        assert count(conn, "select count(distinct external_id) from messages") == n
        assert count(conn, "select count(*) from messages_fts") == n
        assert count(conn, "select count(*) from vec_messages") == n
        assert count(conn, "select count(*) from messages m join vec_messages v on v.rowid = m.id") == n
        assert [(s.status, s.messages) for s in mem.browse.sources()] == [("loaded", n)]
        for i in (0, at_kill - 1, at_kill, n - 1):  # before, at and after the kill point
            hits = mem.search(f"topic{i}", channels=["bm25"], k=1)
            assert hits and hits[0].sources[0].external_id == f"L{i + 1}"


# -- Memory.add --------------------------------------------------------------------------------


def test_add_is_searchable_at_once(mem):
    added = mem.add("Ana", "My sister lives in Reykjavik now.", time="2024-03-01 12:00")
    assert added.added and added.conversation == "default" and added.external_id == "a0"
    for channels in (["bm25"], ["vector"]):
        hits = mem.search("Reykjavik", channels=channels)
        assert hits[0].id == f"m:{added.id}"
    with other(mem, "test") as second:  # another connection sees it too
        assert second.search("Reykjavik", channels=["bm25"])[0].id == f"m:{added.id}"


def test_add_same_id_twice_is_a_noop(mem):
    first = mem.add("Ana", "hello", id="ext-1", conversation="c")
    again = mem.add("Ana", "hello, changed", id="ext-1", conversation="c")
    assert first.added and not again.added and again.id == first.id
    assert mem.stats().messages == 1
    assert mem.conn.execute("select text from messages").fetchone()[0] == "hello"
    elsewhere = mem.add("Ana", "hello", id="ext-1", conversation="other")
    assert elsewhere.added and elsewhere.id != first.id


def test_add_seq_increases_and_continues_ingested_conversation(mem, tmp_path):
    mem.ingest(write_jsonl(tmp_path / "chat.jsonl", rows(3)))
    added = [mem.add("Cy", f"later {i}", conversation="chat") for i in range(3)]
    seqs = [r[0] for r in mem.conn.execute("select seq from messages where conversation = 'chat' order by id")]
    assert seqs == [0, 1, 2, 3, 4, 5]
    assert [a.external_id for a in added] == ["a3", "a4", "a5"]
    fresh = mem.add("Cy", "new conversation", conversation="fresh")
    assert fresh.external_id == "a0"


@pytest.mark.parametrize(
    "when, expected",
    [
        ("2024-01-14 19:02", "2024-01-14T19:02:00"),
        ("2024-01-14T19:02:00Z", "2024-01-14T19:02:00+00:00"),
        ("1:56 pm on 8 May, 2023", "2023-05-08T13:56:00"),
        (dt.datetime(2020, 2, 29, 23, 59, 58, 123), "2020-02-29T23:59:58"),
    ],
)
def test_add_time_parsing(mem, when, expected):
    added = mem.add("Ana", "timed", time=when)
    assert mem.conn.execute("select sent_at from messages where id = ?", (added.id,)).fetchone()[0] == expected


def test_add_defaults_to_now(mem):
    added = mem.add("Ana", "untimed")
    sent_at = mem.conn.execute("select sent_at from messages where id = ?", (added.id,)).fetchone()[0]
    assert abs(dt.datetime.fromisoformat(sent_at) - dt.datetime.now()) < dt.timedelta(minutes=1)


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"speaker": "", "text": "x"}, "speaker"),
        ({"speaker": "   ", "text": "x"}, "speaker"),
        ({"speaker": "Ana", "text": 42}, "string"),
        ({"speaker": "Ana", "text": "x", "time": "next blue moon"}, "not a time"),
        ({"speaker": "Ana", "text": "x" * 100_001}, "over the limit"),
    ],
)
def test_add_bad_arguments(mem, kwargs, fragment):
    with pytest.raises(LocalmemError, match=fragment):
        mem.add(**kwargs)
    assert mem.stats().messages == 0 and mem.browse.sources() == []


# -- search ------------------------------------------------------------------------------------


def test_rrf_fuses_ranks():
    fused = rrf({"vector": [("m", 1), ("m", 2), ("m", 3)], "bm25": [("m", 3), ("m", 1)]}, k=60)
    assert [key for key, _, _ in fused] == [("m", 1), ("m", 3), ("m", 2)]
    scores = {key: score for key, score, _ in fused}
    assert scores[("m", 1)] == pytest.approx(1 / 61 + 1 / 62)
    assert scores[("m", 3)] == pytest.approx(1 / 63 + 1 / 61)
    assert scores[("m", 2)] == pytest.approx(1 / 62)
    assert dict((key, ranks) for key, _, ranks in fused)[("m", 3)] == {"vector": 3, "bm25": 1}


def test_rrf_single_list_ties_and_k():
    fused = rrf({"a": [("m", 5), ("u", 5), ("m", 1)]}, k=0)
    assert [(key, score) for key, score, _ in fused] == [
        (("m", 5), 1.0),
        (("u", 5), 0.5),
        (("m", 1), pytest.approx(1 / 3)),
    ]
    tie = rrf({"a": [("m", 1), ("m", 2)], "b": [("m", 2), ("m", 1)]})
    assert [key for key, _, _ in tie] == [("m", 1), ("m", 2)]  # equal scores keep first-seen order
    assert rrf({}) == [] and rrf({"a": []}) == []
    # agreement of two channels beats a single first place
    fused = rrf({"a": [("m", 1), ("m", 2)], "b": [("m", 3), ("m", 2)]})
    assert fused[0][0] == ("m", 2)


def test_rrf_default_k_keeps_a_channels_first_hit_ahead_of_a_weak_pair():
    # Lists of 50 (the channel budget): a message one channel ranks first, against one that both
    # rank 24th. With k=60 the weak pair wins (1/84 + 1/84 > 1/61); with the default it does not.
    filler_a = [("m", 100 + i) for i in range(23)]
    filler_b = [("m", 200 + i) for i in range(23)]
    rankings = {"bm25": [("m", 1)] + filler_a[1:] + [("m", 2)], "vector": filler_b + [("m", 2)]}
    usual = [key for key, _, _ in rrf(rankings, k=60)]
    assert usual.index(("m", 2)) < usual.index(("m", 1))
    order = [key for key, _, _ in rrf(rankings, k=Config().rrf_k)]
    assert order.index(("m", 1)) < order.index(("m", 2))


WITHOUT_CONTEXT = SearchParams(session_weight=0.0, speaker_weight=0.0, question_handoff=0.0, when_weight=0.0)


def test_hit_structure(mem):
    mem.ingest(LOCOMO, namespace="test")
    hits = mem.search("Biscuit puppy beagle", k=5)
    assert 0 < len(hits) <= 5
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    for hit in hits:
        d = hit.to_dict()
        json.dumps(d)
        assert set(d) == {
            "id",
            "kind",
            "text",
            "score",
            "channels",
            "time",
            "sources",
            "merged",
            "superseded_by",
            "supersedes",
            "speaker",
            "said",
            "captions",
            "day",
        }
        assert d["kind"] == "message" and re.fullmatch(r"m:\d+", d["id"])
        assert set(d["channels"]) <= {"vector", "bm25", "question"} and set(d["channels"]) - {"question"}
        for chan in d["channels"].values():
            assert set(chan) == {"rank", "score"} and chan["rank"] >= 1
        # RRF's sum, and what the message's context adds (context_fusion only adds or multiplies by > 1),
        # less what a message that asks hands to the turn after it (search.question_handoff)
        kept = 1.0 - SearchParams().question_handoff * question_share(hit.said)
        assert d["score"] >= kept * sum(1 / (Config().rrf_k + c["rank"]) for c in d["channels"].values()) - 1e-6
    for hit in mem.search("Biscuit puppy beagle", k=5, recipe=WITHOUT_CONTEXT):
        d = hit.to_dict()
        assert d["score"] == pytest.approx(
            sum(1 / (Config().rrf_k + c["rank"]) for c in d["channels"].values()), abs=1e-6
        )
        (src,) = d["sources"]
        assert set(src) == {"id", "external_id", "conversation", "session", "speaker", "sent_at"}
        assert d["id"] == src["id"]  # one printed id: the message's own
        row = mem.conn.execute(
            "select speaker, text, sent_at, conversation, session, external_id from messages where id = ?",
            (int(src["id"][2:]),),
        ).fetchone()
        assert d["text"].startswith(f"{row[0]}: {row[1]}")
        assert d["time"] == src["sent_at"] == row[2]
        assert (src["conversation"], src["session"], src["external_id"], src["speaker"]) == (
            row[3],
            row[4],
            row[5],
            row[0],
        )
    top = hits[0].to_dict()
    assert top["sources"][0]["external_id"] in {"D1:1", "D1:2", "D1:3"}
    assert top["time"] == "2023-05-08T13:56:00"


def test_unit_hits(populated):
    hits = populated.search("puppy called Biscuit", k=20)
    units = [h for h in hits if h.id.startswith("u:")]
    assert {h.kind for h in units} == {"episode", "fact"}
    episode = next(h for h in units if h.kind == "episode")
    assert episode.text == "The puppy: Ana adopted a beagle puppy"
    assert episode.time == "2023-05-08T13:56:00"
    assert [s.external_id for s in episode.sources] == ["L17", "L18"]
    assert all(
        "Mochi"
        in s.speaker
        + ": "
        + populated.conn.execute("select text from messages where id = ?", (s.message_id,)).fetchone()[0]
        for s in episode.sources
    )


def test_namespaces_isolate_results(mem):
    mem.add("Ana", "The secret password is swordfish.")
    with other(mem, "elsewhere") as second:
        second.add("Ben", "My swordfish recipe needs lemon.")
        for m, expected in ((mem, "test"), (second, "elsewhere")):
            hits = m.search("swordfish password recipe")
            assert len(hits) == 1
            ns = m.conn.execute("select ns from messages where id = ?", (hits[0].sources[0].message_id,)).fetchone()[0]
            assert ns == expected
        with other(mem, "empty") as third:
            assert third.search("swordfish") == []


def test_single_channels(mem):
    mem.ingest(SAMPLE_CHAT)
    vector = mem.search("cat Mochi", channels=["vector"], k=30)
    assert len(vector) == 25  # kNN ranks every message
    assert all(set(h.channels) - {"question"} == {"vector"} for h in vector)  # and a question's share
    # BM25 alone, without the context of a hit (context_fusion: neighbours, session, speaker)
    bm25 = mem.search("Mochi", channels=["bm25"], k=30, recipe=WITHOUT_CONTEXT)
    assert bm25 and all(set(h.channels) == {"bm25"} for h in bm25)
    # the three messages that say it first, then replies to them (the previous turn is context)
    assert [("Mochi" in h.text) for h in bm25] == [True, True, True, False]
    reply = bm25[3].sources[0]
    previous = mem.conn.execute(
        "select text from messages where conversation = ? and session = ? and seq < "
        "(select seq from messages where id = ?) order by seq desc limit 1",
        (reply.conversation, reply.session, reply.message_id),
    ).fetchone()[0]
    assert "Mochi" in previous
    both = mem.search("Mochi", k=30)
    assert any(set(h.channels) == {"vector", "bm25"} for h in both)
    assert len(mem.search("Mochi", k=2)) == 2


def test_unknown_channel_and_bad_k(mem):
    mem.add("Ana", "hello")
    with pytest.raises(LocalmemError, match="unknown channel.*telepathy.*available: vector, bm25, graph"):
        mem.search("hello", channels=["graph", "telepathy"])
    with pytest.raises(LocalmemError, match="k must be at least 1"):
        mem.search("hello", k=0)


def test_search_on_an_empty_store(mem):
    assert mem.search("anything at all") == []
    assert list(mem.search_many(["a", "b"])) == [[], []]


def test_search_many_matches_search(mem):
    mem.ingest(SAMPLE_CHAT)
    queries = [f"query {i} Lisbon flat marathon"[: 10 + i] for i in range(7)]
    many = list(mem.search_many(queries, k=3, batch=2))
    assert len(many) == 7
    for query, hits in zip(queries, many):
        assert [h.id for h in hits] == [h.id for h in mem.search(query, k=3)]


NASTY = [
    '"',
    '""',
    "'",
    'a"b"c',
    "AND",
    "OR",
    "NOT",
    "NEAR",
    "NEAR(a b, 2)",
    "a AND",
    "OR OR OR",
    "AND OR NOT NEAR",
    "*",
    "lis*",
    "^start",
    "^",
    "(",
    ")",
    "((a)",
    "body:lisbon",
    "col:x",
    "messages_fts:x",
    "-",
    "+",
    "a - b",
    "{a b}",
    "Ελλάδα",
    "naïve café",
    "日本語のテキスト",
    "😀",
    "😀 Lisbon 🎉",
    "",
    "   ",
    "\t\n",
    "the and of",
    "a",
    "x" * 5000,
    "\x00",
    "NULL",
    "%",
    "'; drop table messages; --",
    "\\",
    "a:b:c",
    "[1]",
    "Graça",
    "rank:1",
    "bm25(messages_fts)",
    '"unterminated',
    " ".join(f"w{i}" for i in range(100)),
    "i'm",
    "'s",
]


def test_fts_query_quotes_every_term():
    for text in NASTY:
        expr = fts_query(text)
        if expr is None:
            continue
        terms = expr.split(" OR ")
        assert 1 <= len(terms) <= 32
        assert all(re.fullmatch(r'"\w+"', t) for t in terms), expr
    assert fts_query("the and of") == '"the" OR "and" OR "of"'  # only stopwords: keep them
    assert fts_query("Where is the cat?") == '"cat"'
    assert fts_query("😀 !!!") is None and fts_query("") is None


def test_nasty_queries_never_raise(mem):
    mem.ingest(SAMPLE_CHAT)
    rng = random.Random(1234)
    alphabet = list("\"'*^():-+{}[],.;!?<>=~@#$%&|\\/ \t") + [
        "AND",
        "OR",
        "NOT",
        "NEAR",
        "body",
        "ü",
        "ß",
        "ç",
        "日",
        "😀",
        "Lisbon",
        "x",
    ]
    generated = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(150)]
    for text in NASTY + generated:
        for channels in (None, ["bm25"], ["vector"]):
            hits = mem.search(text, channels=channels)
            assert isinstance(hits, list)
    assert mem.search("Graça", channels=["bm25"])[0].text.startswith("Priya: Found a flat!")
    assert mem.search("LISBON*", channels=["bm25"])  # the star is dropped, the word still counts


# -- export and import -----------------------------------------------------------------------------


@pytest.mark.parametrize("vectors", [True, False])
def test_export_import_roundtrip_is_byte_identical(populated, tmp_path, vectors):
    first = export_text(populated, vectors=vectors)
    path = tmp_path / "export.jsonl"
    path.write_text(first, encoding="utf-8")
    header = json.loads(first.splitlines()[0])
    assert header["namespaces"] == ["test", "tiny-1", "tiny-2"] and header["vectors"] is vectors
    fresh_embedder = HashEmbedder()
    with open_memory(tmp_path / "restored.db", namespace="test", embedder=fresh_embedder) as fresh:
        counts = fresh.admin.restore(path).to_dict()
        assert counts["message"] == 32 and counts["unit"] == 2 + 8 and counts["entity"] == 1  # + episodes
        assert ("vector" in counts) is vectors
        assert export_text(fresh, vectors=vectors) == first
        # without vectors in the file, import embedded everything itself, to the same vectors
        assert bool(fresh_embedder.calls) is not vectors
        assert export_text(fresh) == export_text(populated)
        assert table_counts(fresh.conn) == table_counts(populated.conn)
        assert fresh.conn.all_meta()["embed_model_id"] == "hash-embedder"
        for channels in (["vector"], ["bm25"]):
            assert [h.to_dict() for h in fresh.search("Mochi cat", channels=channels)] == [
                h.to_dict() for h in populated.search("Mochi cat", channels=channels)
            ]


def test_roundtrip_keeps_awkward_text(mem, tmp_path):
    texts = [
        "line\u2028separator",
        "next\x85line",
        "cr\rinside",
        "tab\tand\nnewline",
        'quote " \\ back',
        "emoji 😀 and 日本語",
        "nul\x00byte",
        " padded ",
    ]
    for i, text in enumerate(texts):
        mem.add("Ana", text, id=f"t{i}", time="2024-01-01 10:00")
    first = export_text(mem)
    path = tmp_path / "export.jsonl"
    path.write_text(first, encoding="utf-8")
    with open_memory(tmp_path / "copy.db", embedder=HashEmbedder()) as copy:
        copy.admin.restore(path)
        assert export_text(copy) == first
        stored = [r[0] for r in copy.conn.execute("select text from messages order by seq")]
        assert stored == texts


def test_import_refuses_existing_namespace(populated, tmp_path):
    path = tmp_path / "export.jsonl"
    path.write_text(export_text(populated, namespaces=["tiny-2"]), encoding="utf-8")
    before = snapshot(populated.path)
    with pytest.raises(LocalmemError, match="tiny-2 already exist"):
        populated.admin.restore(path)
    assert snapshot(populated.path) == before


@pytest.mark.parametrize("vectors", [True, False])
def test_import_into_a_store_with_other_namespaces_remaps_ids(populated, tmp_path, vectors):
    path = tmp_path / "export.jsonl"
    path.write_text(export_text(populated, namespaces=["test", "tiny-1"], vectors=vectors))
    with open_memory(tmp_path / "busy.db", namespace="mine", embedder=HashEmbedder()) as target:
        target.ingest(write_jsonl(tmp_path / "mine.jsonl", rows(40)))
        target.conn.execute(
            "insert into units (ns, kind, text, created_at) values ('mine', 'gist', 'my own gist', '2024-01-01')"
        )
        mine_before = export_text(target, namespaces=["mine"])
        target.admin.restore(path)
        assert export_text(target, namespaces=["mine"]) == mine_before
        assert {r.namespace: r.messages for r in target.namespaces()} == {"mine": 40, "test": 25, "tiny-1": 5}
        conn = target.conn
        assert count(conn, "select count(*) from messages") == 70
        assert count(conn, "select count(*) from messages_fts") == 70
        assert (
            count(
                conn, f"select count(*) from messages m join vec_messages v on v.{vec_id(conn)} = m.id and v.ns = m.ns"
            )
            == 70
        )
        assert count(conn, f"select count(*) from units u join vec_units v on v.{vec_id(conn)} = u.id") == 2
        assert count(conn, "select min(id) from messages where ns = 'tiny-1'") > 40
        for ns in ("test", "tiny-1"):
            with other(target, ns) as imported, other(populated, ns) as original:
                for query in ("Mochi cat", "Biscuit puppy", "marathon Porto"):
                    # vectors are per namespace: the same ranking and scores
                    got = imported.search(query, k=5, channels=["vector"])
                    want = original.search(query, k=5, channels=["vector"])
                    assert [(h.kind, h.text, h.channels) for h in got] == [(h.kind, h.text, h.channels) for h in want]
                    assert [[(s.external_id, s.sent_at) for s in h.sources] for h in got] == [
                        [(s.external_id, s.sent_at) for s in h.sources] for h in want
                    ]
                    # BM25 statistics span the whole store, so only the matches must agree
                    got = imported.search(query, k=50, channels=["bm25"])
                    want = original.search(query, k=50, channels=["bm25"])
                    assert sorted(h.text for h in got) == sorted(h.text for h in want)
        # the imported namespaces export as the originals do, up to ids
        assert _without_ids(export_text(target, namespaces=["tiny-1"])) == _without_ids(
            export_text(populated, namespaces=["tiny-1"])
        )


def _without_ids(text: str) -> list[dict]:
    out = []
    for line in text.splitlines()[1:]:
        rec = json.loads(line)
        rec.pop("sha256", None)  # the trailer's checksum covers the ids
        for key in ("id", "source_id", "unit_id", "message_id", "entity_id", "src_id", "dst_id", "episode_id"):
            rec.pop(key, None)
        out.append(rec)
    return out


def test_import_vectors_from_another_embedder_is_refused(populated, tmp_path):
    path = tmp_path / "export.jsonl"
    path.write_text(export_text(populated, namespaces=["tiny-1"]))
    with open_memory(
        tmp_path / "other.db", namespace="x", embedder=HashEmbedder(dim=16, model_id="other-model")
    ) as target:
        target.add("Z", "bound to another model")
        before = export_text(target)
        with pytest.raises(EmbedderMismatchError):
            target.admin.restore(path)
        assert export_text(target) == before


def test_import_rejects_non_export_files(mem, tmp_path):
    path = write_jsonl(tmp_path / "chat.jsonl", rows(2))
    with pytest.raises(LocalmemError, match="line 1: each line must be an object with a 'type'"):
        mem.admin.restore(path)
    path = write_jsonl(tmp_path / "other.jsonl", [{"type": "header", "format": "something-else"}])
    with pytest.raises(LocalmemError, match="not a localmem-export v1/2/3 file"):
        mem.admin.restore(path)
    with pytest.raises(LocalmemError, match="no such file"):
        mem.admin.restore(tmp_path / "missing.jsonl")


def test_a_broken_import_leaves_nothing_behind(populated, tmp_path):
    lines = export_text(populated, namespaces=["test"]).splitlines()
    last_message = max(i for i, line in enumerate(lines) if '"type":"message"' in line)
    rec = json.loads(lines[last_message])
    rec["source_id"] = 9999  # no such source in the file
    lines[last_message] = json.dumps(rec)
    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with open_memory(tmp_path / "target.db", namespace="mine", embedder=HashEmbedder()) as target:
        target.add("Z", "already here")
        before = snapshot(target.path)
        with pytest.raises(LocalmemError, match=f"line {last_message + 1}: cannot restore"):
            target.admin.restore(path)
        assert snapshot(target.path) == before
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(LocalmemError, match="the file is empty"):
        populated.admin.restore(empty)


def test_export_unknown_namespace(mem):
    with pytest.raises(LocalmemError, match="no such namespace: nope"):
        mem.admin.export(io.StringIO(), namespaces=["nope"])


# -- forget ------------------------------------------------------------------------------------------


def _consistent(conn) -> None:
    """Indexes hold exactly the rows that exist."""
    assert count(conn, "select count(*) from messages_fts") == count(conn, "select count(*) from messages")
    parts = {r[0] for r in conn.execute("select id from message_parts")}
    assert vector_ids(conn, "vec_message_parts") == parts
    assert count(conn, "select count(*) from units_fts") == count(conn, "select count(*) from units")
    assert vector_ids(conn, "vec_messages") == {r[0] for r in conn.execute("select id from messages")}
    assert vector_ids(conn, "vec_units") == {
        r[0] for r in conn.execute("select id from units where text != ''")
    }  # episodes not extracted: none
    if not on_postgres(conn):  # PostgreSQL keeps no binary codes, and its foreign keys are the server's
        assert {r[0] for r in conn.execute("select id from vec_part_codes")} == parts
        assert conn.execute("pragma foreign_key_check").fetchall() == []


def test_forget_namespace(populated):
    conn = populated.conn
    kept = export_text(populated, namespaces=["tiny-1", "tiny-2"])
    assert fts_matches(conn, "messages_fts", "mochi") == 4
    plan = populated.forget(namespace="test", dry_run=True).to_dict()
    assert plan["counts"] == {"sources": 1, "messages": 25, "units": 7, "entities": 1}  # 2 units + 5 episodes
    assert plan["messages"] == [
        f"m:{i}" for (i,) in conn.execute("select id from messages where ns = 'test' order by id")
    ]
    assert count(conn, "select count(*) from messages where ns = 'test'") == 25
    done = populated.forget(namespace="test").to_dict()
    assert done.pop("file")["wal_emptied"] is True and plan.pop("file") is None
    assert done == {**plan, "dry_run": False}
    for table in ("sources", "messages", "units", "entities", "llm_calls"):
        assert count(conn, f"select count(*) from {table} where ns = 'test'") == 0
    for table in ("entity_aliases", "mentions", "links"):
        assert count(conn, f"select count(*) from {table}") == 0
    assert (
        count(conn, "select count(*) from unit_sources s join messages m on m.id = s.message_id where m.ns = 'test'")
        == 0
    )
    assert fts_matches(conn, "messages_fts", "mochi") == 0
    assert fts_matches(conn, "units_fts", "biscuit") == 0
    assert count(conn, "select count(*) from vec_messages") == 7
    assert count(conn, "select count(*) from vec_units") == 0
    _consistent(conn)
    assert export_text(populated, namespaces=["tiny-1", "tiny-2"]) == kept
    assert populated.search("Mochi") == []
    with pytest.raises(NotFoundError, match="'test' is empty or does not exist"):
        populated.forget(namespace="test")


def test_forget_source(mem, tmp_path):
    mem.ingest(write_jsonl(tmp_path / "first.jsonl", rows(4)))
    mem.ingest(write_jsonl(tmp_path / "second.jsonl", rows(3, start=10)))
    ids = [r[0] for r in mem.conn.execute("select id from messages where conversation = 'first'")]
    add_units(mem, "test", ids[:1])
    mem.conn.execute("insert into units (ns, kind, text, created_at) values ('test', 'gist', 'kept gist', 'x')")
    first, second = mem.browse.sources()
    kept = export_text(mem).count('"conversation":"second"')
    # the episode of 'first' (segmented on ingest) and the hand-made episode and fact on its
    # first message rest only on it; the entity only they mention goes with them
    done = mem.forget(source_id=first.id).to_dict()
    assert done["file"]["wal_emptied"] is True
    assert done["counts"] == {"sources": 1, "messages": 4, "units": 3, "entities": 1}
    assert [s.id for s in mem.browse.sources()] == [second.id]
    assert [r[0] for r in mem.conn.execute("select distinct conversation from messages")] == ["second"]
    assert [r[0] for r in mem.conn.execute("select text from units where kind != 'episode'")] == ["kept gist"]
    assert count(mem.conn, "select count(*) from entities") == 0  # nothing mentions it any more
    assert export_text(mem).count('"conversation":"second"') == kept
    _consistent_without_unit_vectors(mem.conn)
    assert not mem.search("topic1", channels=["bm25"])
    assert mem.search("topic11", channels=["bm25"])
    with pytest.raises(NotFoundError, match=f"no source {first.id} in namespace 'test'"):
        mem.forget(source_id=first.id)


def test_a_source_of_another_namespace_is_not_found_and_stays(mem):
    """What the MCP server relies on: a Memory bound to one namespace forgets only in it."""
    with open_memory(mem.path, namespace="other", embedder=HashEmbedder()) as other:
        other.add("Zoe", "mine, in another namespace")
        theirs = other.browse.sources()[0].id
    with pytest.raises(NotFoundError, match=f"no source {theirs} in namespace 'test'"):
        mem.forget(source_id=theirs)
    with pytest.raises(NotFoundError, match=f"no source {theirs} in namespace 'test'"):
        mem.forget(source_id=theirs, dry_run=True)
    assert count(mem.conn, "select count(*) from messages where ns = 'other'") == 1


def _consistent_without_unit_vectors(conn) -> None:
    # the hand-made 'kept gist' unit has no vector; everything else must line up
    assert count(conn, "select count(*) from messages_fts") == count(conn, "select count(*) from messages")
    assert count(conn, "select count(*) from units_fts") == count(conn, "select count(*) from units")
    assert vector_ids(conn, "vec_messages") == {r[0] for r in conn.execute("select id from messages")}
    assert count(conn, "select count(*) from vec_units") == 0


def test_forget_needs_exactly_one_target(mem):
    with pytest.raises(LocalmemError, match="exactly one"):
        mem.forget()
    with pytest.raises(LocalmemError, match="exactly one"):
        mem.forget(namespace="a", source_id=1)


def test_cli_forget_without_yes_deletes_nothing(populated, use_models):
    use_models(embedder=HashEmbedder())
    before = snapshot(populated.path)
    populated.close()
    result = runner().invoke(cli, ["--db", str(populated.path), "forget", "--namespace", "tiny-1"])
    assert result.exit_code == 0  # a dry run is not an error
    assert result.stdout.startswith("would forget 1 source, 5 messages, 2 units\n")
    assert "  5 messages:\n    m:" in result.stdout and "(a message)" not in result.stdout  # each in words
    assert "nothing was deleted; re-run with --yes to delete" in result.stdout
    assert snapshot(populated.path) == before
    result = runner().invoke(cli, ["--db", str(populated.path), "forget", "--namespace", "tiny-1", "--yes", "--json"])
    assert result.exit_code == 0, result.output
    done = json.loads(result.stdout)
    assert done.pop("file")["wal_emptied"] is True
    assert done["target"] == {"namespace": "tiny-1"} and done["dry_run"] is False
    assert done["counts"] == {"sources": 1, "messages": 5, "units": 2, "entities": 0}
    after = snapshot(populated.path)
    assert [n["namespace"] for n in after["namespaces"]] == ["test", "tiny-2"]
    result = runner().invoke(cli, ["--db", str(populated.path), "forget"])
    assert result.exit_code == 2 and "exactly one of" in result.stderr


# -- re-embed ----------------------------------------------------------------------------------------


def test_reembed_switches_embedder_and_dimension(populated):
    path = populated.path
    n_messages = count(populated.conn, "select count(*) from messages")
    populated.close()
    new = HashEmbedder(dim=32, model_id="hash-32")
    with open_memory(path, namespace="test", embedder=new) as mem:
        with pytest.raises(EmbedderMismatchError, match="localmem reembed"):
            mem.search("Mochi")
        progress = []
        result = mem.admin.reembed(progress=lambda d, t: progress.append((d, t)))
        parts = count(mem.conn, "select count(*) from message_parts")
        assert parts > 0
        assert result.to_dict() == {
            "embedder": "hash-32",
            "dim": 32,
            "messages": n_messages,
            "parts": parts,
            "units": 2,
        }
        assert progress[-1] == (n_messages + parts + 2, n_messages + parts + 2)
        stats = mem.stats().to_dict()
        assert (stats["embedder"], stats["embed_dim"]) == ("hash-32", 32)
        conn = mem.conn
        assert count(conn, "select count(*) from vec_messages") == n_messages
        assert vector_dims(conn, "vec_messages") == vector_dims(conn, "vec_units") == {32}
        _consistent(conn)
        hits = mem.search("cat Mochi in the cabin", channels=["vector"], k=3)
        top = hits[0]  # the message itself, or the fact resting on it shown in its place
        assert "Mochi in the cabin" in top.text or any(m.startswith("m:") for m in top.merged)
        shown = {m for h in hits for m in h.merged} | {h.id for h in hits}
        cabin = mem.conn.execute("select id from messages where text like '%Mochi in the cabin%'").fetchone()[0]
        assert f"m:{cabin}" in shown
        assert mem.search("Mochi")  # fused search works with the new vectors
        mem.add("Priya", "Mochi learned to open doors.")  # and new messages get the new vectors
        assert count(conn, "select count(*) from vec_messages") == n_messages + 1
    with open_memory(path, namespace="test", embedder=HashEmbedder()) as old:
        with pytest.raises(EmbedderMismatchError):
            old.search("Mochi")


def test_existing_message_lookup_uses_the_unique_index(mem):
    """Regression: a plain JOIN let SQLite scan the namespace per batch (quadratic ingest)."""
    from localmem.store.queries import q

    mem.add("Ann", "hello")  # no ANALYZE: the planner's default guess is what ingest meets
    plan = " ".join(
        r[3] for r in mem.conn.execute("EXPLAIN QUERY PLAN " + q("messages_existing"), {"ns": "test", "keys": "[]"})
    )
    assert "SEARCH m USING INDEX" in plan and "external_id=?" in plan, plan
