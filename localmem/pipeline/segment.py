"""Stage 2, segment: cut each conversation's unassigned messages into episodes (Nemori).

Sessions (and time gaps longer than ``gap_hours``) are hard boundaries. Inside,
a detector labels a whole window in one call; a boundary counts when its
confidence is at least ``threshold`` (σ = 0.7); a buffer reaching ``cap`` (β = 25)
messages is cut. The buffer is the set of messages not yet in an episode, read from
the store, so streaming (``Memory.add`` then ``flush``) and batch ingest make the same
calls on the same windows and produce the same episodes.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

import numpy as np

from ..models.embedding import message_text
from ..models.protocols import LLM
from ..models.structured import complete_structured
from ..prompts import segment as prompt
from ..store.engine import Store, now_iso
from ..store.rows import one_value

DEFAULT_CAP = 25
DEFAULT_THRESHOLD = 0.7
DEFAULT_GAP_HOURS = 4.0
# Episodes closed in one transaction (a batch holds the write lock for milliseconds).
EPISODES_PER_COMMIT = 200
MIN_WINDOW = 4  # windows this short are one episode; no call needed


@dataclass(frozen=True)
class PendingMessage:
    id: int
    session: str
    seq: int
    speaker: str
    text: str
    sent_at: str | None
    attachments: list | None

    @property
    def line(self) -> str:
        return message_text(self.speaker, self.text, self.attachments)


class Detector(Protocol):
    """Returns the indexes (1..len-1) of messages that start a new episode in ``window``."""

    def __call__(self, window: Sequence[PendingMessage]) -> list[int]: ...


@dataclass
class SegmentStats:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failures: int = 0


class LLMDetector:
    """Boundary labelling with the local LLM; invalid output after repair means no boundary."""

    def __init__(self, llm: LLM, threshold: float = DEFAULT_THRESHOLD, log: Callable[..., None] | None = None) -> None:
        self.llm, self.threshold, self.log = llm, threshold, log
        self.stats = SegmentStats()

    def __call__(self, window: Sequence[PendingMessage]) -> list[int]:
        if len(window) < MIN_WINDOW:
            return []
        result = complete_structured(
            self.llm, prompt.render([m.line for m in window]), prompt.SCHEMA, prompt.MAX_TOKENS
        )
        self.stats.calls += result.calls
        self.stats.prompt_tokens += result.prompt_tokens
        self.stats.completion_tokens += result.completion_tokens
        if self.log:
            self.log(stage="segment", prompt_version=prompt.VERSION, result=result)
        if result.data is None:
            self.stats.failures += 1
            return []
        return sorted(
            {
                b["index"]
                for b in result.data["boundaries"]
                if _confidence(b["confidence"]) >= self.threshold and 0 < b["index"] < len(window)
            }
        )


def _confidence(value: float) -> float:
    """Models sometimes answer in percent (85 for 0.85)."""
    return value / 100 if 1 < value <= 100 else value


class EmbeddingDetector:
    """No LLM: a boundary where the messages before and after are least alike.

    ``vectors(window)`` gives the messages' unit vectors (the stored ones, so no
    re-embedding). A boundary is a local minimum of the similarity between the mean
    of the ``span`` messages before and after it that lies ``drop`` standard deviations
    below the window's mean similarity, at least ``span`` messages from the last one.
    Approximate by design: it finds clear topic shifts, not subtle ones.
    """

    def __init__(
        self, vectors: Callable[[Sequence[PendingMessage]], np.ndarray], drop: float = 1.0, span: int = 3
    ) -> None:
        self.vectors, self.drop, self.span = vectors, drop, span

    def __call__(self, window: Sequence[PendingMessage]) -> list[int]:
        if len(window) < 2 * self.span + 2:
            return []
        vecs = self.vectors(window)
        scores: dict[int, float] = {}
        for i in range(self.span, len(window) - self.span + 1):
            before = vecs[i - self.span : i].mean(axis=0)
            after = vecs[i : i + self.span].mean(axis=0)
            scores[i] = float(before @ after / (np.linalg.norm(before) * np.linalg.norm(after) + 1e-9))
        values = np.array(list(scores.values()))
        cut = float(values.mean() - self.drop * values.std())
        bounds: list[int] = []
        for i, score in scores.items():
            local_min = score <= scores.get(i - 1, 1.0) and score <= scores.get(i + 1, 1.0)
            if score < cut and local_min and (not bounds or i - bounds[-1] >= self.span):
                bounds.append(i)
        return bounds


def stored_vectors(conn: Store, dim: int) -> Callable[[Sequence[PendingMessage]], np.ndarray]:
    """The messages' vectors as stored at ingest (zeros for any without one)."""

    def lookup(window: Sequence[PendingMessage]) -> np.ndarray:
        out = np.zeros((len(window), dim), dtype=np.float32)
        # one statement for the window (a round trip each costs on a server store)
        found = dict(conn.run("message_vectors_of", {"ids": json.dumps([msg.id for msg in window])}))
        for row, msg in enumerate(window):
            if msg.id in found:
                out[row] = np.frombuffer(found[msg.id], dtype=np.float32)
        return out

    return lookup


