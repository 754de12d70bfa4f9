"""A large ingest leaves the server store ready to plan its searches: PostgreSQL's planner
statistics are gathered at its end (not a minute later by autovacuum), and the id arrays the
shared queries pass are planned as the few ids they hold (PostgreSQL migration 0007), so a search looks
its messages up by key instead of reading the whole table."""

from __future__ import annotations

import pytest

from localmem.store import pg
from localmem_bench.bench import generate_messages, write_jsonl
from tests.fakes import HashEmbedder
from tests.helpers import on_postgres, open_memory


def test_a_bulk_ingest_gathers_the_planners_statistics(tmp_path):
    data = tmp_path / "messages.jsonl"
    write_jsonl(generate_messages(pg.BULK_MESSAGES), data)
    with open_memory(tmp_path / "bulk.db", namespace="bench", embedder=HashEmbedder()) as mem:
        if not on_postgres(mem.conn):
            pytest.skip("SQLite plans these queries by their indexes alone: nothing to gather")
        raw = mem.conn.raw

        def rows_known() -> float:
            # reltuples: -1 until the table is first analyzed (or vacuumed), then its row count
            return raw.execute("SELECT reltuples FROM pg_class WHERE oid = 'messages'::regclass").fetchone()[0]

        mem.add("Ann", "A first message, too few to gather anything.")
        assert rows_known() < 1
        report = mem.ingest(data, format="jsonl", extract="none")
        assert sum(n.added for n in report.namespaces) >= pg.BULK_MESSAGES
        assert rows_known() >= pg.BULK_MESSAGES
        assert raw.execute("SELECT prorows FROM pg_proc WHERE proname = 'localmem_ids'").fetchone() == (10,)
