"""What the store's housekeeping and browsing return: one :class:`~localmem.types.Record`
dataclass per report, whose fields are the keys its ``to_dict()`` (the ``--json`` output and
the MCP tools' structured output) gives, in the same order.

Ids are printed ids throughout: ``m:ID`` a message, ``u:ID`` a unit, ``e:ID`` an entity;
sources are plain numbers. Times are ISO text, sizes bytes, durations seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..types import OMIT_NONE, Record


@dataclass
class Stats(Record):
    """Counts for one namespace and facts about the store's file (:meth:`Memory.stats`)."""

    namespace: str
    messages: int
    conversations: int
    sessions: int
    first_message_at: str | None
    last_message_at: str | None
    sources: int
    unfinished_sources: int  # imports that stopped before their end
    units: dict[str, int]  # per unit kind (episode, gist, fact, knowledge…)
    entities: int
    links: int
    db_path: str
    db_bytes: int  # the file and its WAL
    encrypted: bool
    schema_version: int
    embedder: str | None  # the model the store's vectors come from
    embed_dim: int | None
    vector_index: dict[str, str]  # per index: "exact" search, or "codes" (binary codes, int8 rescoring)
    owner: dict[str, Any] | None = None  # who "I" is in this namespace (Owner.to_dict())
    # with background extraction on: builds, episodes, failures, the last error
    background_extraction: dict[str, Any] | None = field(default=None, metadata=OMIT_NONE)


@dataclass
class Owner(Record):
    """Who "I" is in a namespace (:meth:`Memory.owner`): the names the owner goes by as a
    speaker (``names``; ``origin`` "set" by the owner, "suggested" by an import, ``None`` when
    there are none) and how many messages are the owner's by role (``user_messages``: the user
    of assistant chat exports, who needs no name). A first-person question is about the
    owner's messages, in every source."""

    namespace: str
    names: list[str]
    origin: str | None
    user_messages: int

    @property
    def known(self) -> bool:
        """Whether the namespace knows its owner at all (by name or by role)."""
        return bool(self.names) or self.user_messages > 0

    def describe(self) -> str:
        """The owner in words, for people: "Daniel Ruiz (suggested at import), and the user of
        assistant chats"."""
        parts = []
        if self.names:
            said = ", ".join(self.names)
            parts.append(f"{said} (suggested at import)" if self.origin == "suggested" else said)
        if self.user_messages:
            parts.append("the user of assistant chats")
        return " and ".join(parts) if parts else "not known"


@dataclass
class NamespaceSummary(Record):
    """One namespace of the store (:meth:`Memory.namespaces`)."""

    namespace: str
    messages: int
    conversations: int
    units: int
    first_message_at: str | None
    last_message_at: str | None


@dataclass
class Source(Record):
    """One import (a file, or the messages added to a conversation) (:meth:`Browse.sources`)."""

    id: int
    kind: str
    uri: str
    sha256: str | None
    status: str  # "done", or the state an interrupted import stopped in
    created_at: str
    finished_at: str | None
    messages: int


@dataclass
class ForgetResult(Record):
    """What :meth:`Memory.forget` deleted (or, with ``dry_run``, would delete).

    ``messages`` (``m:ID``), ``units`` (``u:ID``), ``sources`` (source ids) and ``entities``
    (``e:ID``) went; ``kept_units`` (``u:ID``) rested on deleted messages but also on others,
    so they stay. ``counts`` counts the first four (keys ``sources``, ``messages``, ``units``,
    ``entities``). ``file`` is ``None`` when nothing was deleted (a dry run, or nothing
    matched); else what scrubbing the file did: ``wal_emptied`` (False while another
    connection reads an older snapshot: its old pages stay in the WAL until
    :meth:`Admin.vacuum`), ``freed_bytes``, ``bytes_before``, ``bytes_after``, ``seconds``,
    ``vacuumed`` (the file was written anew), ``vacuum_reason`` and ``pending`` (True: the file
    may still hold what was deleted, as the WAL could not be emptied; the next open of the store
    finishes the scrub and says so on stderr)."""

    messages: list[str]
    units: list[str]
    sources: list[int]
    entities: list[str]
    kept_units: list[str]
    counts: dict[str, int]
    dry_run: bool
    file: dict[str, Any] | None


@dataclass
class VacuumReport(Record):
    """What :meth:`Admin.vacuum` did to the file."""

    bytes_before: int
    bytes_after: int
    reclaimed_bytes: int
    auto_vacuum: str  # the mode before, "-> incremental"
    fts_optimize_seconds: float  # merging the full-text indexes
    wal_emptied: bool  # False: another connection was still reading
    seconds: float
    # PostgreSQL: what could not be rewritten or removed, each with why (a table another
    # session held, pg_statistic without the right to rewrite it, a server keeping its WAL).
    skipped: list[str] | None = field(default=None, metadata=OMIT_NONE)


@dataclass
class ReembedReport(Record):
    """What :meth:`Admin.reembed` embedded again, and with which model."""

    embedder: str
    dim: int
    messages: int
    parts: int  # parts of the messages (sentences, and each in context), made again
    units: int


@dataclass
class RestoreReport(Record):
    """What :meth:`Admin.restore` imported: ``counts`` per record type (``source``,
    ``message``, ``unit``…, in the order the file first has them); ``unchecked``: why the file
    could not be checked whole (only with ``force``). ``to_dict()`` is the counts, then
    ``unchecked`` when set."""

    counts: dict[str, int]
    unchecked: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {**self.counts, **({"unchecked": self.unchecked} if self.unchecked else {})}


