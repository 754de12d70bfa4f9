"""The PostgreSQL store against a real server (a throwaway one: tests/conftest.py's
``postgres_server``): opening by URL, the engine-specific channels, and forget's promise read
from the table's own pages."""

from __future__ import annotations

import pytest

from localmem import Memory
from tests.fakes import HashEmbedder

pytest.importorskip("psycopg", reason="pip install 'localmem[postgres]'")


def test_memory_opens_a_url_and_searches_every_channel(pg_url):
    with Memory(pg_url, namespace="a", embedder=HashEmbedder()) as mem:
        first = mem.add("Alice", "I moved to Berlin last week and adopted a dog named Scout.")
        mem.add("Bob", "Nice! I went hiking in the Alps with my sister.")
        assert type(mem.conn).__name__ == "PgStore"
        hits = mem.search("Scout the dog", channels=["bm25"])
        assert [h.id for h in hits][:1] == [f"m:{first.id}"]
        assert hits[0].channels["bm25"]["rank"] == 1
        vector = mem.search("Scout the dog", channels=["vector"])
        assert {h.id for h in vector} == {"m:1", "m:2"}


def test_bm25_prefers_the_rarer_word_as_fts5_does(pg_url):
    """BM25 from the table's statistics: a word in one message outranks one in every message."""
    with Memory(pg_url, namespace="a", embedder=HashEmbedder()) as mem:
        for i in range(6):
            mem.add("Alice", f"I like coffee number {i}.")
        rare = mem.add("Alice", "I like coffee and a zeppelin.")
        hits = mem.search("coffee zeppelin", channels=["bm25"])
        assert hits[0].id == f"m:{rare.id}"


def test_namespaces_do_not_see_each_other(pg_url):
    with Memory(pg_url, namespace="a", embedder=HashEmbedder()) as a:
        a.add("Alice", "The secret word is marmalade.")
    with Memory(pg_url, namespace="b", embedder=HashEmbedder()) as b:
        b.add("Bob", "Nothing to see here.")
        assert all("marmalade" not in h.text for h in b.search("marmalade secret word"))


def _pages(mem: Memory, table: str) -> bytes:
    """The table's heap and TOAST files as the server has them on disk, read by the server's own
    pg_read_binary_file after a CHECKPOINT (so no page waits in shared buffers)."""
    raw = mem.conn.raw
    raw.execute("CHECKPOINT")
    data = b""
    for (rel,) in raw.execute(
        "SELECT c.oid::regclass::text FROM pg_class AS c WHERE c.oid = %s::regclass "
        "UNION ALL SELECT t.reltoastrelid::regclass::text FROM pg_class AS t "
        "WHERE t.oid = %s::regclass AND t.reltoastrelid <> 0",
        (table, table),
    ).fetchall():
        (path,) = raw.execute("SELECT pg_relation_filepath(%s)", (rel,)).fetchone()
        size = raw.execute("SELECT pg_relation_size(%s)", (rel,)).fetchone()[0]
        if size:
            data += raw.execute("SELECT pg_read_binary_file(%s)", (path,)).fetchone()[0]
    return data


def test_forget_leaves_no_trace_in_the_tables_pages(pg_url):
    with Memory(pg_url, namespace="a", embedder=HashEmbedder()) as mem:
        kept = [mem.add("Alice", f"Ordinary note {i} about the garden.") for i in range(20)]
        gone = mem.add("Alice", "My bank PIN is zanzibar-4471.")
        after = mem.add("Bob", "Got it, I will remember.")  # indexed with the forgotten turn as context
        assert b"zanzibar-4471" in _pages(mem, "messages")
        report = mem.forget(ids=[f"m:{gone.id}"])
        assert report is not None
        # BM25's statistics (migration 0004) too: the word only the forgotten message held
        for table in ("messages", "messages_fts", "vec_messages", "fts_terms", "fts_terms_delta"):
            assert b"zanzibar" not in _pages(mem, table), table
        assert not mem.search("zanzibar PIN", channels=["bm25"])
        # the rest is intact: every other message is still there and found
        assert b"Ordinary note 7 about the garden" in _pages(mem, "messages")
        found = mem.search("garden note", channels=["bm25"], k=50)
        assert {h.id for h in found} >= {f"m:{m.id}" for m in kept}
        assert mem.search("remember", channels=["bm25"])[0].id == f"m:{after.id}"


