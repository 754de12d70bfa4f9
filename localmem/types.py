"""The types that cross stages: search hits, answers and their citations, and who speaks.

Every stage returns these, and none imports another stage for a type: search makes
:class:`Hit`, answers are :class:`Answer` with :class:`Citation`, and the checks of who a
question is about read :class:`Speakers`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Mapping, Sequence

from .prompts.answer import VERSION as ANSWER_PROMPT_VERSION


class Record:
    """Base of the reports the facade returns (dataclasses, equal when their fields are): its
    fields, in order, are the keys of :meth:`to_dict`, the JSON that ``--json`` and the MCP
    tools print. A field whose metadata says ``omit_none`` is left out while it is ``None``."""

    def to_dict(self) -> dict[str, Any]:
        """The record as the JSON object the CLI and MCP print (a fresh dict, shallow)."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)  # type: ignore[arg-type]
            if not (f.metadata.get("omit_none") and getattr(self, f.name) is None)
        }


OMIT_NONE = {"omit_none": True}  # field(metadata=OMIT_NONE): left out of to_dict() while None


@dataclass
class HitSource:
    message_id: int
    external_id: str
    conversation: str
    session: str
    speaker: str
    sent_at: str | None


@dataclass
class Hit:
    """One search result: a message (``m:<id>``) or a unit (``u:<id>``)."""

    id: str
    kind: str
    text: str
    score: float
    channels: dict[str, dict[str, float]]
    time: str | None
    sources: list[HitSource] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)  # ids of near-duplicate units folded into this hit
    superseded_by: str | None = None  # a newer unit that replaces this one (both are returned)
    supersedes: list[str] = field(default_factory=list)  # older units this one replaces

    def to_dict(self) -> dict[str, Any]:
        """As JSON: every message and unit named by its printed id (``m:12``, ``u:45``)."""
        out = asdict(self)
        out["sources"] = [{"id": f"m:{s.pop('message_id')}", **s} for s in out["sources"]]
        return out


@dataclass
class Citation:
    """A stored message an answer rests on."""

    message_id: int
    external_id: str
    conversation: str
    speaker: str
    time: str | None
    text: str


@dataclass
class Answer:
    """What :meth:`Memory.ask` returns."""

    question: str
    answer: str
    refused: bool
    confidence: float | None
    citations: list[Citation]
    evidence: list[Hit]  # as numbered in the prompt: time order
    supports: list[int]  # the valid item numbers the model named (1-based)
    mode: str = "fast"
    today: str | None = None
    timings: dict[str, float] = field(default_factory=dict)  # seconds: search, answer, total
    tokens: dict[str, int] = field(default_factory=dict)  # prompt, completion (LLM calls)
    calls: int = 0
    error: str | None = None  # the model's reply stayed invalid after the repair retry
    # why: "model" (it said so), "no evidence", "invalid reply", "someone else", "no citation"
    refusal: str | None = None
    unsupported: str | None = None  # what the model answered without citing a valid item (not given)
    prompt_version: str = ANSWER_PROMPT_VERSION
    steps: list[dict[str, Any]] = field(default_factory=list)  # agentic mode: each tool call
    # How the answer was worked out beyond the model's reply: "dates" (a date question counted
    # by rules: the events, the arithmetic, the model's own answer).
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """As JSON: cited messages and evidence named by their printed ids (``m:12``, ``u:45``)."""
        out = asdict(self)
        out["citations"] = [{"id": f"m:{c.pop('message_id')}", **c} for c in out["citations"]]
        out["evidence"] = [hit.to_dict() for hit in self.evidence]
        return out


@dataclass(frozen=True)
class AddedMessage:
    """A message :meth:`Memory.add` or :meth:`Memory.correct` stored (``added`` False: it was
    already stored); ``replaces``: the message a correction replaces."""

    id: int
    external_id: str
    conversation: str
    added: bool
    replaces: int | None = None

    @property
    def ref(self) -> str:
        """Its printed id, ``m:<id>``."""
        return f"m:{self.id}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.ref,
            "external_id": self.external_id,
            "conversation": self.conversation,
            "added": self.added,
            "replaces": f"m:{self.replaces}" if self.replaces is not None else None,
        }


Names = Mapping[str, Sequence[str]]  # a speaker -> the names they go by, their own first


class Speakers(dict):
    """The speakers of a namespace and the names they go by (a :data:`Names`); in a chat
    between a user and an assistant (messages with the roles ``user`` and ``assistant``, as in
    ChatGPT, Claude and chat JSON exports), also which speaker is which: there a question in the
    first person ("where do I work?") is about the user, and one asking what "you" said or
    suggested is about the assistant."""

    def __init__(self, names: Names, user: str | None = None, assistant: str | None = None) -> None:
        super().__init__({speaker: list(n) for speaker, n in names.items()})
        self.user = user if user in self else None
        self.assistant = assistant if assistant in self else None

    @property
    def chat(self) -> bool:
        """Whether this is a user–assistant chat."""
        return self.user is not None and self.assistant is not None
