"""The facade: :class:`Memory` checks arguments and delegates to the stages.

Every CLI command (and every MCP tool) calls one method. Stage modules are imported when a
method first needs them, so opening a store or importing localmem stays fast. Asking lives in
:mod:`localmem.answer.pipeline`, search batching in :mod:`localmem.retrieval.batch`, building
memory in :mod:`localmem.pipeline`, housekeeping and browsing in :mod:`localmem.store`.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

from .config import (
    ASK_MODES,
    CONSOLIDATE_MODES,
    DATE_ORDERS,
    DEFAULT_AGENT_STEPS,
    DEFAULT_K,
    DEFAULT_LIST_LIMIT,
    DEFAULT_RECENT,
    EXTRACT_MODES,
    MAX_AGENT_STEPS,
    Config,
    Key,
    as_key,
)
from .errors import InvalidTextError, LocalmemError, NotFoundError, StoreNotFoundError
from .models.factory import Models
from .serial import one_at_a_time
from .text.files import has_surrogates, without_surrogates
from .types import AddedMessage

if TYPE_CHECKING:
    import apsw

    from .answer.profile import Profile
    from .models.protocols import LLM, Embedder, Reranker
    from .pipeline.consolidate import Report as ConsolidationReport
    from .pipeline.ingest import IngestReport
    from .pipeline.pipeline import ExtractionReport
    from .pipeline.worker import ExtractionWorker
    from .retrieval.filters import Filters
    from .retrieval.search import SearchParams
    from .store import results
    from .types import Answer, Hit

__all__ = ["Memory", "AddedMessage"]

Progress = Callable[[int, int], None]
Phases = Callable[[str], None]
When = str | dt.date | None  # a day or a time (datetime is a date), or text either parses


@one_at_a_time
class Memory:
    """Long-term memory in one SQLite file.

    >>> with Memory("memory.db", namespace="alice") as mem:
    ...     mem.add("Alice", "I moved to Berlin last week.")
    ...     hits = mem.search("Where does Alice live?")

    The models are built from the config on first use (:class:`~localmem.models.factory.Models`);
    ``embedder``, ``llm`` and ``reranker`` give ready-made ones instead, and ``models`` shares
    another Memory's (the backends are safe to use from several threads). ``create=False``
    refuses a path where there is no store yet (:class:`~localmem.errors.StoreNotFoundError`)
    instead of creating one; ``created`` says whether this one was created.

    Threads: one Memory may be shared by several threads; its calls then run one at a time
    (each holds the Memory's lock until it returns), so a long ingest or ``ask`` makes the
    others wait. To search while another thread writes, give each thread its own Memory: each
    has its own connection, and the store's write-ahead log lets readers read while one writer
    writes. Processes: any number may open the same store; a writer waits up to
    ``busy_timeout_ms`` for another to finish (:class:`~localmem.errors.StoreLockedError`
    after that). After :meth:`close`, every call raises :class:`~localmem.errors.LocalmemError`.

    ``key``: the passphrase of an encrypted store (a string, or a :class:`~localmem.config.Key`);
    a new store opened with one is encrypted from its first page. Without it, the variable the
    config's ``key_env`` names is read. Encryption needs ``pip install 'localmem[encrypt]'``.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        namespace: str | None = None,
        *,
        config: Config | None = None,
        embedder: "Embedder | None" = None,
        llm: "LLM | None" = None,
        reranker: "Reranker | None" = None,
        models: Models | None = None,
        create: bool = True,
        key: str | Key | None = None,
    ) -> None:
        from .retrieval.batch import SpeakerNames
        from .store import db

        cfg = config or Config()
        if path is not None:
            cfg = replace(cfg, db_path=Path(path))
        if namespace is not None:
            cfg = replace(cfg, namespace=namespace)
        if not cfg.namespace or not cfg.namespace.strip():
            raise LocalmemError("the namespace must be a non-empty name")
        _storable("the namespace", cfg.namespace)
        self.config, self.path, self.namespace = cfg, cfg.resolved_db_path(), cfg.namespace
        self.models = models or Models(cfg, llm=llm, embedder=embedder, reranker=reranker)
        in_memory = str(self.path) == ":memory:"
        if not create and not in_memory and not self.path.exists():
            raise StoreNotFoundError(self.path)
        self.created = not in_memory and not self.path.exists()
        self._lock = threading.RLock()
        self._key = as_key(key) if key is not None else cfg.key()
        self._conn: "apsw.Connection | None" = db.connect(self.path, cfg.busy_timeout_ms, key=self._key)
        self._worker: "ExtractionWorker | None" = None
        self._names = SpeakerNames()  # kept between searches (see retrieval.batch.SpeakerNames)

    # -- lifecycle -------------------------------------------------------------
    @property
    def conn(self) -> "apsw.Connection":
        """The store's connection (for the stage functions and tests)."""
        if self._conn is None:
            raise LocalmemError(f"this Memory of {self.path} is closed; open a new one to use the store")
        return self._conn

    def close(self) -> None:
        """Close the store (a second close does nothing); with background extraction on, first
        extract what is left (as :meth:`flush` does), waiting for it."""
        if self._worker is not None:
            worker, self._worker = self._worker, None
            worker.close()
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def embedder(self) -> "Embedder":
        """The embedder, built on first use."""
        return self.models.embedder

    @property
    def llm(self) -> "LLM":
        """The LLM, built on first use."""
        return self.models.llm

    @property
    def reranker(self) -> "Reranker | None":
        """The configured cross-encoder (loaded on first use), or ``None`` when none is set."""
        return self.models.reranker

    def token_counter(self) -> tuple[Callable[[str], int], str]:
        """How budgets are counted, and by what (see :meth:`Models.counter`)."""
        return self.models.counter()

    def _locked(self) -> Any:
        """The store's low-level errors (locked, damaged) as :class:`LocalmemError` s: every
        public call runs inside it (:func:`~localmem.serial.one_at_a_time`), and so do the
        pipeline's writes."""
        from .store import db

        return db.store_errors(str(self.path), self.config.busy_timeout_ms)

    # -- ingest ------------------------------------------------------------------
    def ingest(
        self,
        path: str | Path,
        *,
        format: str | None = None,
        conversation: str | None = None,
        namespace: str | None = None,
        extract: str | None = None,
        consolidate: str | None = None,
        date_order: str | None = None,
        progress: Progress | None = None,
        workers: int | None = None,
    ) -> "IngestReport":
        """Ingest a file, a folder or .zip of them (every file it recognises; the others are
        listed in the report's ``not_read``), or ``"-"`` for standard input. Formats: ChatGPT,
        Claude.ai, WhatsApp, Slack, Discord (DiscordChatExporter), notes, LoCoMo JSON, JSONL,
        chat JSON, text transcripts; detected unless ``format`` is given.

        Re-ingesting the same input is a no-op; an edited file adds only its new messages. LoCoMo
        samples each go to the namespace named by their ``sample_id`` unless ``namespace`` is
        given. ``date_order`` ("day-first", "month-first") overrides how WhatsApp dates are
        read. ``progress(done, total)`` is called after every batch. ``consolidate`` (with
        ``extract="llm"``): "off", "fast" or "full" predict–calibrate knowledge (default from
        the config). ``workers``: episodes extracted at once against a model server (default
        ``llm_workers``).
        """
        from .importers import formats
        from .pipeline import ingest

        extract = _choice("--extract", extract or self.config.extract, EXTRACT_MODES)
        consolidate = _choice("--consolidate", consolidate or self.config.consolidate, CONSOLIDATE_MODES)
        if date_order is not None:
            _choice("--date-order", date_order, DATE_ORDERS)
        _workers(workers)
        _storable("the namespace", namespace)
        _storable("the conversation name", conversation)
        options = formats.Options.from_config(self.config, date_order=date_order)
        parsed = formats.parse(Path(path), None, format, conversation, options=options)
        _ = self.embedder.dim  # load the model before anything is written
        if extract == "llm":
            _ = self.llm.model_id  # resolve the model before anything is written
        report = ingest.store_parsed(
            self.conn,
            self.embedder,
            parsed,
            ingest.IngestOptions.from_config(self.config),
            namespace=namespace or self.namespace,
            force_namespace=namespace is not None,
            progress=ingest.counting(progress, parsed.message_count),
        )
        names = [nsr.namespace for nsr in report.namespaces]
        if extract == "llm":
            built = {
                ns: self.extract(namespace=ns, progress=progress, consolidate=consolidate, workers=workers)
                for ns in names
            }
            report.build = {ns: done.to_dict() for ns, done in built.items()}
        else:
            report.episodes = {ns: self.segment_without_llm(ns) for ns in names}
        return report

    def segment_without_llm(self, namespace: str | None = None, *, final: bool = True) -> int:
        """Close episodes by time gaps and drops in embedding similarity (no LLM); their
        extraction waits for a later ``build`` with a model. Returns the episodes closed."""
        from .pipeline import pipeline

        ns = namespace or self.namespace
        return pipeline.segment_without_llm(self.conn, self.embedder, ns, self._locked, final=final)

    def extract(
        self,
        *,
        namespace: str | None = None,
        final: bool = True,
        progress: Progress | None = None,
        consolidate: str | None = None,
        workers: int | None = None,
    ) -> "ExtractionReport":
        """Segment unassigned messages into episodes, extract each closed episode, then
        consolidate them (``consolidate``: "off", "fast", "full"; default from the config).

        Resumable: each episode is one transaction, so an interrupted build redoes
        at most the episode it was in. ``final=False`` leaves the open buffer open.
        ``workers``: episodes extracted at once against a model server (default
        ``llm_workers``; the in-process model takes one call at a time).
        """
        from .pipeline import pipeline

        options = pipeline.ExtractOptions.from_config(self.config, consolidate=consolidate, workers=workers)
        _choice("--consolidate", options.consolidate, CONSOLIDATE_MODES)
        _workers(options.workers)
        ns = namespace or self.namespace
        return pipeline.extract_episodes(
            self.conn, self.llm, self.embedder, ns, self._locked, options, final=final, progress=progress
        )

    def consolidate(
        self, *, namespace: str | None = None, mode: str = "fast", progress: Progress | None = None
    ) -> "ConsolidationReport":
        """Predict–calibrate every extracted episode not consolidated yet, oldest first:
        lasting knowledge about people as ``knowledge`` units, changes as ``supersedes`` links.
        ``mode``: "fast" (one call per episode) or "full" (predict, then calibrate)."""
        from .pipeline import pipeline

        if _choice("--consolidate", mode, CONSOLIDATE_MODES) == "off":
            raise LocalmemError("consolidate needs a mode: fast or full")
        ns, llm = namespace or self.namespace, self.llm
        log = pipeline.CallLog(self.conn, ns, llm.model_id)
        options = pipeline.ExtractOptions.from_config(self.config, consolidate=mode)
        return pipeline.consolidate_namespace(self.conn, llm, self.embedder, ns, log, self._locked, options, progress)

    def extract_in_background(self) -> None:
        """With ``extract="llm"``: from now on, episodes that :meth:`add` closes are extracted by
        a background thread instead of inside ``add``, which then returns as soon as the message
        is stored. The thread runs one build at a time on its own connection to the same file,
        with this Memory's models; :meth:`close` flushes (closes the open episode and extracts
        it) and waits. A process killed mid-extraction loses nothing: an episode is stored in
        one transaction, and the next build (the next ``add``, or ``localmem flush``) redoes it."""
        from .pipeline.worker import ExtractionWorker

        if self.config.extract != "llm":
            raise LocalmemError("background extraction needs extract = llm (--extract llm)")
        if self._worker is None:
            self._worker = ExtractionWorker(lambda: Memory(config=self.config, models=self.models, key=self._key))

    def flush(self, progress: Progress | None = None, workers: int | None = None) -> "ExtractionReport":
        """Close every open episode buffer and extract what was closed (streaming use)."""
        return self.extract(final=True, progress=progress, workers=workers)

    def add(
        self,
        speaker: str,
        text: str,
        time: str | dt.datetime | None = None,
        role: str | None = None,
        conversation: str | None = None,
        id: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> AddedMessage:
        """Append one message; it is searchable when this returns.

        ``time`` defaults to now (local time). A message whose ``id`` is already
        stored in the conversation is not added again. ``meta``: names to text, numbers,
        true/false or null, stored with the message (search and ask filter on it). Messages
        added to one conversation share a source of their own (``forget --source``). With
        ``extract="llm"`` an episode this message closes is extracted here, or by the background
        thread after :meth:`extract_in_background`.
        """
        from .pipeline import ingest
        from .retrieval.filters import check_meta
        from .text.times import parse_timestamp, to_iso

        if not isinstance(speaker, str) or not speaker.strip():
            raise LocalmemError("add() needs a non-empty speaker")
        if not isinstance(text, str):
            raise LocalmemError("add() needs the message text as a string")
        for what, value in (("the speaker", speaker), ("the message text", text), ("the role", role)):
            _storable(what, value)
        _storable("the conversation name", conversation)
        _storable("the message id", id)
        self._check_text(text)
        stored_meta = dict(check_meta(meta)) if meta else None
        when = time if time is not None else dt.datetime.now()
        try:
            sent_at = to_iso(when) if isinstance(when, dt.datetime) else parse_timestamp(when)
        except ValueError as exc:
            raise LocalmemError(f"add(): {exc}") from exc
        message = ingest.said(speaker, text, sent_at, role, conversation, id)
        message_id, added = ingest.add_message(self.conn, self.embedder, self.namespace, message, stored_meta)
        if added:
            self._after_add()
        return AddedMessage(message_id, message.external_id, message.conversation, added)

    def _after_add(self) -> None:
        if self.config.extract == "llm" and self._worker is not None:
            self._worker.wake()  # segments and extracts in its own thread
        elif self.config.extract == "llm":
            self.extract(final=False)  # closes and extracts an episode only at a boundary or the cap
        else:
            self.segment_without_llm(final=False)  # as a batch ingest would, minus the open buffer

    def _check_text(self, text: str) -> None:
        _storable("the message text", text)
        if len(text) > self.config.max_message_chars:
            raise LocalmemError(
                f"the message has {len(text):,} characters, over the limit of {self.config.max_message_chars:,}"
            )

    def correct(self, item: str, text: str) -> AddedMessage:
        """Store ``text`` as a new message replacing message ``item`` (``m:ID``; when it was
        corrected before, its newest correction is the one replaced). The old message stays,
        marked replaced; search and ask show the correction first. The correction takes the
        old message's place: speaker, role, time, conversation, metadata and source."""
        from .pipeline import ingest
        from .store.refs import number

        message_id = number(item, "m")
        if not isinstance(text, str) or not text.strip():
            raise LocalmemError("correct() needs the new text as a non-empty string")
        self._check_text(text)
        done = ingest.correct_message(self.conn, self.embedder, self.namespace, message_id, text)
        if done is None:
            raise NotFoundError(
                f"no message {item.strip()} in namespace '{self.namespace}'",
                "see 'localmem search' for ids (ids belong to one namespace: pass --namespace)",
            )
        self._after_add()
        return AddedMessage(done.id, done.external_id, done.conversation, True, done.replaces)

    # -- search ------------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        k: int = DEFAULT_K,
        budget: int | None = None,
        channels: Sequence[str] | None = None,
        promote: bool | None = None,
        max_tokens: int | None = None,
        rerank: str | None = None,
        recipe: "SearchParams | None" = None,
        since: When = None,
        until: When = None,
        speaker: str | None = None,
        conversation: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> list["Hit"]:
        """The ``k`` best hits for ``query`` in this namespace (no LLM involved).

        Filters: only messages said ``since`` .. ``until`` (inclusive; a date or a time), by
        ``speaker``, in ``conversation``, whose metadata holds every pair of ``meta``, and the
        units resting only on such messages.

        ``recipe``: a search preset (which channels, whether built memory and sentence parts
        take part; see :class:`~localmem.retrieval.search.SearchParams`); ``channels``,
        ``promote`` and ``rerank`` override it. ``promote``: move candidates from the
        best-matching episodes (for the query's people and time) ahead, keeping their order
        (CAST). ``max_tokens``: keep whole hits in rank order while their text fits, counted
        by :meth:`token_counter`.
        """
        from .retrieval.search import fit_budget

        found = self.search_many(
            [query],
            k=k,
            budget=budget,
            channels=channels,
            promote=promote,
            rerank=rerank,
            recipe=recipe,
            since=since,
            until=until,
            speaker=speaker,
            conversation=conversation,
            meta=meta,
        )
        hits = next(iter(found))
        return fit_budget(hits, max_tokens, self.token_counter()[0]) if max_tokens is not None else hits

    def search_many(
        self,
        queries: Iterable[str],
        *,
        k: int = DEFAULT_K,
        budget: int | None = None,
        channels: Sequence[str] | None = None,
        batch: int = 64,
        promote: bool | None = None,
        rerank: str | None = None,
        recipe: "SearchParams | None" = None,
        since: When = None,
        until: When = None,
        speaker: str | None = None,
        conversation: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Iterator[list["Hit"]]:
        """Search many queries in one process, embedding them in batches; yields per query.

        ``rerank``: "auto" (the default) uses the configured cross-encoder if any, "none" keeps
        the fusion order, "llm" asks the LLM whether each of the top candidates is relevant
        (slow). ``recipe`` and the filters (``since`` … ``meta``): as in :meth:`search`.
        """
        from .retrieval import batch as batch_mod

        params = replace(
            self.search_params(k, budget, channels, promote, rerank, recipe=recipe),
            filters=_filters(since, until, speaker, conversation, meta),
        )
        options = batch_mod.SearchOptions.from_config(self.config)
        yield from batch_mod.search_many(
            self.conn, self.namespace, self.models, queries, params, options, batch, names=self._names
        )

    def search_params(
        self,
        k: int = DEFAULT_K,
        budget: int | None = None,
        channels: Sequence[str] | None = None,
        promote: bool | None = None,
        rerank: str | None = None,
        *,
        recipe: "SearchParams | None" = None,
        now: dt.date | None = None,
    ) -> "SearchParams":
        """The checked search parameters: ``recipe`` (default: the default search) with these
        sizes, and ``channels``, ``promote`` and ``rerank`` where given."""
        from .retrieval import batch as batch_mod

        options = batch_mod.SearchOptions.from_config(self.config)
        return batch_mod.search_params(options, k, budget, channels, promote, rerank, recipe=recipe, now=now)

    def recent(self, n: int = DEFAULT_RECENT) -> list["Hit"]:
        """The ``n`` latest messages of this namespace, oldest first."""
        from .retrieval.search import latest_messages

        if not isinstance(n, int) or n < 1:
            raise LocalmemError("recent() needs n of at least 1")
        return latest_messages(self.conn, self.namespace, n)

    # -- answers -----------------------------------------------------------------
    def ask(
        self,
        question: str,
        *,
        mode: str = "fast",
        now: dt.date | str | None = None,
        k: int | None = None,
        max_tokens: int | None = None,
        channels: Sequence[str] | None = None,
        promote: bool | None = None,
        recipe: "SearchParams | None" = None,
        steps: int = DEFAULT_AGENT_STEPS,
        trace: Callable[[Any], None] | None = None,
        on_text: Callable[[str], None] | None = None,
        since: When = None,
        until: When = None,
        speaker: str | None = None,
        conversation: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> "Answer":
        """Answer ``question`` from this namespace's memory, with the messages it rests on,
        or refuse (``refused=True``, answer "not in memory") when the memory does not say.

        ``fast`` (REMem-S): one search (``recipe``, ``channels``, ``promote``: as in
        :meth:`search`), then one LLM call over the best hits that fit ``max_tokens``
        (default ``config.ask_max_tokens``), given to the model in time order.
        ``now``: the date relative questions count from (default: the latest message time).

        ``agentic`` (REMem-I + MRAgent): at most ``steps`` tool calls chosen by the model
        (semantic and lexical retrieval with time filters, episode context, entity → tag →
        units with ordering and counts), then one answer call over the evidence it kept;
        ``trace`` receives each step. ``on_text`` receives the answer text as it is generated.

        ``since``, ``until``, ``speaker``, ``conversation``, ``meta``: the evidence is searched
        only among what passes these filters (as in :meth:`search`; fast mode only).
        """
        from .answer import pipeline

        if mode not in ASK_MODES:
            raise LocalmemError(f"unknown ask mode {mode!r}; available: {', '.join(ASK_MODES)}")
        if not 1 <= steps <= MAX_AGENT_STEPS:
            raise LocalmemError(f"steps must be between 1 and {MAX_AGENT_STEPS}")
        question = _question(question)
        filters = _filters(since, until, speaker, conversation, meta)
        if filters is not None and mode == "agentic":
            raise LocalmemError(
                "filters (since, until, speaker, conversation, meta) work with ask's fast mode",
                "use --mode fast, or leave the filters out",
            )
        started = time.perf_counter()
        today = self._today(now)
        options = pipeline.AskOptions.from_config(self.config)
        if mode == "agentic":
            return pipeline.ask_agentic(
                self.conn,
                self.namespace,
                self.models,
                question,
                today,
                options,
                steps=steps,
                trace=trace,
                on_text=on_text,
                started=started,
                names=self._names,
            )
        params = self.search_params(
            k or options.candidates, channels=channels, promote=promote, recipe=recipe, now=today
        )
        params = replace(params, filters=filters)
        return pipeline.ask(
            self.conn,
            self.namespace,
            self.models,
            question,
            params,
            today,
            options,
            max_tokens=max_tokens,
            on_text=on_text,
            started=started,
            names=self._names,
        )

    def answer(
        self,
        question: str,
        evidence: Sequence["Hit"],
        *,
        now: dt.date | str | None = None,
        on_text: Callable[[str], None] | None = None,
    ) -> "Answer":
        """Answer ``question`` from exactly ``evidence`` (no search, no focus): what :meth:`ask`
        does after its search, for callers that choose the evidence themselves. Evidence that
        does not fit the model's context window is left out, oldest first."""
        from .answer import pipeline

        question, today = _question(question), self._today(now)
        options = pipeline.AskOptions.from_config(self.config)
        return pipeline.answer_from(
            self.conn, self.namespace, self.models, question, evidence, today, options, on_text=on_text
        )

    def _today(self, now: dt.date | str | None) -> dt.date:
        from .retrieval.channels import latest_time

        try:
            today = dt.date.fromisoformat(now[:10]) if isinstance(now, str) else now
        except ValueError as exc:
            raise LocalmemError(f"--now must be a date like 2023-05-08, got {now!r}") from exc
        return today or latest_time(self.conn, self.namespace)

    def profile(self, name: str, *, namespace: str | None = None, summary: bool = False) -> "Profile":
        """A person's timeline (the episodes they are in, in time order, with their role) and
        what memory knows about them, grouped by aspect, current statements first.

        ``summary``: also a few sentences written by the model from that knowledge, stored
        with the person and rewritten only when what it rests on has changed."""
        from .answer import profile as profile_mod
        from .store import db

        prof = profile_mod.profile(self.conn, namespace or self.namespace, name)
        basis = profile_mod.stale_summary(self.conn, prof) if summary else None
        if basis is not None:
            llm = self.llm
            profile_mod.write_summary(self.conn, llm, prof, basis, db.now_iso())
        return prof

    # -- housekeeping --------------------------------------------------------------
    def stats(self) -> "results.Stats":
        """Counts for this namespace and the store; with background extraction on, also what
        it has done (``background_extraction``: builds, episodes, failures, the last error)."""
        from .store import manage

        data = manage.stats(self.conn, self.namespace, self.path)
        if self._worker is not None:
            data.background_extraction = self._worker.status()
        return data

    def namespaces(self) -> list["results.NamespaceSummary"]:
        """The namespaces in the store, with their counts."""
        from .store import manage

        return manage.namespaces(self.conn)

    def require_namespace(self) -> None:
        """Raise :class:`~localmem.errors.UnknownNamespaceError`, listing the namespaces there
        are, unless the store holds this one (a new store's default namespace is fine)."""
        from .config import DEFAULTS
        from .store import manage

        manage.require_namespace(self.conn, self.namespace, DEFAULTS.namespace, self.path)

    def forget(
        self,
        *,
        namespace: str | None = None,
        source_id: int | None = None,
        ids: Sequence[str] | None = None,
        conversation: str | None = None,
        before: When = None,
        match: str | None = None,
        dry_run: bool = False,
    ) -> "results.ForgetResult":
        """Delete exactly one target, with what rests only on it, so that none of it is left in
        the store's file (its WAL included).

        The target: ``ids`` (memories of this namespace: ``m:ID`` messages, ``u:ID`` units),
        a ``conversation``, the messages said ``before`` a date or time, the messages and units
        whose text contains ``match`` (case-insensitive), a source of this namespace
        (``source_id``), or a whole ``namespace``. A unit resting only on deleted messages goes
        with them; one that also rests on other messages stays with those (``kept_units``).
        Returns what went (or, with ``dry_run``, would go): see
        :class:`~localmem.store.results.ForgetResult`.
        """
        from .retrieval.filters import day_or_time
        from .store import forget as forget_mod
        from .store.refs import parse
        from .store.results import ForgetResult

        targets = {
            "namespace": namespace,
            "source_id": source_id,
            "ids": ids,
            "conversation": conversation,
            "before": before,
            "match": match,
        }
        given = [name for name, value in targets.items() if value is not None]
        if len(given) != 1:
            raise LocalmemError(
                f"forget needs exactly one target, got {len(given)}" + (f" ({', '.join(given)})" if given else ""),
                "name ids (m:ID, u:ID), a conversation, before, match, a source or a namespace",
            )
        parsed = [parse(item) for item in ([ids] if isinstance(ids, str) else ids or [])]
        if ids is not None and not parsed:
            raise LocalmemError("forget() was given no ids")
        if match is not None and (not isinstance(match, str) or not match.strip()):
            raise LocalmemError("forget --match needs some text")
        if source_id is not None and (not isinstance(source_id, int) or isinstance(source_id, bool)):
            raise LocalmemError(
                f"forget() needs source_id as a number, not {source_id!r}", "see 'localmem stats --sources'"
            )
        named = {kind: [n for k, n in parsed if k == kind] if ids is not None else None for kind in ("m", "u")}
        report = forget_mod.forget(
            self.conn,
            self.path,
            self.namespace,
            namespace=namespace,
            source_id=source_id,
            messages=named["m"],
            units=named["u"],
            conversation=conversation,
            before=day_or_time(before, "--before"),
            match=match.strip() if match is not None else None,
            dry_run=dry_run,
        )
        return ForgetResult(**report)

    def vacuum(self) -> "results.VacuumReport":
        """Compact the store: merge the full-text indexes, rewrite the file without its free
        pages (a store made before auto_vacuum is switched to incremental), and empty the WAL;
        sizes before and after."""
        from .store import purge
        from .store.results import VacuumReport

        return VacuumReport(**purge.vacuum(self.conn, self.path))

    def sources(self) -> list["results.Source"]:
        """The sources (imports) of this namespace."""
        from .store import manage

        return manage.sources(self.conn, self.namespace)

    def export(self, out: IO[str], *, namespaces: Sequence[str] | None = None, vectors: bool = True) -> dict[str, int]:
        """Write the store (or some namespaces) as JSONL that :meth:`restore` reads back exactly."""
        from .store import transfer

        return transfer.export(self.conn, out, namespaces=namespaces, vectors=vectors)

    def restore(self, path: str | Path, *, force: bool = False) -> "results.RestoreReport":
        """Import an export file, in one transaction; counts per record type. Namespaces already
        in the store are refused, not merged. A file whose trailer is missing or does not match
        it (cut short, or edited) is refused with nothing stored, unless ``force`` (for exports
        made before the trailer existed): then ``unchecked`` in the result says what could not
        be checked."""
        from .store import transfer

        return transfer.restore(
            self.conn,
            Path(path),
            embedder_factory=lambda: self.embedder,
            force=force,
            max_chars=self.config.max_message_chars,
        )

    def reembed(self, progress: Progress | None = None) -> "results.ReembedReport":
        """Re-embed every message and unit with the configured embedder."""
        from .store import manage

        return manage.reembed(self.conn, self.embedder, self.config.embed_batch, progress)

    def doctor(self) -> "results.DoctorReport":
        """Versions, SQLite features and where each model resolves from."""
        from .store import manage

        return manage.doctor(self.conn, self.config, self.path)

    # -- encryption ------------------------------------------------------------------
    @property
    def encrypted(self) -> bool:
        """Whether the store is encrypted (it was opened with a key)."""
        return self._key is not None

    def encrypt(self, key: str | Key, progress: Phases | None = None) -> "results.KeyChange":
        """Encrypt this plain store in place with ``key``: a new encrypted file is written,
        checked, and moved over the store (a kill leaves the old store or the new one).
        ``progress(phase)`` is called as each phase starts."""
        if self.encrypted:
            raise LocalmemError(f"{self.path} is already encrypted; change its passphrase with rekey")
        return self._change_key(as_key(key), progress)

    def rekey(self, key: str | Key, progress: Phases | None = None) -> "results.KeyChange":
        """Change the passphrase of this encrypted store, the same safe way as :meth:`encrypt`."""
        if not self.encrypted:
            raise LocalmemError(f"{self.path} is not encrypted; encrypt it with encrypt")
        new = as_key(key)
        if new is not None and self._key is not None and new.secret == self._key.secret:
            raise LocalmemError("the new passphrase is the one the store already has; nothing was changed")
        return self._change_key(new, progress)

    def decrypt(self, progress: Phases | None = None) -> "results.KeyChange":
        """Write this encrypted store back as a plain one, the same safe way as :meth:`encrypt`."""
        if not self.encrypted:
            raise LocalmemError(f"{self.path} is not encrypted; nothing to do")
        return self._change_key(None, progress)

    def _change_key(self, new: Key | None, progress: Phases | None) -> "results.KeyChange":
        from .store import cipher, db

        if str(self.path) == ":memory:":
            raise LocalmemError("an in-memory store cannot be encrypted or decrypted")
        if new is not None:
            cipher.require_cipher("encrypting a store")
        report = cipher.change_key(self.conn, self.path, self._key, new, progress)
        self.conn.close()
        self._conn = None
        self._key = new
        self._conn = db.connect(self.path, self.config.busy_timeout_ms, key=new)
        return report

    # -- what was remembered ---------------------------------------------------------
    def episodes(self, limit: int = DEFAULT_LIST_LIMIT) -> list["results.Episode"]:
        """The latest episodes of this namespace."""
        from .store import browse

        return browse.episodes(self.conn, self.namespace, limit)

    def facts(
        self,
        *,
        entity: str | None = None,
        start: str | None = None,
        end: str | None = None,
        limit: int = DEFAULT_LIST_LIMIT,
    ) -> list["results.Fact"]:
        """Facts in time order, optionally about ``entity`` and within ``start``..``end`` (ISO)."""
        from .store import browse

        return browse.facts(self.conn, self.namespace, entity=entity, start=start, end=end, limit=limit)

    def entities(self, limit: int = DEFAULT_LIST_LIMIT) -> list["results.Entity"]:
        """The entities of this namespace, most mentioned first."""
        from .store import browse

        return browse.entities(self.conn, self.namespace, limit)

    def get(self, item: str) -> "results.MessageDetail | results.UnitDetail":
        """One memory of this namespace in full: a message (``m:ID``: text, speaker, role,
        conversation, time, metadata, source, corrections, the units resting on it) or a unit
        (``u:ID``: text, times, source messages, entities, links)."""
        from .store import browse

        return browse.get(self.conn, self.namespace, item)

    def show(self, item: str | int) -> "results.MessageDetail | results.UnitDetail":
        """:meth:`get`; a bare number is a unit id (as before ids were printed ``u:ID``)."""
        return self.get(f"u:{item}" if isinstance(item, int) else item)

    def timeline(self, period: str = "month", *, speaker: str | None = None) -> list[dict[str, Any]]:
        """Messages and episodes of this namespace per ``period`` ("week" or "month"), oldest
        first: ``start``, ``end`` (ISO dates, the end excluded), ``messages``, ``episodes``;
        ``speaker``: only their messages, and the episodes they speak in."""
        from .store import browse

        return browse.timeline(self.conn, self.namespace, _choice("period", period, ("week", "month")), speaker)

    def speakers(self, limit: int = DEFAULT_LIST_LIMIT) -> list[dict[str, Any]]:
        """Who speaks in this namespace, the most messages first: ``speaker``, ``messages``,
        ``first`` and ``last`` (times)."""
        from .store import browse

        return browse.speakers(self.conn, self.namespace, limit)

    def period(self, start: str, end: str, limit: int = DEFAULT_LIST_LIMIT) -> dict[str, Any]:
        """The conversations with messages said in [``start``, ``end``) (ISO dates or times) and
        the episodes that started then."""
        from .retrieval.filters import day_or_time
        from .store import browse

        first, last = day_or_time(start, "start"), day_or_time(end, "end")
        if first is None or last is None:
            raise LocalmemError("a period needs a start and an end", "give dates like 2024-03-01")
        return browse.period(self.conn, self.namespace, first, last, limit=limit)

    def context(self, item: str, around: int = 3) -> dict[str, Any]:
        """Message ``item`` (``m:ID``) in its conversation, with the ``around`` messages said
        before and after it."""
        from .store import browse

        if not isinstance(around, int) or not 0 <= around <= 200:
            raise LocalmemError(f"around must be a number from 0 to 200, got {around!r}")
        return browse.context(self.conn, self.namespace, item, around)

    def conversation(self, name: str, first: int = 0, last: int = 49) -> dict[str, Any]:
        """The messages of conversation ``name`` at places (``seq``) ``first`` to ``last``, in
        order, and whether there are more before and after."""
        from .store import browse

        if last < first or last - first > 1000:
            raise LocalmemError("a conversation window is 1 to 1,000 messages long")
        return browse.window(self.conn, self.namespace, name, first, last)


def _choice(what: str, value: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise LocalmemError(f"{what} {value} is unknown; use one of: {', '.join(choices)}")
    return value


def _workers(workers: int | None) -> int | None:
    if workers is not None and workers < 1:
        raise LocalmemError(f"--workers must be at least 1, got {workers}")
    return workers


def _filters(
    since: Any, until: Any, speaker: str | None, conversation: str | None, meta: dict[str, Any] | None
) -> "Filters | None":
    from .retrieval.filters import make_filters

    return make_filters(since=since, until=until, speaker=speaker, conversation=conversation, meta=meta)


def _question(question: str) -> str:
    if not isinstance(question, str) or not question.strip():
        raise LocalmemError("ask() needs a non-empty question")
    return without_surrogates(question.strip())


def _storable(what: str, text: str | None) -> None:
    """Refuse text that cannot be stored: a lone surrogate (see :mod:`localmem.text.files`)."""
    if isinstance(text, str) and has_surrogates(text):
        raise InvalidTextError(what, text)
