"""The reranking role: an optional cross-encoder that rescores fused search hits.

A cross-encoder reads the query and one passage together and returns how
relevant the passage is — sharper than comparing two independent embeddings,
but too slow to run over a whole store, so it only reorders the top hits that
fusion already picked.

No installable package ships cross-encoder weights, so localmem has no default
reranker: the user exports one to ONNX (for example
``cross-encoder/ms-marco-MiniLM-L-6-v2``) and points localmem at the ``.onnx``
file and its ``tokenizer.json`` by path (see
:class:`~localmem.backends.onnx_rerank.OnnxCrossEncoder`). With none
configured, the fusion order stands unchanged.
"""

from __future__ import annotations

import datetime as dt
from typing import Sequence

import numpy as np

from ..models.protocols import Reranker
from ..text.times import MONTH_NAMES


def date_prefixed(text: str, when: str | None) -> str:
    """``text`` prefixed with its date, e.g. ``[Date: May 08, 2023 (2023-05-08)] text``.

    ``when`` is an ISO date or datetime; only its first 10 characters are used.
    Without a parseable date the text is returned unchanged.
    """
    if not when:
        return text
    try:
        day = dt.date.fromisoformat(when[:10])
    except ValueError:
        return text
    # The cross-encoder sees the date as words and digits both, so a query
    # phrased either way ("in May 2023", "2023-05-08") can match it.
    return f"[Date: {MONTH_NAMES[day.month - 1]} {day.day:02d}, {day.year} ({day.isoformat()})] {text}"


def rerank_order(
    reranker: Reranker, query: str, items: Sequence[tuple[str, str | None]], batch: int = 16
) -> list[tuple[int, float]]:
    """Rescore ``items`` (text, ISO time or None) and return ``(index, score)``, best first.

    Passages are date-prefixed and scored in batches of ``batch`` (bounding the
    padded tensor size); equal scores keep their original (fusion) order.
    """
    if batch < 1:
        raise ValueError(f"batch must be at least 1, got {batch}")
    passages = [date_prefixed(text, when) for text, when in items]
    scores = np.zeros(len(passages), dtype=np.float32)
    for start in range(0, len(passages), batch):
        chunk = passages[start : start + batch]
        scores[start : start + len(chunk)] = np.asarray(reranker.score(query, chunk), dtype=np.float32)
    # sorted() is stable, so ties stay in the order fusion gave them.
    order = sorted(range(len(passages)), key=lambda i: -float(scores[i]))
    return [(i, float(scores[i])) for i in order]