def _hard_break(prev: PendingMessage, cur: PendingMessage, gap_hours: float) -> bool:
    if prev.session != cur.session:
        return True
    if prev.sent_at and cur.sent_at:
        try:
            gap = dt.datetime.fromisoformat(cur.sent_at) - dt.datetime.fromisoformat(prev.sent_at)
        except (ValueError, TypeError):
            return False
        return gap.total_seconds() > gap_hours * 3600
    return False


def _split(window: list[PendingMessage], bounds: list[int]) -> list[list[PendingMessage]]:
    cuts = [0, *bounds, len(window)]
    return [window[a:b] for a, b in zip(cuts, cuts[1:]) if b > a]


def plan(
    messages: Sequence[PendingMessage],
    detect: Detector,
    *,
    final: bool,
    cap: int = DEFAULT_CAP,
    gap_hours: float = DEFAULT_GAP_HOURS,
) -> list[list[PendingMessage]]:
    """The episodes to close among ``messages`` (the unassigned ones, in order).

    Unless ``final``, the messages after the last boundary stay open (the buffer).
    """
    closed: list[list[PendingMessage]] = []
    buffer: list[PendingMessage] = []
    for msg in messages:
        if buffer and _hard_break(buffer[-1], msg, gap_hours):
            closed += _split(buffer, detect(buffer))
            buffer = []
        buffer.append(msg)
        if len(buffer) >= cap:
            bounds = detect(buffer)
            if bounds:
                parts = _split(buffer, bounds)
                closed += parts[:-1]
                buffer = parts[-1]
            else:
                closed.append(buffer)
                buffer = []
    if final and buffer:
        closed += _split(buffer, detect(buffer))
    return closed


def segment_namespace(
    conn: Store,
    ns: str,
    detect: Detector,
    *,
    final: bool,
    cap: int = DEFAULT_CAP,
    gap_hours: float = DEFAULT_GAP_HOURS,
    conversations: Sequence[str] | None = None,
) -> list[int]:
    """Close episodes in every (or the given) conversation; returns the new episode ids."""
    created: list[int] = []
    convs = conversations or [row[0] for row in conn.run("pending_conversations", {"ns": ns})]
    for conv in convs:
        pending = [
            PendingMessage(i, s, seq, sp, t, at, json.loads(a) if a else None)
            for i, s, seq, sp, t, at, a in conn.run("pending_messages", {"ns": ns, "conversation": conv})
        ]
        episodes = plan(pending, detect, final=final, cap=cap, gap_hours=gap_hours)
        # Several episodes a transaction: a commit waits for the disk, and one per episode
        # was most of a 100,000-message ingest's time beyond embedding (docs/speed.md).
        for start in range(0, len(episodes), EPISODES_PER_COMMIT):
            with conn:
                for episode in episodes[start : start + EPISODES_PER_COMMIT]:
                    # The messages were read before this transaction: a forget or another
                    # segmenter may have taken one since. The episode is then left to the next pass.
                    ids = json.dumps([m.id for m in episode])
                    still = conn.run("pending_still", {"ids": ids}).fetchone()
                    if still is None or still[0] != len(episode):
                        continue
                    created.append(_store_episode(conn, ns, conv, episode))
    return created


def _store_episode(conn: Store, ns: str, conv: str, msgs: list[PendingMessage]) -> int:
    times = [m.sent_at for m in msgs if m.sent_at]
    episode_id = one_value(
        conn.run(
            "episode_insert",
            {
                "ns": ns,
                "conversation": conv,
                "start": min(times) if times else None,
                "end": max(times) if times else None,
                "data": json.dumps({"session": msgs[0].session, "messages": len(msgs)}),
                "created_at": now_iso(),
            },
        )
    )
    for m in msgs:
        conn.run("unit_source_insert", {"unit_id": episode_id, "message_id": m.id})
    return episode_id
