"""The vector channel across the languages of one namespace: a question in one language should
find the answer said in another.

Why: a multilingual embedder (multilingual-e5-small) puts a text closer to every text in its own
language than to any text in another. A Spanish question scores about 0.05 higher against all
Spanish messages than against English ones, more than separates a relevant message from an
irrelevant one; so in a chat that mixes Spanish and English, "¿Dónde se aloja Mark en Valencia?"
ranked the English "I'm staying at my aunt Claire's flat" 128th of 182 messages by cosine, behind
unrelated Spanish ones. Measured on the mixed conversation of localmem's multilingual set
(docs/languages.md): native recall@10 62.5 before, 100.0 with this.

How: the namespace's messages are grouped by their stored language (``messages.lang``; ``und``
and groups under :data:`MIN_MESSAGES` messages take no part). A group's *offset* for a query is
the query's cosine similarity to the group's centroid (the mean of its message vectors): how much
the query resembles that language on average. Each group less like the query than the query's
own language (or, when the query's language is not among the groups, than the group it is most
like) has its nearest messages found on their own (so they are candidates at all) and their
distances lowered by the gap. A message is never pushed down, and within a language the order is
the embedder's; a namespace in one language (every English store) is searched exactly as before.
This is the per-language centring of Libovický et al. (2020, "On the language neutrality of
pre-trained multilingual representations") applied to the query side only, where it costs one dot
product a group.

Cost: the groups and their centroids are read once per change of the store (one pass over the
namespace's message vectors) and kept for this connection; each search then runs one filtered
nearest-neighbour search per lifted language.
"""

from __future__ import annotations

import json
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..store.engine import Store
from ..text.language import UNDETERMINED, detect

# A language with fewer messages than this in a namespace is left as it is: its centroid would be
# a few messages' own vectors (lifting them to the middle of the pack whatever they say), and a
# handful of stray detections ("oké tot morgen" called Czech) would form groups of their own.
MIN_MESSAGES = 5

_READ_CHUNK = 5_000


@dataclass
class _Groups:
    state: tuple[Any, ...]
    ids: dict[str, list[int]] = field(default_factory=dict)
    centroids: dict[str, np.ndarray] = field(default_factory=dict)


_CACHES: "weakref.WeakKeyDictionary[Any, dict[str, _Groups]]" = weakref.WeakKeyDictionary()


def groups(conn: Store, ns: str) -> _Groups:
    """The languages of ``ns`` with at least :data:`MIN_MESSAGES` messages: their message ids and
    centroids, read again only when the store has changed since."""

    state = conn.change_state()
    cache = _CACHES.setdefault(conn, {})
    kept = cache.get(ns)
    if kept is not None and kept.state == state:
        return kept
    by_lang: dict[str, list[int]] = {}
    for message_id, lang in conn.run("namespace_message_languages", {"ns": ns}):
        if lang and lang != UNDETERMINED:
            by_lang.setdefault(lang, []).append(message_id)
    found = _Groups(state)
    big = {lang: ids for lang, ids in by_lang.items() if len(ids) >= MIN_MESSAGES}
    if len(big) >= 2:  # one language: nothing to balance, nothing read
        for lang, ids in big.items():
            centroid = _centroid(conn, ids)
            if centroid is not None:
                found.ids[lang], found.centroids[lang] = ids, centroid
    cache[ns] = found
    return found


def _centroid(conn: Store, ids: list[int]) -> np.ndarray | None:
    total: np.ndarray | None = None
    count = 0
    for start in range(0, len(ids), _READ_CHUNK):
        chunk = json.dumps(ids[start : start + _READ_CHUNK])
        for _, blob in conn.run("message_vectors_of", {"ids": chunk}):
            if blob is None:
                continue
            vector = np.frombuffer(blob, dtype=np.float32)
            total = vector.astype(np.float64) if total is None else total + vector
            count += 1
    return None if total is None or not count else (total / count).astype(np.float32)


Key = tuple[str, int]
Nearest = Callable[[list[int]], list[tuple[float, Key]]]


def lifts(conn: Store, ns: str, query: str, query_vec: np.ndarray) -> dict[str, float]:
    """For each language of ``ns`` to lift for this query, how much (a cosine-distance amount,
    positive); empty for a namespace in one language."""
    found = groups(conn, ns)
    if len(found.centroids) < 2:
        return {}
    query_vec = np.asarray(query_vec, dtype=np.float32)
    offsets = {lang: float(np.dot(query_vec, c)) for lang, c in found.centroids.items()}
    lang = detect(query)
    reference = offsets[lang] if lang in offsets else max(offsets.values())
    return {g: reference - off for g, off in offsets.items() if off < reference}


def balanced(
    conn: Store,
    ns: str,
    query: str,
    query_vec: np.ndarray,
    found: list[tuple[float, Key]],
    nearest: Nearest,
    allowed: set[int] | None = None,
) -> tuple[list[tuple[float, Key]], dict[Key, float]]:
    """``found`` (the vector channel's ``(cosine distance, key)`` over the whole namespace) with
    the nearest messages of each language less like the query than its own added and every
    message of such a language moved nearer by the gap (see the module's docstring).
    ``nearest(ids)``: the channel's nearest among those message ids (whole messages and their
    parts); ``allowed``: the message ids a filtered search may return (``None``: all).

    Returns the candidates with the distances to rank them by, and each one's own cosine
    distance (what the channel reports as its score)."""
    best: dict[Key, float] = {}
    for distance, key in found:
        best[key] = min(distance, best.get(key, distance))
    gaps = lifts(conn, ns, query, query_vec)
    if not gaps:
        return found, best
    ids = groups(conn, ns).ids
    lang_of: dict[int, str] = {}
    for lang in gaps:
        members = ids[lang] if allowed is None else [i for i in ids[lang] if i in allowed]
        lang_of.update(dict.fromkeys(members, lang))
        for distance, key in nearest(members) if members else []:
            best[key] = min(distance, best.get(key, distance))
    out = []
    for key, distance in best.items():
        lang = lang_of.get(key[1]) if key[0] == "m" else None
        out.append((distance - gaps[lang] if lang else distance, key))
    return out, best