def test_vacuum_removes_what_a_delete_left_in_the_pages(pg_url):
    """What `localmem vacuum` is for on PostgreSQL (a forget that could not rewrite a table, or
    rows deleted by hand): the dead tuples' bytes, and the statistics ANALYZE sampled from them
    (pg_statistic's dead versions), leave the pages; the live rows stay."""
    with Memory(pg_url, namespace="a", embedder=HashEmbedder()) as mem:
        for i in range(30):
            mem.add("Alice", f"Ordinary note {i} about the garden.")
        gone = mem.add("Alice", "The locker combination is qzlocker-9182.")
        mem.conn.raw.execute("ANALYZE messages")  # its text sampled into pg_statistic
        mem.conn.raw.execute("DELETE FROM messages WHERE id = %s", (gone.id,))
        assert b"qzlocker-9182" in _pages(mem, "messages")  # a dead tuple keeps the bytes
        report = mem.admin.vacuum()
        assert report.wal_emptied is True and report.bytes_before >= report.bytes_after > 0
        for table in ("messages", "messages_fts", "pg_statistic"):
            assert b"qzlocker" not in _pages(mem, table), table
        assert b"Ordinary note 29 about the garden" in _pages(mem, "messages")
        assert len(mem.search("garden note", channels=["bm25"], k=50)) == 30


def test_reembed_to_another_dimension_remakes_the_vector_columns_and_their_hnsw_indexes(pg_url):
    """pgvector's column has one dimension and its HNSW index is built for it: a reembed with an
    embedder of another dimension makes both anew, and vector search runs on the new index."""
    with Memory(pg_url, namespace="a", embedder=HashEmbedder()) as mem:
        for i in range(30):
            mem.add("Alice", f"Ordinary note {i} about the garden.")
        cat = mem.add("Alice", "My cat Mochi sleeps in the cabin.")
    with Memory(pg_url, namespace="a", embedder=HashEmbedder(dim=32, model_id="hash-32")) as mem:
        assert mem.admin.reembed().dim == 32
        raw = mem.conn.raw
        for table in ("vec_messages", "vec_units", "vec_message_parts"):
            (column,) = raw.execute(
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                "WHERE attrelid = %s::regclass AND attname = 'embedding'",
                (table,),
            ).fetchone()
            assert column == "vector(32)", table
        with raw.transaction():
            raw.execute("SET LOCAL enable_seqscan = off")  # 31 rows: the planner would scan them
            plan = "\n".join(
                r[0]
                for r in raw.execute(
                    "EXPLAIN SELECT id FROM vec_messages ORDER BY embedding <=> "
                    "(SELECT embedding FROM vec_messages WHERE id = %s) LIMIT 5",
                    (cat.id,),
                )
            )
        assert "vec_messages_hnsw" in plan, plan
        assert mem.search("cat Mochi cabin", channels=["vector"], k=1)[0].id == f"m:{cat.id}"


def _writer(url: str, worker: int, n: int, forget_every: int, out) -> None:
    """Adds ``n`` messages to its own conversation, forgetting every ``forget_every``-th right
    after adding it; reports (kept ids, forgotten ids)."""
    kept, forgotten = [], []
    with Memory(url, namespace="shared", embedder=HashEmbedder()) as mem:
        for i in range(n):
            added = mem.add(
                f"writer{worker}",
                f"note {i} from writer {worker} token w{worker}x{i}",
                conversation=f"c{worker}",
                id=f"w{worker}-{i}",
            )
            if forget_every and i % forget_every == forget_every - 1:
                mem.forget(ids=[f"m:{added.id}"])
                forgotten.append(added.id)
            else:
                kept.append(added.id)
    out.put((worker, kept, forgotten))


def _reader(url: str, rounds: int, out) -> None:
    seen = 0
    with Memory(url, namespace="shared", embedder=HashEmbedder()) as mem:
        for i in range(rounds):
            seen += len(mem.search(f"note {i} from writer", channels=["bm25", "vector"]))
    out.put(("reader", seen))


