"""Long messages are read, not truncated: the sentences of a long message that match the
question, with their neighbours.

Real assistant histories have turns of 2,000 to 5,000 characters. Whole, one of them fills the
default evidence budget; cut at the budget, the sentence that answers may be gone. A message
longer than ``long_tokens`` (``Config.ask_long_tokens``) is shown instead as the sentences
whose vectors (its ``message_parts``, embedded at ingest) are nearest the question, each with
the sentence before and after it, joined by "…", still under the message's date and speaker. Messages without
part vectors (a store made before they existed) stay whole.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Callable, Sequence

import numpy as np

from ..store.engine import Store
from ..text.sentences import spans as sentence_spans
from ..types import Hit, caption_text

NEIGHBOURS = 1  # sentences kept on each side of a matching one
CLOSE = 0.05  # other sentences within this cosine of the best one are kept too
MAX_MATCHES = 3


def shorten(
    conn: Store,
    hits: Sequence[Hit],
    query_vec: np.ndarray | None,
    count: Callable[[str], int],
    long_tokens: int,
    neighbours: int = NEIGHBOURS,
    matches: int = MAX_MATCHES,
) -> list[Hit]:
    """``hits`` with each long message replaced by its excerpt (see the module docstring):
    its ``matches`` best sentences, each with ``neighbours`` sentences on each side."""
    if query_vec is None:
        return list(hits)
    long = {int(h.id[2:]): h for h in hits if h.kind == "message" and count(h.text) > long_tokens}
    if not long:
        return list(hits)
    parts: dict[int, list[tuple[int, int, float]]] = {}
    for message_id, start, end, code in conn.run("parts_with_codes", {"ids": json.dumps(list(long))}):
        vec = np.frombuffer(code, dtype=np.int8).astype(np.float32)
        norm = float(np.linalg.norm(vec)) or 1.0
        parts.setdefault(message_id, []).append((start, end, float(vec @ query_vec) / norm))
    out = []
    for hit in hits:
        message_id = int(hit.id[2:]) if hit.kind == "message" else None
        if message_id in long and parts.get(message_id):
            hit = excerpted(hit, parts[message_id], neighbours, matches)
        out.append(hit)
    return out


def excerpted(
    hit: Hit, parts: Sequence[tuple[int, int, float]], neighbours: int = NEIGHBOURS, matches: int = MAX_MATCHES
) -> Hit:
    """A message hit shown as its excerpt (:func:`excerpt`): what it said cut to the excerpt,
    its captions kept while the excerpt reaches them (they follow its last sentence)."""
    if hit.said is None:
        return hit
    shown = _excerpt(hit.words, parts, neighbours, matches)
    if shown is None:
        return hit
    said, captions = shown, []
    for n in range(len(hit.captions), 0, -1):
        tail = caption_text(hit.captions[-n:])
        if shown.endswith(tail):
            said, captions = shown[: -len(tail)], hit.captions[-n:]
            break
    return replace(hit, text=f"{hit.speaker}: {shown}", said=said, captions=captions)


def excerpt(hit: Hit, parts: Sequence[tuple[int, int, float]]) -> str:
    """The excerpt of a message hit whose sentence parts score ``(start, end, cosine)``: the
    best-matching parts and those close to it, each with its neighbours (its text, whole when
    there is nothing to cut)."""
    return excerpted(hit, parts).text


def _excerpt(
    body: str, parts: Sequence[tuple[int, int, float]], neighbours: int = NEIGHBOURS, matches: int = MAX_MATCHES
) -> str | None:
    """The excerpt of ``body`` (what a message shows after its speaker); ``None``: keep it whole."""
    spans = sentence_spans(body)
    if len(spans) < 2:
        return None
    best = max(score for _s, _e, score in parts)
    chosen = sorted(parts, key=lambda p: -p[2])[:matches]
    keep: set[int] = set()
    for start, _end, score in chosen:
        if score < best - CLOSE:
            continue
        index = next((i for i, (s, e) in enumerate(spans) if s <= start < e), None)
        if index is None:
            continue
        keep.update(range(max(0, index - neighbours), min(len(spans), index + neighbours + 1)))
    if not keep:
        return None
    pieces, previous = [], None
    for index in sorted(keep):
        if previous is None and index > 0 or previous is not None and index != previous + 1:
            pieces.append("…")
        pieces.append(body[spans[index][0] : spans[index][1]])
        previous = index
    if previous is not None and previous < len(spans) - 1:
        pieces.append("…")
    return " ".join(pieces)
