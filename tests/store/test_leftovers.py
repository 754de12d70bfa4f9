"""A copy of a deleted row left in the unused room of a page (where SQLite's b-tree rebalancing
leaves them, see store/leftovers.py) is found after a forget, and the file is written anew; what
a live row also holds, or what was never deleted, does not count."""

from __future__ import annotations

from pathlib import Path

import pytest

from localmem.store import leftovers
from tests.fakes import HashEmbedder
from tests.helpers import open_memory
from tests.trials.forget_bytes import file_bytes

SECRET = "the vault code is qzlv5w8r2t4y6u1 and nobody else knows it"


def _plant(path: Path, data: bytes) -> int:
    """Write ``data`` into the unused room of a b-tree leaf page of the (closed) store, as a
    rebalance leaves an old copy of a cell there; the page number."""
    raw = bytearray(path.read_bytes())
    page_size = int.from_bytes(raw[16:18], "big")
    for number in range(2, len(raw) // page_size + 1):
        base = (number - 1) * page_size
        if raw[base] != 13:  # a table leaf
            continue
        cells = int.from_bytes(raw[base + 3 : base + 5], "big")
        gap_start = base + 8 + 2 * cells
        gap_end = base + (int.from_bytes(raw[base + 5 : base + 7], "big") or 65536)
        if gap_end - gap_start >= len(data) + 16 and not any(raw[gap_start:gap_end]):
            raw[gap_end - len(data) - 8 : gap_end - 8] = data
            path.write_bytes(bytes(raw))
            return number
    raise AssertionError("no leaf page with room to plant a copy")


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "m.db"
    with open_memory(path, namespace="me", embedder=HashEmbedder()) as mem:
        for i in range(60):
            mem.add("Ann", f"note {i} about the garden, the weather and the neighbours' new fence")
        mem.add("Ann", SECRET)
        mem.add("Bob", "kept: a message that stays")
    assert not Path(f"{path}-wal").exists()
    return path


@pytest.mark.plain_only
def test_a_copy_left_in_a_page_is_found_and_the_forget_writes_the_file_anew(store):
    _plant(store, b"\x81\x07" + SECRET.encode())  # a stale copy of the secret's cell
    with open_memory(store, namespace="me", embedder=HashEmbedder()) as mem:
        secret = next(h.id for h in mem.recent(5) if "vault" in h.text)
        done = mem.forget(ids=[secret]).file
        assert done["vacuumed"] is True and "unused room of pages" in done["vacuum_reason"]
    assert b"qzlv5w8r2t4y6u1" not in file_bytes(store)
    assert b"a message that stays" in file_bytes(store)


def test_without_a_copy_the_file_is_not_written_anew(store):
    with open_memory(store, namespace="me", embedder=HashEmbedder()) as mem:
        secret = next(h.id for h in mem.recent(5) if "vault" in h.text)
        done = mem.forget(ids=[secret]).file
        assert done["vacuumed"] is False and done["vacuum_reason"] is None
    assert b"qzlv5w8r2t4y6u1" not in file_bytes(store)


@pytest.mark.plain_only
def test_what_a_live_row_also_holds_or_was_never_deleted_does_not_count(store):
    gone = "a deleted message whose words are qzgone7h3k9 and nothing else"
    _plant(store, b"kept: a message that stays, then " + gone.encode()[33:43])
    noted = leftovers.Forgotten()
    noted("kept: a message that stays", "words that were never in this file at all", gone)
    # the first is in a live row too; the second is nowhere; 10 bytes of the third are shorter
    # than the shortest piece looked for
    assert leftovers.find(store, noted) == 0
    _plant(store, gone.encode()[20:40])
    assert leftovers.find(store, noted) == 1  # 20 bytes of it: found


def test_pieces_shorter_than_the_shortest_are_not_noted():
    noted = leftovers.Forgotten()
    noted("short", None, 12, b"\x00" * 4, "long enough to look for")
    assert noted.pieces == [b"long enough to look for"]
