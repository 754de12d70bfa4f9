"""The facade: :class:`Memory` checks arguments and delegates to the stages.

Every CLI command and MCP tool calls one method of a Memory or of one of its parts
(``extraction``, ``browse``, ``admin``; they share one connection and lock). Stage modules are
imported when a method first needs them, so opening a store or importing localmem stays fast.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

from .admin import Admin
from .browse import Browse
from .config import DEFAULT_AGENT_STEPS, DEFAULT_RECENT, DEFAULTS, Config, Key, StoreURL, as_key, as_location
from .errors import StoreNotFoundError
from .extraction import Extraction
from .models.factory import Models, for_store
from .serial import one_at_a_time
from .store.engine import Store
from .text.files import check_namespace
from .types import AddedMessage

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11

    from .answer.profile import Profile
    from .models.protocols import LLM, Embedder, Reranker
    from .pipeline.importing import ImportArgs
    from .pipeline.ingest import IngestReport
    from .retrieval.batch import SearchArgs
    from .retrieval.search import SearchParams
    from .store import results
    from .store.forget import Target
    from .store.handle import Handle
    from .types import Answer, Hit

__all__ = ["Memory", "AddedMessage"]


@one_at_a_time
class Memory:
    """Long-term memory in one SQLite file, or in a PostgreSQL database (``path`` a
    ``postgresql://`` URL: see docs/postgres.md).

    >>> with Memory("memory.db", namespace="alice") as mem:
    ...     mem.add("Alice", "I moved to Berlin last week.")
    ...     hits = mem.search("Where does Alice live?")

    The models are built from the config on first use (:class:`~localmem.models.factory.Models`);
    ``embedder``, ``llm`` and ``reranker`` give ready-made ones instead, and ``models`` shares
    another Memory's (the backends are safe to use from several threads). ``create=False``
    refuses a path where there is no store yet (:class:`~localmem.errors.StoreNotFoundError`)
    instead of creating one; ``created`` says whether this one was created.

    Its parts: ``extraction`` (:class:`~localmem.extraction.Extraction`: episodes and what the
    LLM learns from them), ``browse`` (:class:`~localmem.browse.Browse`: what was remembered)
    and ``admin`` (:class:`~localmem.admin.Admin`: export, restore, vacuum, encryption).

    Threads and processes: the calls of one Memory (its parts' too) run one at a time; give
    each thread its own Memory to read while another writes (see :mod:`localmem.serial`).
    After :meth:`close`, every call raises :class:`~localmem.errors.LocalmemError`.

    ``key``: the passphrase of an encrypted store (a string, or a :class:`~localmem.config.Key`);
    a new store opened with one is encrypted from its first page. Without it, the variable the
    config's ``key_env`` names is read. Encryption needs ``pip install 'localmem[encrypt]'``.
    """

    def __init__(
        self,
        path: "str | Path | StoreURL | None" = None,
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
        from .store.handle import Handle

        cfg = config or Config()
        cfg = replace(cfg, db_path=as_location(path)) if path is not None else cfg
        cfg = replace(cfg, namespace=namespace) if namespace is not None else cfg
        check_namespace(cfg.namespace)
        self.path, self.namespace = cfg.resolved_db_path(), cfg.namespace
        self.created = str(self.path) != ":memory:" and not self.path.exists()
        if self.created and not create:
            raise StoreNotFoundError(str(self.path))
        self._store: Handle = Handle(self.path, cfg.busy_timeout_ms, as_key(key) if key is not None else cfg.key())
        if models is None and embedder is None:  # the store's own embedder, unless one is chosen
            cfg = for_store(cfg, self._store.conn.get_meta("embed_model_id"))
        self.config = cfg
        self.models = models or Models(cfg, llm=llm, embedder=embedder, reranker=reranker)
        self._lock = self._store.lock
        self._names = SpeakerNames()  # kept between searches (see retrieval.batch.SpeakerNames)
        self.extraction = Extraction(self._store, cfg, self.models, self.namespace, self._twin)
        self.browse = Browse(self._store, self.namespace)
        self.admin = Admin(self._store, cfg, self.models)

    # -- lifecycle -------------------------------------------------------------
    @property
    def conn(self) -> "Store":
        """The open store (a :class:`~localmem.store.engine.Store`: for the stage functions and tests)."""
        return self._store.conn

    def close(self) -> None:
        """Close the store (a second close does nothing); with background extraction on, first
        extract what is left (as :meth:`Extraction.flush` does), waiting for it."""
        self.extraction.stop()
        self._store.close()

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
        return self._store.locked()  # see localmem.serial

    def _twin(self) -> "Memory":
        """Another Memory on this store, with its own connection (for background extraction)."""
        return Memory(config=self.config, models=self.models, key=self._store.key)

    # -- storing messages ----------------------------------------------------------
    def ingest(self, path: str | Path, *, namespace: str | None = None, **args: Unpack["ImportArgs"]) -> "IngestReport":
        """Ingest a file, a folder or .zip of them (every file it recognises; the others are
        listed in the report's ``not_read``), or ``"-"`` for standard input, in a format of
        docs/formats.md (ChatGPT, Claude.ai, WhatsApp, Slack, Discord, notes, LoCoMo…),
        detected unless ``format`` is given.

        Re-ingesting the same input is a no-op; an edited file adds only its new messages. LoCoMo
        samples each go to the namespace named by their ``sample_id`` unless ``namespace`` is
        given. ``date_order`` ("day-first", "month-first") overrides how WhatsApp dates are
        read. ``progress(done, total)`` is called after every batch. ``consolidate`` (with
        ``extract="llm"``): "off", "fast" or "full" predict–calibrate knowledge (default from
        the config). ``workers``: episodes extracted at once against a model server (default
        ``llm_workers``). ``source_name``: the name to store the input under instead of its
        path (a copy's original name: what the web page's upload was called).
        """
        from .pipeline import importing

        return importing.ingest_input(
            self.conn, self.models, self.config, self.namespace, path, self._locked, into=namespace, **args
        )

    # -- the owner ("I") ---------------------------------------------------------------
    def owner(self) -> "results.Owner":
        """Who "I" is in this namespace: the names the owner goes by as a speaker (set, or
        suggested by an import) and the messages that are theirs by role (the user of
        assistant chats). First-person questions ("where do I work?", "¿dónde vivo?") are about
        the owner's messages in every source."""
        from .store import owner

        return owner.owner(self.conn, self.namespace)

    def set_owner(self, names: Sequence[str] | str, *, add: bool = False) -> "results.Owner":
        """Set the names the owner goes by in this namespace (several names, one person: "Daniel
        Ruiz", "Dani"), replacing those there (``add``: keeping them). The user of assistant
        chats stays the owner whatever the names."""
        from .store import owner

        return owner.set_names(self.conn, self.namespace, [names] if isinstance(names, str) else list(names), add=add)

    def confirm_owner(self) -> "results.Owner":
        """Make the names an import suggested the owner's own (a later import does not change them)."""
        from .store import owner

        return owner.confirm(self.conn, self.namespace)

    def clear_owner(self) -> "results.Owner":
        """Forget the owner's names in this namespace."""
        from .store import owner

        return owner.clear(self.conn, self.namespace)

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
        thread (:meth:`Extraction.in_background <localmem.extraction.Extraction.in_background>`).
        """
        from .pipeline import importing

        added = importing.add_message(
            self.conn, self.models, self.config, self.namespace, speaker, text, time, role, conversation, id, meta
        )
        if added.added:
            self.extraction.after_add()
        return added

    def correct(self, item: str, text: str) -> AddedMessage:
        """Store ``text`` as a new message replacing message ``item`` (``m:ID``; when it was
        corrected before, its newest correction is the one replaced). The old message stays,
        marked replaced; search and ask show the correction first. The correction takes the
        old message's place: speaker, role, time, conversation, metadata and source."""
        from .pipeline import importing

        done = importing.correct_message(self.conn, self.models, self.config, self.namespace, item, text)
        self.extraction.after_add()
        return done

    # -- search ------------------------------------------------------------------
    def search(self, query: str, *, max_tokens: int | None = None, **args: Unpack["SearchArgs"]) -> list["Hit"]:
        """The best hits for ``query`` in this namespace (no LLM involved), shaped by ``args``:
        ``k`` (default 10), ``recipe``, ``channels``, ``promote``, ``rerank``, ``budget`` and
        the filters ``since``, ``until``, ``speaker``, ``conversation`` and ``meta`` (see
        :class:`~localmem.retrieval.batch.SearchArgs`). ``max_tokens``: keep whole hits in
        rank order while their text fits, counted by :meth:`token_counter`.

        >>> mem.search("Where does Alice live?", k=5, since="2024-01-01", speaker="Alice")
        """
        from .retrieval.search import fit_budget

        hits = next(iter(self.search_many([query], **args)))
        return fit_budget(hits, max_tokens, self.token_counter()[0]) if max_tokens is not None else hits

    def search_many(
        self, queries: Iterable[str], *, batch: int = 64, **args: Unpack["SearchArgs"]
    ) -> Iterator[list["Hit"]]:
        """Search many queries in one process, embedding them ``batch`` at a time; yields the
        hits per query. ``args``: as in :meth:`search`."""
        from .retrieval import batch as batch_mod

        yield from batch_mod.search_many(
            self.conn, self.namespace, self.models, queries, self.search_params(**args), batch, names=self._names
        )

    def search_params(self, *, now: dt.date | None = None, **args: Unpack["SearchArgs"]) -> "SearchParams":
        """The checked search parameters ``args`` ask for (as in :meth:`search`), on top of
        the config's, counting relative times from ``now``."""
        from .retrieval import batch as batch_mod
        from .retrieval.search import SearchParams

        return batch_mod.checked_params(SearchParams.from_config(self.config), now, **args)

    def recent(self, n: int = DEFAULT_RECENT) -> list["Hit"]:
        """The ``n`` latest messages of this namespace, oldest first."""
        from .retrieval.hits import latest_messages

        return latest_messages(self.conn, self.namespace, n)

    # -- answers -----------------------------------------------------------------
    def ask(
        self,
        question: str,
        *,
        mode: str = "fast",
        now: dt.date | str | None = None,
        max_tokens: int | None = None,
        steps: int = DEFAULT_AGENT_STEPS,
        trace: Callable[[Any], None] | None = None,
        on_text: Callable[[str], None] | None = None,
        on_progress: Callable[[str, str], None] | None = None,
        **args: Unpack["SearchArgs"],
    ) -> "Answer":
        """Answer ``question`` from this namespace's memory, with the messages it rests on,
        or refuse (``refused=True``, answer "not in memory") when the memory does not say.

        ``fast`` (REMem-S): one search (shaped by ``args``, as in :meth:`search`; ``k``
        defaults to ``config.ask_candidates``), then one LLM call over the best hits that fit
        ``max_tokens`` (default ``config.ask_max_tokens``), given to the model in time order.
        ``now``: the date relative questions count from (default: the latest message time).
        ``as_of`` (a date or time): answer with what was known then: only what was said up to
        it is searched, and "now" is that day ("where did I live?" as of 2024-03-01).

        ``agentic`` (REMem-I + MRAgent): at most ``steps`` tool calls chosen by the model
        (semantic and lexical retrieval with time filters, episode context, entity → tag →
        units with ordering and counts), then one answer call over the evidence it kept;
        ``trace`` receives each step. It takes no filters. ``on_text`` receives the answer
        text as it is generated.

        ``on_progress(stage, words)`` is told each stage as it starts (:mod:`localmem.progress`:
        "assemble" the model from its packages, once a machine; "load" it; "search" memory;
        "answer"), for a caller that shows what a first, slow answer is waiting for.
        """
        from .answer import pipeline

        return pipeline.ask_question(
            self.conn,
            self.namespace,
            self.models,
            self.config,
            question,
            args,
            mode=mode,
            now=now,
            steps=steps,
            max_tokens=max_tokens,
            trace=trace,
            on_text=on_text,
            on_progress=on_progress,
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

        return pipeline.answer_from(
            self.conn, self.namespace, self.models, self.config, question, evidence, now, on_text=on_text
        )

    def profile(self, name: str, *, namespace: str | None = None, summary: bool = False) -> "Profile":
        """A person's timeline (the episodes they are in, in time order, with their role) and
        what memory knows about them, grouped by aspect, current statements first.

        ``summary``: also a few sentences written by the model from that knowledge, stored
        with the person and rewritten only when what it rests on has changed."""
        from .answer import profile as profile_mod

        return profile_mod.profile(self.conn, namespace or self.namespace, name, self.models if summary else None)

    # -- the namespace ---------------------------------------------------------------
    def stats(self) -> "results.Stats":
        """Counts for this namespace and the store; with background extraction on, also what
        it has done (``background_extraction``: builds, episodes, failures, the last error)."""
        from .store import manage

        return replace(
            manage.stats(self.conn, self.namespace, self.path), background_extraction=self.extraction.status()
        )

    def namespaces(self) -> list["results.NamespaceSummary"]:
        """The namespaces in the store, with their counts."""
        from .store import manage

        return manage.namespaces(self.conn)

    def require_namespace(self) -> None:
        """Raise :class:`~localmem.errors.UnknownNamespaceError`, listing the namespaces there
        are, unless the store holds this one (a new store's default namespace is fine)."""
        from .store import manage

        manage.require_namespace(self.conn, self.namespace, DEFAULTS.namespace, self.path)

    def forget(self, *, dry_run: bool = False, **target: Unpack["Target"]) -> "results.ForgetResult":
        """Delete exactly one target, with what rests only on it, so that none of it is left in
        the store's file (its WAL included).

        The target (see :class:`~localmem.store.forget.Target`): ``ids`` (``m:ID`` messages,
        ``u:ID`` units), a ``conversation``, the messages said ``before`` a date or time, what
        contains ``match``, a source (``source_id``), or a whole ``namespace``. A unit resting
        only on deleted messages goes with them; one that also rests on other messages stays
        (``kept_units``). Returns what went (or, with ``dry_run``, would go): see
        :class:`~localmem.store.results.ForgetResult`.

        >>> mem.forget(ids=["m:12"], dry_run=True).counts
        """
        from .store import forget

        return forget.forget(self.conn, self.path, self.namespace, dry_run=dry_run, **target)
