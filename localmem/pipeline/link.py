"""Stage 5, link: typed, weighted edges between units (TEMPR, REMem).

- ``next``: an episode to the one after it in its conversation (weight 1).
- ``temporal``: gists/facts whose times lie within ``window_days``, weight
  ``max(0.3, 1 - Δ/window)``, at most ``temporal_limit`` per unit.
- ``semantic``: gists/facts with cosine similarity above ``semantic_threshold``.
- ``synonymy``: gists above ``synonymy_threshold`` (REMem; 0.8 is NV-Embed's value,
  MiniLM's similarities run lower, so the default here is recalibrated).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np

from ..retrieval import vector_index
from ..store.engine import Store, now_iso


@dataclass(frozen=True)
class LinkConfig:
    window_days: float = 7.0
    temporal_limit: int = 10
    semantic_threshold: float = 0.7
    synonymy_threshold: float = 0.8
    neighbours: int = 10


def _add(conn: Store, src: int, dst: int, kind: str, weight: float, counts: dict[str, int]) -> None:
    conn.run(
        "link_insert",
        {
            "src_id": src,
            "dst_id": dst,
            "type": kind,
            "weight": round(weight, 4),
            "valid_at": None,
            "created_at": now_iso(),
        },
    )
    counts[kind] = counts.get(kind, 0) + 1


def link_episode(
    conn: Store,
    ns: str,
    episode_id: int,
    conversation: str,
    units: list[tuple[int, str, str | None, np.ndarray]],
    cfg: LinkConfig,
) -> dict[str, int]:
    """Link a freshly extracted episode and its ``units`` ``(id, kind, occurred_start, vector)``.

    Runs inside the caller's transaction, after the units' vectors are stored.
    """
    counts: dict[str, int] = {}
    prev = conn.run("previous_episode", {"ns": ns, "conversation": conversation, "id": episode_id}).fetchone()
    if prev:
        _add(conn, prev[0], episode_id, "next", 1.0, counts)
    for unit_id, kind, occurred, vector in units:
        if occurred:
            for other, when in conn.run(
                "units_near_in_time",
                {"ns": ns, "id": unit_id, "at": occurred, "days": cfg.window_days, "limit": cfg.temporal_limit},
            ):
                delta = abs((dt.date.fromisoformat(when[:10]) - dt.date.fromisoformat(occurred[:10])).days)
                _add(conn, unit_id, other, "temporal", max(0.3, 1 - delta / cfg.window_days), counts)
        for other, distance in vector_index.knn(conn, "units", ns, vector, cfg.neighbours + 1, kind=kind):
            similarity = 1.0 - distance
            if other == unit_id:
                continue
            if kind == "gist" and similarity >= cfg.synonymy_threshold:
                _add(conn, unit_id, other, "synonymy", similarity, counts)
            elif similarity >= cfg.semantic_threshold:
                _add(conn, unit_id, other, "semantic", similarity, counts)
    return counts
