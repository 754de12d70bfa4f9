"""Search channels over the built memory: graph spreading activation, temporal range, entity/cue.

Each returns ``[(key, score)]`` best first, keys as in :mod:`localmem.search` (``("u", id)`` or
``("m", id)``). The graph walk runs inside SQLite as one recursive CTE (``graph_walk``);
the others are a query or two plus a dot product over the candidates' stored vectors.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..store.engine import Store
from ..store.rows import one_value
from ..text.names import normalise
from . import vector_index
from .query_time import Range

Key = tuple[str, int]


@dataclass(frozen=True)
class GraphParams:
    """TEMPR's spreading activation: entry points with similarity ≥ ``min_entry``,
    activation × weight × ``decay`` per hop, edges ≥ ``min_weight``, stop below
    ``min_activation``, at most ``depth`` hops and ``max_rows`` queue rows."""

    min_entry: float = 0.5
    decay: float = 0.8
    min_weight: float = 0.1
    min_activation: float = 0.1
    depth: int = 3
    max_rows: int = 2000
    entry_points: int = 10


def graph(
    conn: Store, ns: str, seeds: Sequence[tuple[Key, float]], budget: int, params: GraphParams = GraphParams()
) -> list[tuple[Key, float]]:
    """Units reached from the best unit hits of the vector channel (``seeds``: key, cosine)."""
    entry = [[key[1], round(sim, 4)] for key, sim in seeds if key[0] == "u" and sim >= params.min_entry][
        : params.entry_points
    ]
    if not entry:
        return []
    rows = conn.run(
        "graph_walk",
        {
            "ns": ns,
            "seeds": json.dumps(entry),
            "decay": params.decay,
            "min_weight": params.min_weight,
            "min_activation": params.min_activation,
            "depth": params.depth,
            "max_rows": params.max_rows,
            "budget": budget,
        },
    )
    return [(("u", node), float(act)) for node, act in rows]


def _similarities(conn: Store, keys: Sequence[Key], query_vec: np.ndarray) -> dict[Key, float]:
    """Cosine similarity of each key's stored vector to the query (vectors are unit length);
    one statement per table, the ids passed as a JSON array."""
    out: dict[Key, float] = {}
    for prefix, name in (("u", "unit_vectors_of"), ("m", "message_vectors_of")):
        ids = [key[1] for key in keys if key[0] == prefix]
        if ids:
            for row_id, blob in conn.run(name, {"ids": json.dumps(ids)}):
                out[(prefix, int(row_id))] = float(np.frombuffer(blob, dtype=np.float32) @ query_vec)
    return out


def temporal(
    conn: Store,
    ns: str,
    when: Range,
    query_vec: np.ndarray,
    budget: int,
    min_similarity: float = 0.0,
    decay: float = 0.8,
    spread_floor: float = 0.32,
    candidates: int = 500,
    shortlist: int = 100,
) -> list[tuple[Key, float]]:
    """Units and messages in the range with similarity ≥ ``min_similarity``, most similar
    first, spread one hop over temporal links (score × link weight × ``decay``, kept from
    ``spread_floor``).

    No similarity floor by default: the time a question names is evidence by itself, so a
    message said then that matches the words weakly is likelier the one asked about than one
    said at another time; the channel is one ranking among those fused and keeps its best
    ``budget`` (docs/decisions.md#session-weight)."""
    bounds = {"ns": ns, "start": when.start.isoformat(), "end": when.end.isoformat(), "limit": candidates}
    units = [r[0] for r in conn.run("units_in_range", bounds)]
    messages = [r[0] for r in conn.run("messages_in_range", bounds)]
    # On large namespaces only the candidates whose binary codes are closest get their
    # vectors read (a vec0 point lookup each); small ones read them all.
    keys: list[Key] = [("u", i) for i in vector_index.shortlist(conn, "units", ns, query_vec, units, shortlist)]
    keys += [("m", i) for i in vector_index.shortlist(conn, "messages", ns, query_vec, messages, shortlist)]
    sims = _similarities(conn, keys, query_vec)
    scored = {key: s for key, s in sims.items() if s >= min_similarity}
    in_range = {key[1]: score for key, score in scored.items() if key[0] == "u"}
    if in_range:
        for src, dst, weight in conn.run("temporal_neighbours", {"ids": json.dumps(list(in_range))}):
            spread = in_range[src] * float(weight) * decay
            key = ("u", dst)
            if spread >= spread_floor and spread > scored.get(key, 0.0):
                scored[key] = spread
    return sorted(scored.items(), key=lambda kv: -kv[1])[:budget]


_NAME_WORD = re.compile(r"[\w']+")


def query_names(query: str, max_words: int = 3) -> list[str]:
    """Every 1..``max_words``-word span of the query, normalised like entity names."""
    words = _NAME_WORD.findall(query.replace("’", "'"))
    spans = {normalise(" ".join(words[i : i + n])) for n in range(1, max_words + 1) for i in range(len(words) - n + 1)}
    spans |= {s.removesuffix("'s") for s in spans if s.endswith("'s")}
    return sorted(s for s in spans if s)


# An entity named in a query contributes at most this many of its most recent mentions: a
# speaker of a year of chats is in nearly every unit, and ranking all of them costs time for
# an order (recency) that the cap keeps anyway.
ENTITY_MENTIONS = 500


def entity(conn: Store, ns: str, query: str, budget: int) -> list[tuple[Key, float]]:
    """Units mentioning the entities the query names (alias-aware), weighted so that rare
    entities count more; a mention whose cue tag shares a word with the query counts double."""
    weights: dict[str, float] = {}
    for entity_id, _alias, weight in conn.run("entities_named", {"ns": ns, "names": json.dumps(query_names(query))}):
        weights[str(entity_id)] = max(weights.get(str(entity_id), 0.0), float(weight))
    if not weights:
        return []
    words = sorted({w.lower() for w in re.findall(r"\w+", query) if len(w) > 2})
    rows = conn.run(
        "units_of_entities",
        {"weights": json.dumps(weights), "words": json.dumps(words), "limit": budget, "per_entity": ENTITY_MENTIONS},
    )
    return [(("u", unit), float(score)) for unit, score in rows]


def query_entities(conn: Store, ns: str, query: str) -> list[int]:
    """The ids of the entities the query names (alias-aware)."""
    return sorted({row[0] for row in conn.run("entities_named", {"ns": ns, "names": json.dumps(query_names(query))})})


def episode_members(
    conn: Store, ns: str, query: str, query_vec: np.ndarray, when: Range | None, episodes: int = 3
) -> set[Key]:
    """CAST's episodic side: the ``episodes`` nearest episodes that fit the query's people and
    time, and everything they hold (their units and messages). Empty when the query names
    neither a time nor anyone who appears in fewer than half of the episodes."""
    # Only what narrows the episodes down counts: in a two-person chat the speakers are in all.
    named = query_entities(conn, ns, query)
    entities = (
        [e for e, share in conn.run("entity_episode_shares", {"ns": ns, "ids": json.dumps(named)}) if share < 0.5]
        if named
        else []
    )
    if not entities and when is None:
        return set()
    bounds = {"start": when.start.isoformat(), "end": when.end.isoformat()} if when else {"start": None, "end": None}
    members: set[Key] = set()
    kept = 0
    for episode_id, _distance in vector_index.knn(conn, "units", ns, query_vec, episodes * 4, kind="episode"):
        fits = one_value(conn.run("episode_fits", {"id": episode_id, "entities": json.dumps(entities), **bounds}))
        if not fits:
            continue
        members |= {(kind, int(i)) for kind, i in conn.run("episode_members", {"id": episode_id})}
        kept += 1
        if kept == episodes:
            break
    return members


def promote(keys: Sequence[Key], members: set[Key]) -> list[Key]:
    """Stable promotion (CAST Algorithm 2): members first, each group in its original order;
    nothing is added or dropped."""
    return [k for k in keys if k in members] + [k for k in keys if k not in members]


def latest_time(conn: Store, ns: str) -> dt.date:
    """The default "now" of a namespace: its latest message time (today when it has none)."""
    row = conn.kept(("latest_message_time", ns), lambda: conn.run("latest_message_time", {"ns": ns}).fetchone())
    return dt.date.fromisoformat(row[0][:10]) if row and row[0] else dt.date.today()
