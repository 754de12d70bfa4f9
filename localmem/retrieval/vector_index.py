"""Nearest neighbours on large namespaces: binary codes scanned in memory, then int8 rescoring.

sqlite-vec's vec0 scans every vector of a partition and costs about 0.5 µs per row on
2 cores: ~600 ms for a million units, for every query. Above :data:`EXACT_BELOW` rows a
namespace is searched instead through the sign bits of its vectors (48 bytes for 384
dimensions), kept in ``vec_*_codes`` and cached in this process: Hamming distance over all
codes (numpy, a few ms per million), the ``k × OVERSAMPLE`` closest, then their int8
copies (``q8``, a plain-table read by id; vec0's own point lookups cost ~0.2 ms each) ranked
by cosine distance to the float query. It is approximate: a true neighbour whose sign
pattern is far from the query's can be missed, and int8 distances are within ~3e-4 of the
float ones (``bench memory`` reports the overlap with the exact answer). Smaller namespaces
are searched exactly.

The cache follows the store through ``vec_code_changes``: inserts in id order are appended,
anything else (deletes, out-of-order ids) reloads the namespace.
"""

from __future__ import annotations

import json
import weakref
from dataclasses import dataclass, field
from typing import Any, Sequence

import apsw
import numpy as np

from ..config import EXACT_BELOW
from ..store.engine import Store
from ..store.rows import all_rows, one_row

OVERSAMPLE = 10
_TABLES = {
    "messages": ("message_codes_after", "message_vectors_of", "vec_messages_knn", "message_int8_of"),
    "units": ("unit_codes_after", "unit_vectors_of", "vec_units_knn", "unit_int8_of"),
    "parts": ("part_codes_after", "part_vectors_of", "vec_message_parts_knn", "part_int8_of"),
}
_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


@dataclass
class _Codes:
    """A namespace's codes in this process, stored as bit planes: ``planes[j]`` holds word
    ``j`` of every row's code (uint64 words when the code is a multiple of 8 bytes, else
    bytes), so a scan XORs and counts long contiguous rows: 2.2× faster than row-major at 1M."""

    ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # Each row's kind as a small integer (an object array costs ~30 ms to compare at 1M).
    kinds: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int16))
    kind_numbers: dict[str | None, int] = field(default_factory=dict)
    planes: np.ndarray | None = None  # (words, n)
    width: int = 0  # bytes per code
    inserts: int = -1
    reloads: int = -1
    # Rows of one kind with their planes, made on first use and dropped on append.
    subsets: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    def kind_number(self, kind: str | None) -> int:
        return self.kind_numbers.setdefault(kind, len(self.kind_numbers))

    def append(self, rows: list[tuple[int, str | None, bytes]]) -> None:
        if not rows:
            return
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        kinds = np.fromiter((self.kind_number(r[1]) for r in rows), dtype=np.int16, count=len(rows))
        codes = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.uint8).reshape(len(rows), -1)
        planes = np.ascontiguousarray(codes.view(_word(codes.shape[1])).T)
        self.subsets = {}
        if self.planes is None or self.width != codes.shape[1]:
            self.ids, self.kinds, self.planes, self.width = ids, kinds, planes, codes.shape[1]
        else:
            self.ids = np.concatenate([self.ids, ids])
            self.kinds = np.concatenate([self.kinds, kinds])
            self.planes = np.concatenate([self.planes, planes], axis=1)

    def of_kind(self, kind: str) -> tuple[np.ndarray, np.ndarray]:
        """The ids and planes of the rows of ``kind``."""
        number = self.kind_numbers.get(kind, -1)
        if number not in self.subsets:
            assert self.planes is not None
            rows = np.flatnonzero(self.kinds == number)
            self.subsets[number] = (self.ids[rows], np.ascontiguousarray(self.planes[:, rows]))
        return self.subsets[number]


def _word(width: int) -> type:
    return np.uint64 if width % 8 == 0 else np.uint8


