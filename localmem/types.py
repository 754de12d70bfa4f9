"""The types that cross stages: search hits, answers and their citations, and who speaks.

Every stage returns these, and none imports another stage for a type: search makes
:class:`Hit`, answers are :class:`Answer` with :class:`Citation`, and the checks of who a
question is about read :class:`Speakers`.
"""

from __future__ import annotations

import datetime as dt
import enum
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
    """One search result: a message (``m:<id>``) or a unit (``u:<id>``).

    ``text`` is the hit as shown (a message's is "Speaker: what was said [image: caption]");
    a message also carries those parts as fields, so nothing reads them back out of ``text``:
    ``speaker``, ``said`` (what was said: its text, or the excerpt of a long message the
    answer stage shows) and ``captions`` (what a captioner said its images show, not what the
    speaker said). ``day``: the date of ``time`` (``None`` when it has none)."""

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
    speaker: str | None = None
    said: str | None = None
    captions: list[str] = field(default_factory=list)
    day: dt.date | None = None

    def __post_init__(self) -> None:
        if self.day is None and self.time:
            try:
                self.day = dt.date.fromisoformat(self.time[:10])
            except ValueError:
                pass  # a time that is not a date has no day

    @classmethod
    def message(
        cls,
        id: str,
        speaker: str,
        said: str,
        time: str | None,
        sources: list[HitSource] | None = None,
        captions: Sequence[str] = (),
        score: float = 0.0,
    ) -> "Hit":
        """A message hit made from its parts (its ``text`` rendered from them)."""
        captions = list(captions)
        text = f"{speaker}: {said}{caption_text(captions)}"
        return cls(id, "message", text, score, {}, time, sources or [], speaker=speaker, said=said, captions=captions)

    @property
    def words(self) -> str:
        """What a message hit shows after its speaker (what was said, then its captions);
        a unit's text."""
        if self.kind == "message" and self.said is not None:
            return self.said + caption_text(self.captions)
        return self.text

    def to_dict(self) -> dict[str, Any]:
        """As JSON: every message and unit named by its printed id (``m:12``, ``u:45``)."""
        out = asdict(self)
        out["sources"] = [{"id": f"m:{s.pop('message_id')}", **s} for s in out["sources"]]
        out["day"] = self.day.isoformat() if self.day else None
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Hit":
        """A hit back from :meth:`to_dict`'s JSON."""
        sources = [
            HitSource(message_id=int(s["id"][2:]), **{k: v for k, v in s.items() if k != "id"})
            for s in data.get("sources", [])
        ]
        day = dt.date.fromisoformat(data["day"]) if data.get("day") else None
        return cls(**{**data, "sources": sources, "day": day})


# A shared image's caption follows the message's text as " [image: a photo of a dog]": what
# the image shows, said by a captioner, not by the speaker (answers mark and check it).
IMAGE = "image"


def caption_text(captions: Sequence[str]) -> str:
    """Captions as a message hit's text shows them after what was said."""
    return "".join(f" [{IMAGE}: {c}]" for c in captions)


@dataclass
class Citation:
    """A stored message an answer rests on."""

    message_id: int
    external_id: str
    conversation: str
    speaker: str
    time: str | None
    text: str


class Refusal(str, enum.Enum):
    """Why an answer was refused. A refusal by a rule of the answer stage
    (:mod:`localmem.answer.rules`) is the member named after the rule; its value is what
    ``--json`` and the MCP tools print."""

    NO_EVIDENCE = "no evidence"  # nothing was found: the model is not called
    INVALID_REPLY = "invalid reply"  # the model's reply stayed invalid after the repair retry
    MODEL = "model"  # the model said it does not know
    REFUSAL_PHRASES = "model"  # the rule refusal_phrases: another way of saying so (an alias of MODEL)
    ASKS_ABOUT_SOMEONE_ELSE = "asks about someone else"
    SOMEONE_ELSE = "someone else"
    IMAGE_DESCRIPTION = "image description"
    NO_CITATION = "no citation"

    def __str__(self) -> str:
        return self.value


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
    refusal: "Refusal | None" = None  # why it was refused (printed as the member's value)
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
        out["refusal"] = str(self.refusal) if self.refusal is not None else None
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

    def __init__(
        self, names: Names, user: str | None = None, assistant: str | None = None, owner: Sequence[str] = ()
    ) -> None:
        super().__init__({speaker: list(n) for speaker, n in names.items()})
        self.user = user if user in self else None
        self.assistant = assistant if assistant in self else None
        # The speakers who are the store's owner ("I"): the chat's user and the owner's names
        # as a speaker in other sources (a WhatsApp sender), one person.
        mine = [self.user] if self.user is not None else []
        self.owner: tuple[str, ...] = tuple(dict.fromkeys([*mine, *(s for s in owner if s in self)]))

    @property
    def me(self) -> str | None:
        """The speaker a first-person question is about: the chat's user, else the owner's
        first name as a speaker; ``None`` when the owner is not known."""
        return self.owner[0] if self.owner else None

    @property
    def chat(self) -> bool:
        """Whether this is a user–assistant chat."""
        return self.user is not None and self.assistant is not None
