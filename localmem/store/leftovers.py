"""What a forget can leave in the file: old copies of deleted rows in the unused room of pages.

SQLite overwrites a deleted row and a freed page with zeros (``secure_delete``), but not every
copy of a row. When it rebalances a b-tree it rebuilds a page from the cells that stay on it
(``rebuildPage`` in SQLite's btree.c) and does not clear the room between the cell pointers and
the new start of the cells: a page that ends up holding fewer bytes keeps the bytes of the cells
that moved to a sibling. Those cells are live then, so nothing is wrong until one of them is
deleted: its old copy stays. Measured: plain SQLite with secure_delete on from the start,
incremental auto_vacuum and a truncated WAL kept 1 to 2 copies of deleted rows after ~3,500
rows of random churn (3 seeds, 2 of them with copies), all in that unused room; and 1 of 120
random forgets on 1,500-message stores left a forgotten message's text in a `messages` page.

:func:`find` looks for such copies of what a forget deleted: it reads the file page by page,
takes the unused room of every b-tree page (the gap between the cell pointers and the cells,
and the free blocks among the cells) and every free page, and looks there for pieces of what
was deleted (:class:`Forgotten`, filled by purge's triggers). Any piece of 11 bytes or more
(at least 6 of them non-zero) is found: 8-byte words of the deleted values are taken every 4
bytes, and each word found in the unused room is stretched to the longest run it shares with
the value. A run that is also in a live row (another message that says the same) is not
counted: the file holds it anyway. The
full-text indexes are left out of the search because purge writes them anew (their pages hold
terms cut by prefix compression, which a search for pieces of text would miss).
"""

from __future__ import annotations

import bisect
import mmap
from pathlib import Path
from typing import Any, Iterator

import numpy as np

WORD = 8  # bytes compared at once
STEP = 4  # a deleted value's words are taken every STEP bytes: any shared run of WORD + STEP - 1 is found
SHORTEST = WORD + STEP - 1  # 11 bytes: the shortest piece certain to be found
MOST_RUNS = 64  # more distinct runs than this to check against live rows: count them as found
# A run with fewer non-zero bytes than this says next to nothing (zero-padded numbers, sparse
# codes) and matches stray bytes by chance: not counted.
MEANINGFUL = 6
_BTREE_PAGES = (2, 5, 10, 13)  # interior/leaf index, interior/leaf table


class Forgotten:
    """The values a forget deletes, noted by the SQL function ``localmem_forgotten``."""

    def __init__(self) -> None:
        self.pieces: list[bytes] = []
        self.size = 0

    def __call__(self, *values: Any) -> None:
        for value in values:
            piece = value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value
            if isinstance(piece, bytes) and len(piece) >= SHORTEST:
                self.pieces.append(piece)
                self.size += len(piece)

    def __bool__(self) -> bool:
        return bool(self.pieces)


def find(path: Path, forgotten: Forgotten) -> int:
    """How many distinct runs of what was forgotten the unused room of the file at ``path``
    still holds (0: none). Read the file only with its WAL emptied and no other writer."""
    if not forgotten or not Path(path).stat().st_size:
        return 0
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
        regions = _unused(data)
        if not regions:
            return 0
        runs = _shared_runs(data, regions, forgotten)
        if len(runs) > MOST_RUNS:
            return len(runs)
        return sum(not _live_elsewhere(data, regions, run) for run in runs)


