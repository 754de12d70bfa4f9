"""Writing vectors: a message's, its parts' and a unit's rows in the sqlite-vec tables.

Callers hold the transaction; the vectors come from :mod:`localmem.models.embedding`.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..models.embedding import Parts, to_blob
from .engine import Store
from .rows import one_value


def insert_parts(conn: Store, ns: str, message_id: int, parts: Parts) -> None:
    for start, end, vector, context in parts:
        part_id = one_value(
            conn.run(
                "part_insert",
                {"message_id": message_id, "ns": ns, "start": start, "end": end, "context": int(context)},
            )
        )
        conn.run("vec_part_insert", {"id": part_id, "ns": ns, "embedding": to_blob(vector)})


def store_vectors(
    conn: Store,
    messages: Sequence[tuple],
    m_vecs: np.ndarray,
    parts: Sequence[Parts],
    units: Sequence[tuple],
    u_vecs: np.ndarray,
) -> None:
    """Insert the vectors :func:`embed_stored` made, and the messages' parts (inside the
    caller's transaction; the messages must have no parts yet)."""
    for (mid, ns, *_), vec, its_parts in zip(messages, m_vecs, parts):
        conn.run("vec_message_insert", {"id": mid, "ns": ns, "embedding": to_blob(vec)})
        insert_parts(conn, ns, mid, its_parts)
    for (uid, ns, kind, *_), vec in zip(units, u_vecs):
        conn.run("vec_unit_insert", {"id": uid, "ns": ns, "kind": kind, "embedding": to_blob(vec)})