@dataclass
class KeyChange(Record):
    """What :meth:`Admin.encrypt`, :meth:`~Admin.rekey` and :meth:`~Admin.decrypt` wrote:
    the store at ``path`` is now ``encrypted`` (or not), with the same ``tables`` and ``rows``;
    ``real_path`` is the file that was replaced (``path`` with its symbolic links followed)."""

    path: str
    encrypted: bool
    tables: int
    rows: int
    bytes_before: int
    bytes_after: int
    seconds: float
    real_path: str = ""


@dataclass
class DoctorReport(Record):
    """Versions, SQLite features and where each model resolves from (:meth:`Admin.doctor`).

    ``db``: path, schema versions, the meta table, integrity and auto_vacuum; ``encryption``:
    the store's state and the cipher library; ``embedder``, ``llm``, ``reranker``: where each
    model resolves from (``status`` first)."""

    localmem: str | None
    python: str
    platform: str
    apsw: str
    sqlite: str
    fts5: bool
    sqlite_vec: str
    onnxruntime: str | None
    tokenizers: str | None
    numpy: str | None
    db: dict[str, Any]
    encryption: dict[str, Any]
    embedder: dict[str, Any]
    onnx_providers: Any
    llm: dict[str, Any]
    reranker: dict[str, Any]
    # llama.cpp's build against this CPU's features, and how to rebuild when it is below them
    llama_cpp_cpu: dict[str, Any] = field(default_factory=dict)
    models_disk: dict[str, Any] = field(default_factory=dict)  # the bytes the models take, per model
    config_file: dict[str, Any] = field(default_factory=dict)  # its path, whether it exists, what it sets


@dataclass
class Episode(Record):
    """An episode: a stretch of one conversation, with its title and narrative."""

    id: str
    conversation: str
    title: str | None
    narrative: str | None
    start: str | None
    end: str | None
    stage: str
    messages: int


@dataclass
class Fact(Record):
    """A fact: subject, predicate, object, and when it held."""

    id: str
    subject: str | None
    predicate: str | None
    object: str | None
    text: str
    occurred_start: str | None
    occurred_end: str | None
    precision: str | None
    mentioned_at: str | None


@dataclass
class Entity(Record):
    """A person, place or thing named in memory."""

    id: int
    name: str
    type: str | None
    units: int  # units that mention it
    aliases: Any


@dataclass
class MessageDetail(Record):
    """One message in full (:meth:`Browse.get` of ``m:ID``): ``source`` (id, kind, uri),
    ``units`` resting on it (id, kind, text), and the message it corrects (``replaces``) or
    the correction that replaced it (``replaced_by``)."""

    id: str
    kind: str  # "message"
    namespace: str
    conversation: str
    session: str
    seq: int
    external_id: str
    speaker: str
    role: str | None
    text: str
    time: str | None
    attachments: list[Any]
    meta: dict[str, Any]
    replaces: str | None
    replaced_by: str | None
    source: dict[str, Any]
    units: list[dict[str, Any]]


@dataclass
class UnitDetail(Record):
    """One unit in full (:meth:`Browse.get` of ``u:ID``): its text, times and provenance, the
    messages it rests on (``sources``), its ``entities`` and its ``links`` to other units."""

    id: str
    namespace: str
    kind: str
    conversation: str | None
    episode_id: str | None
    title: str | None
    text: str
    subject: str | None
    predicate: str | None
    object: str | None
    aspect: str | None
    occurred_start: str | None
    occurred_end: str | None
    precision: str | None
    mentioned_at: str | None
    stage: str | None
    prompt_version: str | None
    model_id: str | None
    sources: list[dict[str, Any]]
    entities: list[dict[str, Any]]
    links: list[dict[str, Any]]


@dataclass
class TimelinePeriod(Record):
    """One week or month of :meth:`Browse.timeline`: the ``messages`` said and the
    ``episodes`` started from ``start`` to ``end`` (ISO dates, the end excluded)."""

    start: str
    messages: int
    episodes: int
    end: str


@dataclass
class SpeakerSummary(Record):
    """Someone who speaks in the namespace (:meth:`Browse.speakers`): how many ``messages``,
    and the times of the ``first`` and the ``last``."""

    speaker: str
    messages: int
    first: str | None
    last: str | None


@dataclass
class Period(Record):
    """What happened from ``start`` to ``end`` (the end excluded; :meth:`Browse.period`).

    ``conversations``: those with messages said then (``conversation``, ``messages``,
    ``first``, ``last``, ``first_id``: the first of them, ``m:ID``); ``episodes``: those that
    started then (``id``, ``conversation``, ``title``, ``narrative``, ``start``, ``end``,
    ``messages``, and ``opening``: the first messages, ``speaker`` and ``text``, of an episode
    without a narrative)."""

    start: str
    end: str
    conversations: list[dict[str, Any]]
    episodes: list[dict[str, Any]]


@dataclass
class ConversationWindow(Record):
    """The messages of ``conversation`` at places (``seq``) ``first`` to ``last``, in order
    (:meth:`Browse.conversation` and :meth:`~Browse.context`).

    ``focus``: the message the window is around (``m:ID``), or ``None``; ``more_before``,
    ``more_after``: whether the conversation goes on past either end. Each of ``messages`` has
    ``id``, ``speaker``, ``role``, ``text``, ``time``, ``seq``, ``replaces``, ``replaced_by``
    and ``session`` (the export's session within the conversation; "" when it names none)."""

    conversation: str
    focus: str | None
    first: int
    last: int
    more_before: bool
    more_after: bool
    messages: list[dict[str, Any]]


@dataclass
class ExportReport(Record):
    """What :meth:`Admin.export` wrote: ``counts`` per kind of record, in the order they were
    first written. ``to_dict()`` is the counts."""

    counts: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return dict(self.counts)
