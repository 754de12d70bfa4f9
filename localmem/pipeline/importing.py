"""An import from start to end, as :meth:`Memory.ingest <localmem.Memory.ingest>` runs it:
the input read (:mod:`localmem.importers.formats`), its messages stored (:mod:`.ingest`), the
memory built from them (:mod:`.pipeline`), and the advice for the report (the owner's names the
import suggests, an English-only embedder on messages in other languages).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypedDict

from ..config import EXTRACT_MODES, Config, check_choice
from ..importers import formats
from ..importers import owner as owner_import
from ..store import owner as owner_store
from ..store.engine import Store
from ..text.files import check_namespace, check_storable
from ..types import AddedMessage
from . import ingest, pipeline

if TYPE_CHECKING:
    from ..models.factory import Models


class ImportArgs(TypedDict, total=False):
    """The keywords of :meth:`Memory.ingest <localmem.Memory.ingest>` besides the namespace;
    each may be left out. ``format``: the input's format (detected when left out);
    ``conversation``: the conversation its messages go to; ``extract``, ``consolidate``,
    ``workers``: what is built from them, and with how many episodes at once (defaults from
    the config); ``date_order``: how WhatsApp dates are read; ``progress(done, total)``: told
    after every batch; ``source_name``: the name the input is stored under."""

    format: str | None
    conversation: str | None
    extract: str | None
    consolidate: str | None
    date_order: str | None
    progress: Callable[[int, int], None] | None
    workers: int | None
    source_name: str | None


def ingest_input(
    conn: Store,
    models: Models,
    config: Config,
    namespace: str,
    path: str | Path,
    locked: Callable[[], Any],
    *,
    format: str | None = None,
    conversation: str | None = None,
    into: str | None = None,
    extract: str | None = None,
    consolidate: str | None = None,
    date_order: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    workers: int | None = None,
    source_name: str | None = None,
) -> ingest.IngestReport:
    """Ingest ``path`` into ``namespace`` (``into``: every message into that namespace, whatever
    the input says; the other arguments: as :meth:`Memory.ingest <localmem.Memory.ingest>`
    takes them). ``locked``: the store's write lock, taken per episode while the memory is built."""
    extract = check_choice("--extract", extract or config.extract, EXTRACT_MODES)
    options = pipeline.ExtractOptions.from_config(config, consolidate=consolidate, workers=workers)
    reading = formats.Options.from_config(config, date_order=date_order)
    if into is not None:
        check_namespace(into)
    check_storable("the conversation name", conversation)
    parsed = formats.parse(Path(path), None, format, conversation, options=reading)
    if source_name is not None:
        formats.rename(parsed, source_name)
    embedder = models.embedder
    _ = embedder.dim  # load the models before anything is written
    llm = models.llm if extract == "llm" else None
    _ = llm.model_id if llm is not None else None
    report = ingest.store_parsed(
        conn,
        embedder,
        parsed,
        ingest.IngestOptions.from_config(config),
        namespace=into or namespace,
        force_namespace=into is not None,
        progress=ingest.counting(progress, parsed.message_count),
    )
    report = pipeline.process_ingested(conn, embedder, llm, report, options, locked, progress)
    report.advice += suggest_owner(conn, parsed, into, namespace)
    chosen = config.origin("embed_backend") != "default" or config.embed_model is not None
    advice = ingest.language_advice(conn, embedder.model_id, chosen)
    if advice:
        report.advice.append(advice)
    return report


def suggest_owner(conn: Store, parsed: formats.ParsedInput, into: str | None, namespace: str) -> list[str]:
    """Keep as suggestions the owner's names an import tells (:mod:`localmem.importers.owner`),
    per namespace it went to (``into``, else the one a source names, else ``namespace``); what
    was suggested, in words for the report."""
    by_ns: dict[str, list[tuple[str, list[Any]]]] = {}
    for source in parsed.sources:
        for group_ns, messages in source.groups:
            target = into or group_ns or namespace
            by_ns.setdefault(target, []).append((source.format, messages))
    said = []
    for ns, sources in by_ns.items():
        suggestions = owner_import.suggest(sources)
        new = set(owner_store.suggest(conn, ns, [s.name for s in suggestions]))
        for s in suggestions:
            if s.name in new:
                said.append(
                    f"owner: {s.name!r} is taken to be you in namespace {ns!r} ({s.why}); "
                    "confirm with 'localmem owner confirm' or set with 'localmem owner set NAME'"
                )
    return said


def add_message(
    conn: Store,
    models: Models,
    config: Config,
    namespace: str,
    speaker: str,
    text: str,
    time: str | dt.datetime | None = None,
    role: str | None = None,
    conversation: str | None = None,
    id: str | None = None,
    meta: dict[str, Any] | None = None,
) -> AddedMessage:
    """One message appended, as :meth:`Memory.add <localmem.Memory.add>` takes it."""
    max_chars = config.max_message_chars
    message, stored_meta = ingest.new_message(speaker, text, time, role, conversation, id, meta, max_chars)
    embedder = models.embedder
    message_id, added = ingest.add_message(conn, embedder, namespace, message, stored_meta, config.context_parts)
    return AddedMessage(message_id, message.external_id, message.conversation, added)


def correct_message(conn: Store, models: Models, config: Config, namespace: str, item: str, text: str) -> AddedMessage:
    """``text`` stored as the correction of message ``item``, as :meth:`Memory.correct
    <localmem.Memory.correct>` takes it."""
    max_chars, context = config.max_message_chars, config.context_parts
    done = ingest.correct_message(conn, models.embedder, namespace, item, text, max_chars, context)
    return AddedMessage(done.id, done.external_id, done.conversation, True, done.replaces)
