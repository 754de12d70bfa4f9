"""The text a message or unit is embedded as, and batched embedding (messages with their parts).

Used when messages are stored, re-embedded and imported; a message's parts are its long
sentences (:func:`localmem.text.sentences.sentence_spans`), each embedded on its own, and the
message embedded with the turn before it (:func:`context_text`)."""

from __future__ import annotations

import json
from typing import Any, Callable, Sequence

import numpy as np

from ..config import DEFAULTS
from ..text.sentences import sentence_spans
from .protocols import Embedder, EmbedRole


def message_text(speaker: str, text: str, attachments: list[dict[str, Any]] | None) -> str:
    """What a raw message is embedded as: who said it, what, and what any image showed."""
    captions = [a["caption"] for a in attachments or () if a.get("caption")]
    body = f"{speaker}: {text}" if speaker else text
    if captions:
        body += " [image: " + "; ".join(captions) + "]"
    return body


def embed_batched(
    embedder: Embedder,
    texts: Sequence[str],
    batch: int,
    on_batch: Callable[[int], None] | None = None,
    role: EmbedRole = "passage",
) -> np.ndarray:
    """Embed ``texts`` in batches of similar length (less padding), keeping input order;
    ``role``: "query" when the texts are questions (see :class:`~.protocols.Embedder`)."""
    out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    for start in range(0, len(order), batch):
        idx = order[start : start + batch]
        chunk = [texts[i] for i in idx]
        # The role is passed only for queries: an embedder written to the protocol before roles
        # existed still stores passages.
        out[idx] = embedder.embed(chunk, role=role) if role == "query" else embedder.embed(chunk)
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


# A message's parts: (start, end, vector, context). Its sentence spans (context False), and the
# whole message embedded after the turn before it (context True, start 0, end its length).
Parts = list[tuple[int, int, np.ndarray, bool]]


def context_text(before: str, message: str) -> str:
    """What a message is embedded as in context: the turn before it (as :func:`message_text`
    gives it), then the message. A reply ("Scout", "Yes, last Tuesday!") says little on its
    own; the question it answers says what it is about, and a question about it is near both."""
    return f"{before}\n{message}"


def framing(before: str | None, mode: str) -> str | None:
    """``before`` (the turn before a message) when setting ``context_parts`` = ``mode`` gives
    the message a context part: "all", "questions" (the turn asks something: it has a "?"),
    "none"; else ``None``."""
    if before is None or mode == "none" or (mode == "questions" and "?" not in before):
        return None
    return before


def embed_messages(
    embedder: Embedder,
    messages: Sequence[tuple[str, str, Any]],
    batch: int,
    on_batch: Callable[[int], None] | None = None,
    before: Sequence[str | None] | None = None,
    context: str = DEFAULTS.context_parts,
) -> tuple[np.ndarray, list[Parts]]:
    """Vectors for ``(speaker, text, attachments)`` messages, and for each message its parts
    (:func:`~localmem.text.sentences.sentence_spans`), all embedded in one batched pass.
    ``before``: for each message, the turn before it in its session as :func:`message_text`
    gives it (``None``: none); a message with one gets a context part (:func:`context_text`)
    when ``context`` (setting ``context_parts``) gives it one (:func:`framing`)."""
    spans = [sentence_spans(text) for _, text, _ in messages]
    texts = [message_text(speaker, text, attachments) for speaker, text, attachments in messages]
    texts += [
        message_text(speaker, text[a:b], None) for (speaker, text, _), its in zip(messages, spans) for a, b in its
    ]
    # Messages with no text (an image alone) have no span to give the part.
    before = [framing(prev, context) for prev in before or ()]
    framed = [i for i, prev in enumerate(before) if prev and messages[i][1]]
    texts += [context_text(str(before[i]), texts[i]) for i in framed]
    vectors = embed_batched(embedder, texts, batch, on_batch)
    parts: list[Parts] = []
    at = len(messages)
    for its in spans:
        parts.append([(a, b, vectors[at + i], False) for i, (a, b) in enumerate(its)])
        at += len(its)
    for i in framed:
        parts[i].append((0, len(messages[i][1]), vectors[at], True))
        at += 1
    return vectors[: len(messages)], parts


def turn_text(speaker: str | None, text: str | None, attachments: str | None) -> str | None:
    """A stored turn (its ``attachments`` as JSON text) as :func:`message_text` gives it;
    ``None`` when there is none (``speaker`` NULL)."""
    if speaker is None or text is None:
        return None
    return message_text(speaker, text, json.loads(attachments) if attachments else None)


def embed_stored(
    embedder: Embedder,
    messages: Sequence[tuple],
    units: Sequence[tuple],
    batch: int,
    on_batch: Callable[[int], None] | None = None,
    context: str = DEFAULTS.context_parts,
) -> tuple[np.ndarray, list[Parts], np.ndarray]:
    """Vectors for stored rows: messages ``(id, ns, speaker, text, attachments, and the
    speaker, text and attachments of the turn before it, or NULLs)`` (with their parts) and
    units ``(id, ns, kind, text, occurred_start)``, as the ``*_for_reembed`` queries return them;
    ``context``: as in :func:`embed_messages`."""
    m_vecs, parts = embed_messages(
        embedder,
        [(row[2], row[3], json.loads(row[4]) if row[4] else None) for row in messages],
        batch,
        on_batch,
        before=[turn_text(*row[5:8]) for row in messages],
        context=context,
    )
    u_vecs = embed_batched(embedder, [unit_text(t, when) for _, _, _, t, when in units], batch, on_batch)
    return m_vecs, parts, u_vecs
