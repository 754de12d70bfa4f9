"""Stage 7, index: the text a message or unit is embedded as, and batched embedding."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..models.protocols import Embedder


def message_text(speaker: str, text: str, attachments: list[dict[str, Any]] | None) -> str:
    """What a raw message is embedded as: who said it, what, and what any image showed."""
    captions = [a["caption"] for a in attachments or () if a.get("caption")]
    body = f"{speaker}: {text}" if speaker else text
    if captions:
        body += " [image: " + "; ".join(captions) + "]"
    return body


def embed_batched(embedder: Embedder, texts: Sequence[str], batch: int,
                  on_batch: Callable[[int], None] | None = None) -> np.ndarray:
    """Embed ``texts`` in batches of similar length (less padding), keeping input order."""
    out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    for start in range(0, len(order), batch):
        idx = order[start:start + batch]
        out[idx] = embedder.embed([texts[i] for i in idx])
        if on_batch:
            on_batch(len(idx))
    return out


def to_blob(vector: np.ndarray) -> bytes:
    """sqlite-vec's float32 wire format."""
    return np.asarray(vector, dtype=np.float32).tobytes()


def unit_text(text: str, occurred: str | None) -> str:
    """What a derived unit is embedded as: its text, with when it happened (embedding only)."""
    if occurred:
        return f"{text} (happened on {occurred[:10]})"
    return text
