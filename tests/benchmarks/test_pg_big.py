"""evals/pg_big.py's bulk load (the search-latency bench at 100,000 and 1,000,000 messages,
docs/scale.md) writes what ``Memory.ingest(extract="none")`` writes: the same messages stored
both ways give the same rows in every table search reads and the same top-10s, on each engine."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from localmem import Memory
from localmem_bench.bench import generate_messages, generate_queries, write_jsonl
from tests.helpers import open_memory

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "evals"))

import pg_big  # noqa: E402

SIZE = 300


def _stores(tmp_path: Path, normal_at: str, bulk_at: str, load, open_=Memory) -> tuple[Memory, Memory]:
    data = tmp_path / "messages.jsonl"
    write_jsonl(generate_messages(SIZE), data)
    embedder = pg_big.BulkHashEmbedder()
    normal = open_(normal_at, namespace=pg_big.NAMESPACE, embedder=embedder)
    bulk = open_(bulk_at, namespace=pg_big.NAMESPACE, embedder=embedder)
    normal.ingest(data, format="jsonl", extract="none")
    load(bulk, pg_big.prepare(data, embedder, bulk.config))
    return normal, bulk


def _tables(differences: list[str]) -> list[str]:
    """The tables named in :func:`pg_big.compare`'s differences (a changed text may change the
    top-10s too)."""
    return [d.split(":")[0] for d in differences if d.startswith("table ")]


@pytest.mark.not_on_postgres("the SQLite half: the PostgreSQL half is the next test")
def test_a_bulk_loaded_sqlite_store_equals_an_ingested_one(tmp_path):
    # open_memory: keyed in a --stores=encrypted run, so the bulk load is checked on encrypted files too
    normal, bulk = _stores(
        tmp_path, str(tmp_path / "normal.db"), str(tmp_path / "bulk.db"), pg_big.load_sqlite, open_memory
    )
    with normal, bulk:
        queries = generate_queries(100)
        tables = pg_big.dump(bulk)
        assert len(tables["messages"]) == SIZE and tables["units"] and tables["message_parts"]
        assert tables["messages_fts_docsize"] and tables["vec_message_codes"]
        assert pg_big.compare(normal, bulk, queries) == []
        # the comparison sees a difference where there is one
        with bulk.conn:
            bulk.conn.execute("UPDATE messages SET text = text || ' zebra' WHERE id = 5")
        assert _tables(pg_big.compare(normal, bulk, queries[:5])) == ["table messages"]


def test_a_bulk_loaded_postgres_store_equals_an_ingested_one(postgres_server, tmp_path):
    names = ["pgbig_normal", "pgbig_bulk"]
    for name in names:
        postgres_server.admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        postgres_server.admin(f'CREATE DATABASE "{name}" TEMPLATE localmem_template STRATEGY FILE_COPY')
    normal_url, bulk_url = (postgres_server.url(n) for n in names)
    try:
        normal, bulk = _stores(
            tmp_path, normal_url, bulk_url, lambda mem, rows: pg_big.load_postgres(mem, bulk_url, rows, lambda _: None)
        )
        with normal, bulk:
            tables = pg_big.dump(bulk)
            assert len(tables["messages_fts"]) == SIZE and tables["fts_postings"] and tables["fts_stats"]
            assert len(tables["vec_messages"]) == SIZE and tables["units_fts"]
            indexes = {r[0] for r in bulk.conn.raw.execute("SELECT indexname FROM pg_indexes")}  # type: ignore[attr-defined]
            assert {"vec_messages_hnsw", "vec_message_parts_hnsw", "messages_fts_doc", "fts_postings_pkey"} <= indexes
            queries = generate_queries(100)
            assert pg_big.compare(normal, bulk, queries) == []
            bulk.conn.raw.execute("UPDATE fts_postings SET tf = tf + 1 WHERE id = 5")  # type: ignore[attr-defined]
            assert _tables(pg_big.compare(normal, bulk, queries[:5])) == ["table fts_postings"]
    finally:
        from localmem.store import pgpool

        pgpool.close_pools()
        for name in names:
            postgres_server.admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