def _unused(data: mmap.mmap) -> list[tuple[int, int]]:
    """(start, end) of the unused room of every b-tree page and of every free page, in file
    order; only regions holding some non-zero byte."""
    page_size = int.from_bytes(data[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    free_pages = _free_pages(data, page_size)
    regions: list[tuple[int, int]] = []
    for number in range(1, len(data) // page_size + 1):
        base = (number - 1) * page_size
        if number in free_pages:
            regions.append((base + free_pages[number], base + page_size))
            continue
        head = base + (100 if number == 1 else 0)
        kind = data[head]
        if kind not in _BTREE_PAGES:
            continue  # an overflow page (live), a pointer-map page or the lock-byte page
        cells = int.from_bytes(data[head + 3 : head + 5], "big")
        content = int.from_bytes(data[head + 5 : head + 7], "big") or 65536
        pointers_end = head + (12 if kind in (2, 5) else 8) + 2 * cells
        regions.append((pointers_end, min(base + content, base + page_size)))
        block = int.from_bytes(data[head + 1 : head + 3], "big")
        while block and block + 4 <= page_size:
            following = int.from_bytes(data[base + block : base + block + 2], "big")
            size = int.from_bytes(data[base + block + 2 : base + block + 4], "big")
            regions.append((base + block + 4, min(base + block + size, base + page_size)))
            if following <= block:
                break
            block = following
    return sorted((a, b) for a, b in regions if b - a >= WORD and data[a:b].count(0) < b - a)


def _free_pages(data: mmap.mmap, page_size: int) -> dict[int, int]:
    """Free page number -> where its unused bytes start (after a trunk page's list)."""
    found: dict[int, int] = {}
    trunk = int.from_bytes(data[32:36], "big")
    pages = len(data) // page_size
    while trunk and 0 < trunk <= pages and trunk not in found:
        base = (trunk - 1) * page_size
        following = int.from_bytes(data[base : base + 4], "big")
        leaves = min(int.from_bytes(data[base + 4 : base + 8], "big"), (page_size - 8) // 4)
        found[trunk] = 8 + 4 * leaves
        for i in range(leaves):
            leaf = int.from_bytes(data[base + 8 + 4 * i : base + 12 + 4 * i], "big")
            if 0 < leaf <= pages:
                found[leaf] = 0
        trunk = following
    return found


def _words(buf: bytes, step: int) -> np.ndarray:
    """The 8-byte words of ``buf`` starting every ``step`` bytes, as integers."""
    raw = np.frombuffer(buf, dtype=np.uint8)
    if len(raw) < WORD:
        return np.empty(0, dtype="<u8")
    windows = np.lib.stride_tricks.sliding_window_view(raw, WORD)[::step]
    return np.ascontiguousarray(windows).view("<u8").ravel()


def _shared_runs(data: mmap.mmap, regions: list[tuple[int, int]], forgotten: Forgotten) -> set[bytes]:
    """The longest runs of SHORTEST bytes or more that a deleted value shares with the unused
    room, each found from an 8-byte word they share."""
    room = [bytes(data[a:b]) for a, b in regions]
    words = [_words(chunk, 1) for chunk in room]
    room_words = np.concatenate(words)
    room_where = np.concatenate(
        [np.stack([np.full(len(w), i), np.arange(len(w))], axis=1) for i, w in enumerate(words)]
    )
    keep = room_words != 0
    order = np.argsort(room_words[keep], kind="stable")
    room_words, room_where = room_words[keep][order], room_where[keep][order]
    runs: set[bytes] = set()
    for buf, starts, pieces in _batches(forgotten.pieces):
        for hit in np.nonzero(np.isin(_words(buf, STEP), room_words))[0]:
            at = int(hit) * STEP
            i = bisect.bisect_right(starts, at) - 1
            piece, offset_in_piece = pieces[i], at - starts[i]
            if offset_in_piece + WORD > len(piece):
                continue  # the word runs into the next value
            # a numpy uint64 (a Python int above 2**63 would be compared as a float)
            word = np.frombuffer(buf[at : at + WORD], dtype="<u8")[0]
            lo, hi = np.searchsorted(room_words, word, "left"), np.searchsorted(room_words, word, "right")
            for chunk_index, offset in room_where[lo:hi]:
                run = _stretch(piece, offset_in_piece, room[int(chunk_index)], int(offset))
                if len(run) >= SHORTEST and len(run) - run.count(0) >= MEANINGFUL:
                    runs.add(run)
            if len(runs) > MOST_RUNS:
                return runs
    return runs


def _batches(pieces: list[bytes], size: int = 1 << 23) -> Iterator[tuple[bytes, list[int], list[bytes]]]:
    """The pieces joined into buffers of about ``size`` bytes, each piece starting at a multiple
    of STEP: (buffer, where each piece starts, the pieces)."""
    buf, starts, batch = bytearray(), [], []
    for piece in pieces:
        buf += bytes(-len(buf) % STEP)
        starts.append(len(buf))
        batch.append(piece)
        buf += piece
        if len(buf) >= size:
            yield bytes(buf), starts, batch
            buf, starts, batch = bytearray(), [], []
    if buf:
        yield bytes(buf), starts, batch


def _stretch(piece: bytes, at: int, chunk: bytes, offset: int) -> bytes:
    """The longest run around ``piece[at:at+WORD] == chunk[offset:offset+WORD]`` the two share."""
    start, chunk_start = at, offset
    while start > 0 and chunk_start > 0 and piece[start - 1] == chunk[chunk_start - 1]:
        start, chunk_start = start - 1, chunk_start - 1
    end, chunk_end = at + WORD, offset + WORD
    while end < len(piece) and chunk_end < len(chunk) and piece[end] == chunk[chunk_end]:
        end, chunk_end = end + 1, chunk_end + 1
    return piece[start:end]


def _live_elsewhere(data: mmap.mmap, regions: list[tuple[int, int]], run: bytes) -> bool:
    """Whether ``run`` is also in the file outside the unused room (in a live row)."""
    starts = [a for a, _b in regions]
    at = data.find(run)
    while at >= 0:
        i = bisect.bisect_right(starts, at) - 1
        if i < 0 or at + len(run) > regions[i][1]:
            return True
        at = data.find(run, at + 1)
    return False
