"""store.handle.Handle: the one connection, lock and key a Memory and its parts share."""

from __future__ import annotations

import pytest

from localmem.errors import LocalmemError, StoreLockedError
from localmem.store.handle import Handle
from tests.helpers import key_for_tests


def test_reopen_swaps_the_connection_and_close_ends_it(tmp_path):
    key = key_for_tests()  # the suite's passphrase in an encrypted run
    handle = Handle(tmp_path / "h.db", 1000, key)
    first = handle.conn
    first.execute("CREATE TABLE kept (x INTEGER)")
    handle.reopen(key)
    assert handle.conn is not first and handle.key is key
    assert handle.conn.execute("SELECT count(*) FROM kept").fetchone() == (0,)  # the same file
    handle.close()
    handle.close()  # a second close does nothing
    with pytest.raises(LocalmemError, match="closed; open a new one"):
        _ = handle.conn


def test_locked_turns_a_busy_store_into_a_store_locked_error(tmp_path):
    key = key_for_tests()
    writer, other = Handle(tmp_path / "h.db", 50, key), Handle(tmp_path / "h.db", 50, key)
    # A write the writer has not committed: SQLite's write lock, PostgreSQL's lock on the new key.
    writer.conn.execute("BEGIN")
    writer.conn.execute("INSERT INTO meta (key, value) VALUES ('held', 'writer')")
    try:
        with pytest.raises(StoreLockedError), other.locked():
            other.conn.execute("INSERT INTO meta (key, value) VALUES ('held', 'other')")
    finally:
        writer.conn.execute("ROLLBACK")
        writer.close()
        other.close()
