"""The text a message or unit is embedded as, and batched embedding (messages with their parts).

Used when messages are stored, re-embedded and imported; a message's parts are its long
sentences (:func:`localmem.text.sentences.sentence_spans`), each embedded on its own."""

from __future__ import annotations

import json
from typing import Any, Callable, Sequence

import numpy as np

from ..text.sentences import sentence_spans
from .protocols import Embedder


def message_text(speaker: str, text: str, attachments: list[dict[str, Any]] | None) -> str:
    """What a raw message is embedded as: who said it, what, and what any image showed."""
    captions = [a["caption"] for a in attachments or () if a.get("caption")]
    body = f"{speaker}: {text}" if speaker else text
    if captions:
        body += " [image: " + "; ".join(captions) + "]"
    return body


def embed_batched(
    embedder: Embedder, texts: Sequence[str], batch: int, on_batch: Callable[[int], None] | None = None
) -> np.ndarray:
    """Embed ``texts`` in batches of similar length (less padding), keeping input order."""
    out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    for start in range(0, len(order), batch):
        idx = order[start : start + batch]
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


Parts = list[tuple[int, int, np.ndarray]]  # a message's sentence spans with their vectors


def embed_messages(
    embedder: Embedder,
    messages: Sequence[tuple[str, str, Any]],
    batch: int,
    on_batch: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, list[Parts]]:
    """Vectors for ``(speaker, text, attachments)`` messages, and for each message its parts
    (:func:`~localmem.text.sentences.sentence_spans`), all embedded in one batched pass."""
    spans = [sentence_spans(text) for _, text, _ in messages]
    texts = [message_text(speaker, text, attachments) for speaker, text, attachments in messages]
    texts += [
        message_text(speaker, text[a:b], None) for (speaker, text, _), its in zip(messages, spans) for a, b in its
    ]
    vectors = embed_batched(embedder, texts, batch, on_batch)
    parts: list[Parts] = []
    at = len(messages)
    for its in spans:
        parts.append([(a, b, vectors[at + i]) for i, (a, b) in enumerate(its)])
        at += len(its)
    return vectors[: len(messages)], parts


def embed_stored(
    embedder: Embedder,
    messages: Sequence[tuple],
    units: Sequence[tuple],
    batch: int,
    on_batch: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, list[Parts], np.ndarray]:
    """Vectors for stored rows: messages ``(id, ns, speaker, text, attachments)`` (with their
    parts) and units ``(id, ns, kind, text, occurred_start)``, as the ``*_for_reembed``
    queries return them."""
    m_vecs, parts = embed_messages(
        embedder, [(s, t, json.loads(a) if a else None) for _, _, s, t, a in messages], batch, on_batch
    )
    u_vecs = embed_batched(embedder, [unit_text(t, when) for _, _, _, t, when in units], batch, on_batch)
    return m_vecs, parts, u_vecs
