"""Nearest neighbours on large namespaces: binary codes scanned in memory, then exact rescoring.

sqlite-vec's vec0 scans every vector of a partition and costs about 0.5 µs per row on
2 cores: ~600 ms for a million units, for every query. Above :data:`EXACT_BELOW` rows a
namespace is searched instead through the sign bits of its vectors (48 bytes for 384
dimensions), kept in ``vec_*_codes`` and cached in this process: Hamming distance over all
codes (numpy, a few ms per million), the ``k × OVERSAMPLE`` closest, then their float
vectors read from vec0 by id and ranked by exact cosine distance. It is approximate: a true
neighbour whose sign pattern is far from the query's can be missed (``bench memory``
reports the overlap with the exact answer). Smaller namespaces are searched exactly.

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

from .queries import q

EXACT_BELOW = 20_000
OVERSAMPLE = 10
_TABLES = {"messages": ("message_codes_after", "message_vectors_of", "vec_messages_knn"),
           "units": ("unit_codes_after", "unit_vectors_of", "vec_units_knn")}
_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


@dataclass
class _Codes:
    ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    kinds: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=object))
    codes: np.ndarray | None = None  # (n, bytes) uint8
    inserts: int = -1
    reloads: int = -1

    def append(self, rows: list[tuple[int, str | None, bytes]]) -> None:
        if not rows:
            return
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        kinds = np.array([r[1] for r in rows], dtype=object)
        codes = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.uint8).reshape(len(rows), -1)
        if self.codes is None or self.codes.shape[1] != codes.shape[1]:
            self.ids, self.kinds, self.codes = ids, kinds, codes.copy()
        else:
            self.ids = np.concatenate([self.ids, ids])
            self.kinds = np.concatenate([self.kinds, kinds])
            self.codes = np.concatenate([self.codes, codes])


# One cache per open connection (a Memory owns one), dropped with it.
_CACHES: "weakref.WeakKeyDictionary[Any, dict[tuple[str, str], _Codes]]" = weakref.WeakKeyDictionary()


def knn(conn: Any, table: str, ns: str, query: np.ndarray, k: int,
        kind: str | None = None) -> list[tuple[int, float]]:
    """The ``k`` nearest rows of ``table`` ("messages" or "units") in ``ns`` to ``query`` as
    ``(id, cosine distance)``, nearest first; ``kind`` restricts units to one kind."""
    codes_after, vectors_of, exact = _TABLES[table]
    cached = _load(conn, table, ns, codes_after)
    query = np.asarray(query, dtype=np.float32)
    if cached is None or len(cached.ids) < EXACT_BELOW:
        params = {"embedding": query.tobytes(), "k": k, "ns": ns}
        if kind is not None:
            exact, params["kind"] = "vec_units_knn_kind", kind
        return [(int(i), float(d)) for i, d in conn.execute(q(exact), params).fetchall()]
    candidates = _hamming_nearest(cached, query, k * OVERSAMPLE, kind)
    if not len(candidates):
        return []
    rows = conn.execute(q(vectors_of), {"ids": json.dumps([int(i) for i in candidates])}).fetchall()
    if not rows:
        return []
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    vectors = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    norms = np.linalg.norm(vectors, axis=1) * max(float(np.linalg.norm(query)), 1e-12)
    distance = 1.0 - (vectors @ query) / np.maximum(norms, 1e-12)
    order = np.argsort(distance, kind="stable")[:k]
    return [(int(ids[i]), float(distance[i])) for i in order]


def shortlist(conn: Any, table: str, ns: str, query: np.ndarray, ids: Sequence[int], n: int) -> list[int]:
    """At most ``n`` of ``ids`` whose codes are closest to ``query``'s, for callers that would
    otherwise read every candidate's float vector; all of ``ids`` on small namespaces."""
    codes_after = _TABLES[table][0]
    cached = _load(conn, table, ns, codes_after)
    if cached is None or cached.codes is None or len(cached.ids) < EXACT_BELOW or len(ids) <= n:
        return list(ids)
    wanted = np.asarray(ids, dtype=np.int64)
    at = np.searchsorted(cached.ids, wanted)  # cached ids are in id order
    at = np.clip(at, 0, len(cached.ids) - 1)
    found = cached.ids[at] == wanted
    rows, kept = at[found], wanted[found]
    bits = np.packbits(np.asarray(query, dtype=np.float32) > 0, bitorder="little")
    if len(bits) != cached.codes.shape[1] or not len(rows):
        return list(ids)
    distance = _POPCOUNT[np.bitwise_xor(cached.codes[rows], bits)].sum(axis=1, dtype=np.int32)
    order = np.argsort(distance, kind="stable")[:n]
    return [int(i) for i in kept[order]]


def _hamming_nearest(cached: _Codes, query: np.ndarray, n: int, kind: str | None) -> np.ndarray:
    assert cached.codes is not None
    bits = np.packbits(query > 0, bitorder="little")  # as vec_quantize_binary packs them
    width = cached.codes.shape[1]
    if len(bits) != width:
        return np.zeros(0, dtype=np.int64)
    if width % 8 == 0:
        words = cached.codes.view(np.uint64)
        xor = np.bitwise_xor(words, bits.view(np.uint64))
        distance = (np.bitwise_count(xor) if hasattr(np, "bitwise_count") else
                    _POPCOUNT[xor.view(np.uint8)]).sum(axis=1, dtype=np.int32)
    else:
        distance = _POPCOUNT[np.bitwise_xor(cached.codes, bits)].sum(axis=1, dtype=np.int32)
    if kind is not None:
        distance = np.where(cached.kinds == kind, distance, np.iinfo(np.int32).max)
    n = min(n, len(distance))
    best = np.argpartition(distance, n - 1)[:n] if n < len(distance) else np.arange(len(distance))
    if kind is not None:
        best = best[cached.kinds[best] == kind]
    return cached.ids[best]


def _load(conn: Any, table: str, ns: str, codes_after: str) -> _Codes | None:
    """The namespace's codes, brought up to date; ``None`` when the store keeps none."""
    try:
        changes = {name: (ins, rel) for name, ins, rel in conn.execute(q("codes_changes"))}
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
        cached.append(conn.execute(q(codes_after), {"ns": ns, "after": after}).fetchall())
        cached.inserts, cached.reloads = inserts, reloads
    return cached
