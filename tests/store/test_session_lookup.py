"""The full-text index's context lookup (each message's previous turn in its session) is one
index step, not a walk back over the conversation (migration 0014; PostgreSQL 0008)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import on_postgres, store_connect

# The lookup as the full-text triggers (SQLite 0013) and localmem_reindex_message (PostgreSQL
# 0005) write it.
LOOKUP = """
SELECT p.speaker || ': ' || p.text FROM messages AS p
WHERE p.ns = ? AND p.conversation = ? AND p.session = ? AND p.seq < ?
ORDER BY p.seq DESC LIMIT 1
"""


def test_the_previous_turn_in_a_session_is_found_through_the_session_index(tmp_path: Path):
    conn = store_connect(tmp_path / "s.db")
    args = ("default", "c1", "s2", 10_000)
    if on_postgres(conn):
        # An empty table is cheapest to read whole; without that way out the planner must
        # take an index, and the session's lets it read the one row it needs.
        with conn:
            conn.execute("SET LOCAL enable_seqscan = off")
            plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + LOOKUP, args))
    else:
        plan = "\n".join(r[-1] for r in conn.execute("EXPLAIN QUERY PLAN " + LOOKUP, args))
    assert "messages_by_session" in plan, plan
    assert "messages_by_order" not in plan, plan