@pytest.mark.slow
def test_eight_writers_and_eight_readers_lose_nothing(pg_url):
    """8 writer and 8 reader processes on one database: every kept message is there once, no
    forgotten one is, and every reader finished."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    n, forget_every = 30, 5
    Memory(pg_url, namespace="shared", embedder=HashEmbedder()).close()  # bound before they race
    procs = [ctx.Process(target=_writer, args=(pg_url, w, n, forget_every, out)) for w in range(8)]
    procs += [ctx.Process(target=_reader, args=(pg_url, 20, out)) for _ in range(8)]
    for p in procs:
        p.start()
    results = []
    for _ in procs:
        results.append(out.get(timeout=300))
        assert all(p.exitcode in (None, 0) for p in procs), "a process failed"
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    writers = [r for r in results if r[0] != "reader"]
    assert len(writers) == 8 and len(results) == 16
    kept = sorted(i for _w, k, _f in writers for i in k)
    forgotten = sorted(i for _w, _k, f in writers for i in f)
    assert len(kept) == 8 * (n - n // forget_every) and len(forgotten) == 8 * (n // forget_every)
    with Memory(pg_url, namespace="shared", embedder=HashEmbedder()) as mem:
        rows = mem.conn.raw.execute("SELECT id, external_id FROM messages WHERE ns = 'shared'").fetchall()
        ids = [r[0] for r in rows]
        assert sorted(ids) == kept  # nothing lost, nothing forgotten kept
        assert len({r[1] for r in rows}) == len(rows)  # no duplicates
        fts = mem.conn.raw.execute("SELECT count(*) FROM messages_fts").fetchone()[0]
        vec = mem.conn.raw.execute("SELECT count(*) FROM vec_messages").fetchone()[0]
        assert fts == vec == len(kept)
        assert not set(forgotten) & set(ids)
        # BM25's statistics and postings, written by 8 writers at once, equal a count over the rows
        assert _kept(mem.conn.raw, "messages_fts") == _recounted(mem.conn.raw, "messages_fts")
        kept_postings, now = _postings(mem.conn.raw, "messages_fts")
        assert kept_postings == now


def _as_role(url: str, role: str) -> str:
    """``url`` with ``role`` as its user (the test server trusts its Unix socket)."""
    head, rest = url.split("://", 1)
    return f"{head}://{role}@{rest.split('@', 1)[1]}"


def test_a_namespace_role_cannot_read_or_change_another_namespace(pg_url):
    """Row-level security: each role sees and writes its own namespace only, tried with the
    library and with raw SQL on the same connection."""
    from localmem.errors import LocalmemError
    from localmem.store import pgroles

    with Memory(pg_url, namespace="alice", embedder=HashEmbedder()) as owner:
        owner.add("Alice", "Alice's secret: the key is under the blue flowerpot.")
        pgroles.grant_namespace(owner.conn, "lm_test_alice", ["alice"])
        pgroles.grant_namespace(owner.conn, "lm_test_bob", ["bob"])
    with Memory(_as_role(pg_url, "lm_test_bob"), namespace="bob", embedder=HashEmbedder()) as bob:
        bob.add("Bob", "Bob keeps his notes here.")
        raw = bob.conn.raw
        assert [r[0] for r in raw.execute("SELECT DISTINCT ns FROM messages")] == ["bob"]
        assert raw.execute("SELECT count(*) FROM messages_fts WHERE doc @@ 'flowerpot'").fetchone()[0] == 0
        assert raw.execute("UPDATE messages SET text = 'x' WHERE ns = 'alice'").rowcount == 0
        assert raw.execute("DELETE FROM messages WHERE ns = 'alice'").rowcount == 0
    with Memory(_as_role(pg_url, "lm_test_bob"), namespace="alice", embedder=HashEmbedder()) as intruder:
        assert intruder.search("secret key flowerpot") == []
        with pytest.raises(LocalmemError, match="refused|row-level security"):
            intruder.add("Mallory", "planted in alice's memory")
    with Memory(_as_role(pg_url, "lm_test_alice"), namespace="alice", embedder=HashEmbedder()) as alice:
        hits = alice.search("secret key flowerpot")
        assert hits and "flowerpot" in hits[0].text
        assert all("Mallory" not in h.text for h in alice.search("planted memory"))
        alice.forget(ids=[hits[0].id])  # its forget may vacuum (MAINTAIN), and deletes only its rows
    with Memory(pg_url, namespace="bob", embedder=HashEmbedder()) as owner:
        assert owner.conn.raw.execute("SELECT count(*) FROM messages WHERE ns = 'bob'").fetchone()[0] == 1


@pytest.mark.plain_stores  # the round trip's SQLite files are its own, plain on purpose
def test_sqlite_to_postgres_and_back_compares_equal(pg_url, tmp_path):
    """export from a file, import into PostgreSQL, export again: the same lines (every message,
    id, correction, built memory and vector), and the same search results."""
    import io

    def export_text(mem: Memory, **kwargs) -> str:
        buf = io.StringIO()
        mem.admin.export(buf, **kwargs)
        return buf.getvalue()

    with Memory(tmp_path / "file.db", namespace="a", embedder=HashEmbedder()) as file_store:
        first = file_store.add("Alice", "I adopted a cat named Mochi in March.", time="2024-03-02T10:00:00")
        file_store.add("Bob", "Mochi sounds lovely! Does she like the balcony?", time="2024-03-02T10:01:00")
        file_store.correct(f"m:{first.id}", "I adopted a cat named Mochi in April.")
        file_store.add("Alice", "ÜBER line\u2028separator and emoji \U0001f408", time="2024-03-03T09:00:00")
        exported = export_text(file_store, vectors=True)
        expected_hits = [h.to_dict() for h in file_store.search("Mochi cat", channels=["bm25"])]
    path = tmp_path / "export.jsonl"
    path.write_text(exported, encoding="utf-8")
    with Memory(pg_url, namespace="a", embedder=HashEmbedder()) as pg_store:
        counts = pg_store.admin.restore(path).counts
        assert counts["message"] == 4 and counts["vector"] >= 4
        again = export_text(pg_store, vectors=True)
        assert again == exported
        assert [h.id for h in pg_store.search("Mochi cat", channels=["bm25"])] == [h["id"] for h in expected_hits]
    back = tmp_path / "back.db"
    (tmp_path / "again.jsonl").write_text(again, encoding="utf-8")
    with Memory(back, namespace="a", embedder=HashEmbedder()) as file_again:
        file_again.admin.restore(tmp_path / "again.jsonl")
        assert export_text(file_again, vectors=True) == exported


def _recounted(raw, table: str) -> tuple[dict, tuple]:
    terms = dict(
        raw.execute(
            f"SELECT l, count(*) FROM {table}, unnest(tsvector_to_array(doc)) AS l GROUP BY l"  # type: ignore[arg-type]
        ).fetchall()
    )
    size = raw.execute(f"SELECT count(*), sum(tokens) FROM {table}").fetchone()  # type: ignore[arg-type]
    return terms, (size[0], size[1] or 0)


def _postings(raw, table: str) -> tuple[list, list]:
    """(the postings kept, the postings of the rows now) of one full-text table."""
    kept = raw.execute(
        "SELECT lexeme, id, tf, tokens FROM fts_postings WHERE tbl = %(t)s ORDER BY 1, 2", {"t": table}
    ).fetchall()
    now = raw.execute(
        f"SELECT p.lexeme, f.id, p.tf, f.tokens FROM {table} AS f, localmem_postings(%(t)s, f.doc) AS p "  # type: ignore[arg-type]
        "ORDER BY 1, 2",
        {"t": table},
    ).fetchall()
    return kept, now


def _kept(raw, table: str) -> tuple[dict, tuple]:
    terms = dict(
        raw.execute(
            "SELECT lexeme, sum(ndoc) FROM (SELECT lexeme, ndoc FROM fts_terms WHERE tbl = %(t)s "
            "UNION ALL SELECT lexeme, ndoc FROM fts_terms_delta WHERE tbl = %(t)s) AS x "
            "GROUP BY lexeme HAVING sum(ndoc) <> 0",
            {"t": table},
        ).fetchall()
    )
    size = raw.execute(
        "SELECT coalesce(sum(n_rows), 0), coalesce(sum(total_tokens), 0) FROM (SELECT n_rows, total_tokens "
        "FROM fts_stats WHERE tbl = %(t)s UNION ALL SELECT n_rows, total_tokens FROM fts_stats_delta "
        "WHERE tbl = %(t)s) AS x",
        {"t": table},
    ).fetchone()
    return terms, (size[0], size[1])


def test_bm25_statistics_follow_every_change_and_an_old_store_is_backfilled(pg_url):
    """Migration 0004 keeps BM25's statistics and postings by triggers (statistics folded every
    256 changes): after adds in two namespaces, a correction and a forget they equal a count
    over the rows, without the words no row holds any more; and a store migrated from 0003
    gets them from its rows."""
    with Memory(pg_url, namespace="a", embedder=HashEmbedder()) as mem:
        added = [mem.add("Alice", f"I went hiking on trail {i} with my dog Scout.") for i in range(300)]
        mem.correct(f"m:{added[3].id}", "I went kayaking on lake 3 with my cat Tom.")
        mem.forget(ids=[f"m:{added[5].id}", f"m:{added[6].id}"])
        with Memory(pg_url, namespace="b", embedder=HashEmbedder()) as other:
            other.add("Bob", "A zeppelin over the harbour.")
        raw = mem.conn.raw
        assert raw.execute("SELECT count(*) FROM fts_terms").fetchone()[0] > 0  # folded at least once
        # The forget folded: the words only its messages held ("5", "6") left the statistics,
        # and no lexeme stays with no row holding it (migration 0006; they once stayed at 0).
        assert raw.execute("SELECT count(*) FROM fts_terms WHERE ndoc = 0").fetchone()[0] == 0
        assert raw.execute("SELECT count(*) FROM fts_terms WHERE lexeme IN ('5', '6')").fetchone()[0] == 0
        for table in ("messages_fts", "messages_fts_intl", "units_fts"):
            assert _kept(raw, table) == _recounted(raw, table), table
            kept, now = _postings(raw, table)
            assert kept == now, table
        # an old store: the statistics dropped and rebuilt by the migration's own backfill
        from localmem.store import pgsql

        backfill = next(sql for v, _, sql in pgsql.pg_migrations() if v == 4).split("-- A store made before")[1]
        with raw.transaction():
            raw.execute(
                "DELETE FROM fts_stats; DELETE FROM fts_stats_delta; DELETE FROM fts_terms; DELETE FROM fts_terms_delta; "
                "DELETE FROM fts_postings"
            )
            raw.execute("-- A store made before" + backfill)  # type: ignore[arg-type]
        for table in ("messages_fts", "messages_fts_intl", "units_fts"):
            assert _kept(raw, table) == _recounted(raw, table), table
        assert mem.search("zeppelin harbour", channels=["bm25"]) == []  # namespace b's, not a's
        assert mem.search("kayaking lake", channels=["bm25"])[0].id.startswith("m:")


@pytest.mark.plain_stores  # the SQLite file is the reference, plain on purpose
def test_bm25_scores_equal_fts5s_to_the_last_bit(pg_url, tmp_path):
    """The same messages in a SQLite file and in PostgreSQL: every full-text query gives the
    same rows with the same scores (migration 0005 tokenizes and stems as FTS5's porter
    unicode61 does; search.sql sums as fts5_aux.c does), including a word stemmed twice in one
    query, punctuation inside words, diacritics and a word the two Porter variants stem apart."""
    from localmem.retrieval.search import fts_query

    texts = [
        "I went running and then I run again, generously.",
        "My e-mail is alice@example.com; the café opens at 3.5 past noon.",
        "Running shoes: 2 pairs, re-soled. The naïve plan worked!",
        "Generous people run marathons; we ran one in 2019 (cafe latte after).",
        "Nothing about that here, only the garden and the shed.",
        "The shed's roof leaks; running water in the garden shed.",
    ]
    queries = ["running run", "e-mail café", "generously generous", "3.5 naive", "garden shed roof", "cafe"]
    sqlite = Memory(str(tmp_path / "ref.db"), namespace="a", embedder=HashEmbedder())
    with sqlite, Memory(pg_url, namespace="a", embedder=HashEmbedder()) as pg:
        for i, text in enumerate(texts):
            speaker = "Alice" if i % 2 else "Bob"
            sqlite.add(speaker, text, conversation="c", id=str(i))
            pg.add(speaker, text, conversation="c", id=str(i))
        for query in queries:
            bind = {"match": fts_query(query), "ns": "a", "k": 50}
            ref = [tuple(r) for r in sqlite.conn.run("fts_messages", bind)]
            got = [tuple(r) for r in pg.conn.run("fts_messages", bind)]
            assert ref, query
            assert got == ref, query