def _hamming(planes: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Hamming distance from ``query``'s sign bits to every column of ``planes``."""
    words = np.packbits(np.asarray(query, dtype=np.float32) > 0, bitorder="little").view(planes.dtype)
    distance = np.zeros(planes.shape[1], dtype=np.uint16)
    for plane, word in zip(planes, words):
        xor = np.bitwise_xor(plane, word)
        if hasattr(np, "bitwise_count"):  # numpy >= 2
            distance += np.bitwise_count(xor)
        else:
            distance += _POPCOUNT[xor.view(np.uint8)].reshape(len(xor), -1).sum(axis=1, dtype=np.uint16)
    return distance


# One cache per open connection (a Memory owns one), dropped with it.
_CACHES: "weakref.WeakKeyDictionary[Any, dict[tuple[str, str], _Codes]]" = weakref.WeakKeyDictionary()


def knn(
    conn: Store, table: str, ns: str, query: np.ndarray, k: int, kind: str | None = None
) -> list[tuple[int, float]]:
    """The ``k`` nearest rows of ``table`` ("messages", "units" or "parts") in ``ns`` to ``query`` as
    ``(id, cosine distance)``, nearest first; ``kind`` restricts units to one kind."""
    codes_after, vectors_of, exact, int8_of = _TABLES[table]
    cached = _load(conn, table, ns, codes_after)
    query = np.asarray(query, dtype=np.float32)
    if cached is None or not len(cached.ids) or len(cached.ids) < EXACT_BELOW:
        params = {"embedding": query.tobytes(), "k": k, "ns": ns}
        if kind is not None:
            exact, params["kind"] = "vec_units_knn_kind", kind
        return [(int(i), float(d)) for i, d in all_rows(conn.run(exact, params))]
    candidates = _hamming_nearest(cached, query, k * OVERSAMPLE, kind)
    return _rescored(conn, table, [int(i) for i in candidates], query, k)


# A filtered search scores every allowed row exactly up to this many (their int8 copies read by
# id); above it, it takes the namespace's nearest with enough extra that about k pass.
AMONG_EXACT = 50_000
_READ_CHUNK = 10_000


def knn_among(
    conn: Store, table: str, ns: str, query: np.ndarray, ids: Sequence[int], k: int
) -> list[tuple[int, float]]:
    """The ``k`` nearest of the rows ``ids`` of ``table`` in ``ns`` (a filtered search), as
    :func:`knn` returns them."""
    if not ids or k < 1:
        return []
    query = np.asarray(query, dtype=np.float32)
    if len(ids) > AMONG_EXACT:
        total = _row_count(conn, table, ns)
        wanted = set(ids)
        fetch = min(total, k + int(2 * k * total / len(ids))) if total else k * 4
        return [(i, d) for i, d in knn(conn, table, ns, query, fetch) if i in wanted][:k]
    return _rescored(conn, table, list(ids), query, k)


def _row_count(conn: Store, table: str, ns: str) -> int:
    rows = one_row(conn.run("stats_vector_rows", {"ns": ns}))
    counts: dict[str, int] = dict(zip(("messages", "units", "parts"), rows))
    return int(counts[table])


def _rescored(conn: Store, table: str, candidates: list[int], query: np.ndarray, k: int) -> list[tuple[int, float]]:
    """``candidates`` ranked by cosine distance to ``query`` over their int8 copies (float
    vectors for rows without one), the ``k`` nearest."""
    _codes_after, vectors_of, _exact, int8_of = _TABLES[table]
    if not candidates:
        return []
    rows = []
    for start in range(0, len(candidates), _READ_CHUNK):
        chunk = candidates[start : start + _READ_CHUNK]
        rows += conn.run(int8_of, {"ids": json.dumps(chunk)}).fetchall()
    width = len(query)
    scored = [r for r in rows if r[1] is not None and len(r[1]) == width]
    have = {r[0] for r in scored}
    unscored = [i for i in candidates if i not in have]
    ids = np.fromiter((r[0] for r in scored), dtype=np.int64, count=len(scored))
    vectors = np.frombuffer(b"".join(r[1] for r in scored), dtype=np.int8).reshape(len(scored), width)
    if unscored:  # rows written by a process that predates q8, or without codes: their float vectors
        floats = []
        for start in range(0, len(unscored), _READ_CHUNK):
            floats += conn.run(vectors_of, {"ids": json.dumps(unscored[start : start + _READ_CHUNK])}).fetchall()
        floats = [r for r in floats if r[1] is not None and len(r[1]) == width * 4]
        ids = np.concatenate([ids, np.fromiter((r[0] for r in floats), dtype=np.int64, count=len(floats))])
        vectors = np.concatenate(
            [
                vectors.astype(np.float32),
                np.frombuffer(b"".join(r[1] for r in floats), dtype=np.float32).reshape(len(floats), width),
            ]
        )
    if not len(ids):
        return []
    distance = 1.0 - cosine(vectors.astype(np.float32), query)
    order = np.argsort(distance, kind="stable")[:k]
    return [(int(ids[i]), float(distance[i])) for i in order]


def cosine(vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Cosine similarity of each row of ``vectors`` to ``query`` (zero vectors score 0)."""
    query = np.asarray(query, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1) * max(float(np.linalg.norm(query)), 1e-12)
    return (vectors @ query) / np.maximum(norms, 1e-12)


def shortlist(conn: Store, table: str, ns: str, query: np.ndarray, ids: Sequence[int], n: int) -> list[int]:
    """At most ``n`` of ``ids`` whose codes are closest to ``query``'s, for callers that would
    otherwise read every candidate's float vector; all of ``ids`` on small namespaces."""
    codes_after = _TABLES[table][0]
    cached = _load(conn, table, ns, codes_after)
    if cached is None or cached.planes is None or len(cached.ids) < EXACT_BELOW or len(ids) <= n:
        return list(ids)
    wanted = np.asarray(ids, dtype=np.int64)
    at = np.searchsorted(cached.ids, wanted)  # cached ids are in id order
    at = np.clip(at, 0, len(cached.ids) - 1)
    found = cached.ids[at] == wanted
    rows, kept = at[found], wanted[found]
    if len(query) != cached.width * 8 or not len(rows):
        return list(ids)
    distance = _hamming(cached.planes[:, rows], query)
    order = np.argsort(distance, kind="stable")[:n]
    return [int(i) for i in kept[order]]


def _hamming_nearest(cached: _Codes, query: np.ndarray, n: int, kind: str | None) -> np.ndarray:
    assert cached.planes is not None
    if len(query) != cached.width * 8:  # as vec_quantize_binary packs them: a bit a dimension
        return np.zeros(0, dtype=np.int64)
    ids, planes = cached.of_kind(kind) if kind is not None else (cached.ids, cached.planes)
    distance = _hamming(planes, query)
    n = min(n, len(distance))
    if n <= 0:
        return np.zeros(0, dtype=np.int64)
    best = np.argpartition(distance, n - 1)[:n] if n < len(distance) else np.arange(len(distance))
    return ids[best]


def _load(conn: Store, table: str, ns: str, codes_after: str) -> _Codes | None:
    """The namespace's codes, brought up to date; ``None`` when the store keeps none."""
    try:
        changes = {name: (ins, rel) for name, ins, rel in conn.run("codes_changes")}
    except apsw.SQLError:  # no codes table: the store has no vectors yet
        return None
    if table not in changes:
        return None
    inserts, reloads = changes[table]
    per_conn = _CACHES.setdefault(conn, {})
    cached = per_conn.get((table, ns))
    if cached is None or cached.reloads != reloads or cached.inserts > inserts:
        cached = per_conn[(table, ns)] = _Codes()
    if cached.inserts != inserts:
        after = int(cached.ids[-1]) if len(cached.ids) else 0
        cached.append(all_rows(conn.run(codes_after, {"ns": ns, "after": after})))
        cached.inserts, cached.reloads = inserts, reloads
    return cached
