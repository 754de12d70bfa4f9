"""The facade: :class:`Memory` orchestrates the stages; every CLI command calls one method."""

from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from . import answer as answer_mod
from . import (
    browse,
    db,
    extract,
    formats,
    ingest,
    link,
    manage,
    resolve,
    search,
    segment,
    transfer,
)
from . import channels as channels_mod
from . import consolidate as consolidate_mod
from . import profile as profile_mod
from .config import Config
from .embed import Embedder, embed_batched
from .errors import ConfigError, LocalmemError
from .ingest import IngestReport
from .llm import LLM, Structured
from .queries import q
from .search import Hit, SearchParams
from .times import parse_timestamp, to_iso

__all__ = ["Memory", "Hit", "IngestReport", "AddedMessage"]

EXTRACT_MODES = ("none", "llm")


@dataclass(frozen=True)
class AddedMessage:
    id: int
    external_id: str
    conversation: str
    added: bool


class Memory:
    """Long-term memory in one SQLite file.

    >>> with Memory("memory.db", namespace="alice") as mem:
    ...     mem.add("Alice", "I moved to Berlin last week.")
    ...     hits = mem.search("Where does Alice live?")

    ``embedder`` overrides the configured one (tests pass a fake); otherwise the
    embedder is resolved and loaded on first use.
    """

    def __init__(self, path: str | Path | None = None, namespace: str | None = None, *,
                 config: Config | None = None, embedder: Embedder | None = None,
                 llm: LLM | None = None, reranker: Any = None) -> None:
        cfg = config or Config()
        if path is not None:
            cfg = replace(cfg, db_path=Path(path))
        if namespace is not None:
            cfg = replace(cfg, namespace=namespace)
        if not cfg.namespace or not cfg.namespace.strip():
            raise LocalmemError("the namespace must be a non-empty name")
        self.config = cfg
        self.path = cfg.resolved_db_path()
        self.namespace = cfg.namespace
        self._embedder = embedder
        self._llm = llm
        self._counter: tuple[Callable[[str], int], str] | None = None
        self._reranker: Any = reranker
        self.conn = db.connect(self.path, cfg.busy_timeout_ms)

    # -- lifecycle -------------------------------------------------------------
    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None  # type: ignore[assignment]

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def embedder(self) -> Embedder:
        """The embedder, resolved and loaded on first use."""
        if self._embedder is None:
            from .backends.onnx_embed import OnnxEmbedder
            from .models import resolve_embedder

            found = resolve_embedder(self.config)
            self._embedder = OnnxEmbedder(found.model_path, found.tokenizer_path, found.model_id,
                                          found.max_tokens, self.config.onnx_threads)
        return self._embedder

    @property
    def llm(self) -> LLM:
        """The local LLM, resolved and loaded on first use."""
        if self._llm is None:
            from .backends.llama import LlamaLLM
            from .config import home_dir, user_cache_dir
            from .models import resolve_llm

            cache = home_dir() or user_cache_dir()
            found = resolve_llm(self.config, cache)
            self._llm = LlamaLLM(found.path, found.model_id, n_ctx=self.config.n_ctx,
                                 n_threads=self.config.n_threads, n_gpu_layers=self.config.n_gpu_layers,
                                 flash_attn=self.config.flash_attn,
                                 chat_format=self.config.chat_format or found.chat_format,
                                 lock=cache / "llm.lock")
        return self._llm

    def _locked(self):
        return db.busy_as_locked(str(self.path))

    # -- ingest ------------------------------------------------------------------
    def ingest(self, path: str | Path, *, format: str | None = None, conversation: str | None = None,
               namespace: str | None = None, extract: str | None = None, consolidate: str | None = None,
               progress: Callable[[int, int], None] | None = None) -> IngestReport:
        """Ingest a file (LoCoMo JSON, JSONL, chat JSON or text transcript).

        Re-ingesting the same file is a no-op. LoCoMo samples each go to the
        namespace named by their ``sample_id`` unless ``namespace`` is given.
        ``progress(done, total)`` is called after every batch. ``consolidate`` (with
        ``extract="llm"``): "off", "fast" or "full" predict–calibrate knowledge (default from
        the config).
        """
        extract = extract or self.config.extract
        if extract not in EXTRACT_MODES:
            raise LocalmemError(f"--extract {extract} is unknown; use one of: "
                                f"{', '.join(EXTRACT_MODES)}")
        consolidate = _consolidate_mode(consolidate or self.config.consolidate)
        file = Path(path)
        if format is not None and format not in formats.FORMATS:
            raise formats.UnknownFormatError(
                file, f"unknown format '{format}'; use one of {', '.join(formats.FORMATS)}")
        data = formats.read_input(file)
        parsed = formats.parse(file, data, format, conversation, self.config.max_message_chars)
        embedder = self.embedder
        _ = embedder.dim  # load the model before anything is written
        total, done = parsed.message_count, 0

        def step(n: int) -> None:
            nonlocal done
            done += n
            if progress:
                progress(done, total)

        if extract == "llm":
            _ = self.llm.model_id  # resolve the model before anything is written
        with self._locked():
            report = ingest.store_parsed(
                self.conn, embedder, parsed, namespace=namespace or self.namespace,
                force_namespace=namespace is not None, kind=parsed.format, uri=str(file.resolve()),
                sha256=ingest.sha256_bytes(data), batch=self.config.ingest_batch,
                embed_batch=self.config.embed_batch, progress=step)
        if extract == "llm":
            report.build = {nsr.namespace: self.build(namespace=nsr.namespace, progress=progress,
                                                      consolidate=consolidate).to_dict()
                            for nsr in report.namespaces}
        else:
            report.episodes = {nsr.namespace: self.segment_without_llm(nsr.namespace)
                               for nsr in report.namespaces}
        return report

    def segment_without_llm(self, namespace: str | None = None, *, final: bool = True) -> int:
        """Close episodes by time gaps and drops in embedding similarity (no LLM); their
        extraction waits for a later ``build`` with a model. Returns the episodes closed."""
        ns = namespace or self.namespace
        detector = segment.EmbeddingDetector(segment.stored_vectors(self.conn, self.embedder.dim))
        with self._locked():
            return len(segment.segment_namespace(self.conn, ns, detector, final=final))

    def build(self, *, namespace: str | None = None, final: bool = True,
              progress: Callable[[int, int], None] | None = None,
              consolidate: str | None = None) -> "BuildReport":
        """Segment unassigned messages into episodes, extract each closed episode, then
        consolidate them (``consolidate``: "off", "fast", "full"; default from the config).

        Resumable: each episode is one transaction, so an interrupted build redoes
        at most the episode it was in. ``final=False`` leaves the open buffer open.
        """
        ns = namespace or self.namespace
        consolidate = _consolidate_mode(consolidate or self.config.consolidate)
        report = BuildReport()
        llm, embedder = self.llm, self.embedder
        log = _CallLog(self.conn, ns, llm.model_id)
        t0 = time.perf_counter()
        detector = segment.LLMDetector(llm, log=log)
        with self._locked():
            segment.segment_namespace(self.conn, ns, detector, final=final)
        report.seconds["segment"] = round(time.perf_counter() - t0, 2)
        todo = self.conn.execute(q("episodes_at_stage"), {"ns": ns, "stage": "segmented"}).fetchall()
        t0 = time.perf_counter()
        for done, (episode_id, conversation) in enumerate(todo, 1):
            rows = self.conn.execute(q("episode_messages"), {"episode_id": episode_id}).fetchall()
            msgs = [extract.EpisodeMessage(mid, sp, tx, at, json.loads(a) if a else None)
                    for mid, sp, tx, at, a, _e in rows]
            result = extract.call(llm, msgs)
            log.episode_id = episode_id
            extraction = extract.interpret(result.data, msgs) if result.ok else None
            checked = None
            if extraction is not None and self.config.verify_facts > 0 and hasattr(llm, "judge"):
                checked = extract.verify(llm, extraction, msgs, self.config.verify_facts)  # type: ignore[arg-type]
            resolve_calls: list[dict[str, Any]] = []  # logged in the episode's transaction below
            decided: dict[str, int | None] = {}
            if extraction is not None:
                cases = extract.borderline(self.conn, ns, msgs, extraction)
                decided = resolve.decide(self.conn, llm, cases, log=lambda **kw: resolve_calls.append(kw))
            with self._locked(), self.conn:
                log(stage="extract", prompt_version=extract.prompt.VERSION, result=result)
                if checked is not None:
                    log(stage="verify", prompt_version=extract.verify_prompt.VERSION, result=checked)
                if extraction is None:
                    self.conn.execute(q("episode_set_stage"), {"id": episode_id, "stage": "failed"})
                    report.failed += 1
                    continue
                for entry in resolve_calls:
                    log(**entry)
                stored = extract.store(self.conn, ns, episode_id, conversation, msgs, extraction,
                                       embedder, llm.model_id, decided)
                links = link.link_episode(self.conn, ns, episode_id, conversation, stored.rows,
                                          link.LinkConfig())
            report.episodes += 1
            report.entities += stored.entities_new
            for kind, n in stored.units.items():
                report.units[kind] = report.units.get(kind, 0) + n
            for kind, n in links.items():
                report.links[kind] = report.links.get(kind, 0) + n
            if progress:
                progress(done, len(todo))
        report.seconds["extract"] = round(time.perf_counter() - t0, 2)
        if consolidate != "off":
            done_report = self._consolidate(ns, consolidate, log, progress)
            report.consolidation = done_report.to_dict()
            report.seconds["consolidate"] = done_report.seconds
        report.llm = [dict(zip(("stage", "calls", "prompt_tokens", "completion_tokens", "seconds",
                                "failures"), row))
                      for row in self.conn.execute(q("llm_call_totals"), {"ns": ns})]
        return report

    def consolidate(self, *, namespace: str | None = None, mode: str = "fast",
                    progress: Callable[[int, int], None] | None = None) -> "consolidate_mod.Report":
        """Predict–calibrate every extracted episode not consolidated yet, oldest first:
        lasting knowledge about people as ``knowledge`` units, changes as ``supersedes`` links.
        ``mode``: "fast" (one call per episode) or "full" (predict, then calibrate)."""
        mode = _consolidate_mode(mode)
        if mode == "off":
            raise LocalmemError("consolidate needs a mode: fast or full")
        ns = namespace or self.namespace
        return self._consolidate(ns, mode, _CallLog(self.conn, ns, self.llm.model_id), progress)

    def _consolidate(self, ns: str, mode: str, log: "_CallLog",
                     progress: Callable[[int, int], None] | None) -> "consolidate_mod.Report":
        return consolidate_mod.consolidate_namespace(self.conn, self.llm, self.embedder, ns, mode, log,
                                                     self._locked, progress, self.config.verify_facts)

    def profile(self, name: str, *, namespace: str | None = None, summary: bool = False) -> "profile_mod.Profile":
        """A person's timeline (the episodes they are in, in time order, with their role) and
        what memory knows about them, grouped by aspect, current statements first.

        ``summary``: also a few sentences written by the model from that knowledge, stored
        with the person and rewritten only when what it rests on has changed."""
        ns = namespace or self.namespace
        prof = profile_mod.profile(self.conn, ns, name)
        basis = profile_mod.stale_summary(self.conn, prof) if summary else None
        if basis is not None:
            llm = self.llm
            with self._locked():
                profile_mod.write_summary(self.conn, llm, prof, basis, db.now_iso())
        return prof

    def add(self, speaker: str, text: str, time: str | dt.datetime | None = None,
            role: str | None = None, conversation: str | None = None,
            id: str | None = None) -> AddedMessage:
        """Append one message; it is searchable when this returns.

        ``time`` defaults to now (local time). A message whose ``id`` is already
        stored in the conversation is not added again.
        """
        if not isinstance(speaker, str) or not speaker.strip():
            raise LocalmemError("add() needs a non-empty speaker")
        if not isinstance(text, str):
            raise LocalmemError("add() needs the message text as a string")
        if len(text) > self.config.max_message_chars:
            raise LocalmemError(f"the message has {len(text):,} characters, over the limit of "
                                f"{self.config.max_message_chars:,}")
        when = time if time is not None else dt.datetime.now()
        try:
            sent_at = to_iso(when) if isinstance(when, dt.datetime) else parse_timestamp(when)
        except ValueError as exc:
            raise LocalmemError(f"add(): {exc}") from exc
        message = formats.MessageIn(
            conversation=conversation or "default", session="", seq=0, external_id=id or "",
            speaker=speaker.strip(), text=text, role=role, sent_at=sent_at,
            raw={"speaker": speaker, "text": text, "time": sent_at, "role": role})
        with self._locked():
            message_id, added = ingest.add_message(self.conn, self.embedder, self.namespace, message)
        if added and self.config.extract == "llm":
            self.build(final=False)  # closes and extracts an episode only at a boundary or the cap
        elif added:
            self.segment_without_llm(final=False)  # as a batch ingest would, minus the open buffer
        return AddedMessage(message_id, message.external_id, message.conversation, added)

    # -- search ------------------------------------------------------------------
    def search(self, query: str, *, k: int = 10, budget: int | None = None,
               channels: Sequence[str] | None = None, promote: bool = False,
               max_tokens: int | None = None, rerank: str = "auto") -> list[Hit]:
        """The ``k`` best hits for ``query`` in this namespace (no LLM involved).

        ``promote``: move candidates from the best-matching episodes (for the query's people
        and time) ahead, keeping their order (CAST). ``max_tokens``: keep whole hits in rank
        order while their text fits, counted by :meth:`token_counter`.
        """
        hits = next(iter(self.search_many([query], k=k, budget=budget, channels=channels, promote=promote,
                                          rerank=rerank)))
        if max_tokens is not None:
            hits = search.fit_budget(hits, max_tokens, self.token_counter()[0])
        return hits

    def ask(self, question: str, *, mode: str = "fast", now: dt.date | str | None = None,
            k: int | None = None, max_tokens: int | None = None,
            channels: Sequence[str] | None = None, promote: bool = False,
            messages_only: bool = False, full_context: bool = False, steps: int = 4,
            trace: Callable[[Any], None] | None = None,
            on_text: Callable[[str], None] | None = None) -> "answer_mod.Answer":
        """Answer ``question`` from this namespace's memory, with the messages it rests on,
        or refuse (``refused=True``, answer "not in memory") when the memory does not say.

        ``fast`` (REMem-S): one search, then one LLM call over the best hits that fit
        ``max_tokens`` (default ``config.ask_max_tokens``), given to the model in time order.
        ``now``: the date relative questions count from (default: the latest message time).
        ``messages_only``: search raw messages alone (the plain hybrid baseline).
        ``full_context``: no search; the newest messages that fit the model's context window
        (the full-context baseline).

        ``agentic`` (REMem-I + MRAgent): at most ``steps`` tool calls chosen by the model
        (semantic and lexical retrieval with time filters, episode context, entity → tag →
        units with ordering and counts), then one answer call over the evidence it kept;
        ``trace`` receives each step. ``on_text`` receives the answer text as it is generated.
        """
        if mode not in ("fast", "agentic"):
            raise LocalmemError(f"unknown ask mode {mode!r}; available: fast, agentic")
        if not 1 <= steps <= 10:
            raise LocalmemError("steps must be between 1 and 10")
        if not isinstance(question, str) or not question.strip():
            raise LocalmemError("ask() needs a non-empty question")
        try:
            today = dt.date.fromisoformat(now[:10]) if isinstance(now, str) else now
        except ValueError as exc:
            raise LocalmemError(f"--now must be a date like 2023-05-08, got {now!r}") from exc
        started = time.perf_counter()
        today = today or channels_mod.latest_time(self.conn, self.namespace)
        if mode == "agentic":
            return self._ask_agentic(question.strip(), today, steps, trace, started, on_text)
        count = self.token_counter()[0]
        speakers = self._speakers()
        pool: list[Hit] = []
        if full_context:
            budget = answer_mod.context_budget(self.config.n_ctx, count, question)
            hits = answer_mod.recent_messages(self.conn, self.namespace, budget, count)
        else:
            params = replace(self.search_params(k or self.config.ask_candidates, channels=channels,
                                                promote=promote), now=today, messages_only=messages_only)
            hits = next(iter(self._search_batch([question], params, db.has_vectors(self.conn))))
            if self.config.ask_evidence == "messages":
                hits = answer_mod.as_messages(self.conn, hits)
            pool = hits
            if self.config.ask_focus:
                hits = answer_mod.focus(question, hits, speakers)
            hits = search.fit_budget(hits, max_tokens or self.config.ask_max_tokens, count)
        searched = time.perf_counter() - started
        llm = self.llm if hits else None  # nothing found: refuse without loading a model
        result = answer_mod.answer(self.conn, llm, question.strip(), hits, today, on_text,
                                   speakers if self.config.ask_check else {}, pool,
                                   dates=self.config.ask_dates)
        result.timings["search"] = round(searched, 3)
        result.timings["total"] = round(time.perf_counter() - started, 3)
        return result

    def _speakers(self) -> dict[str, list[str]]:
        """The namespace's speakers, each with the names they go by (their own first, then
        the aliases of the person entity with their name: "Mel" for Melanie)."""
        out: dict[str, list[str]] = {row[0]: [row[0]] for row in
                                     self.conn.execute(q("namespace_speakers"), {"ns": self.namespace})}
        for speaker, alias in self.conn.execute(q("namespace_speaker_aliases"), {"ns": self.namespace}):
            if alias.lower() not in (n.lower() for n in out[speaker]):
                out[speaker].append(alias)
        return out

    def _ask_agentic(self, question: str, today: dt.date, steps: int, trace: Callable[[Any], None] | None,
                     started: float, on_text: Callable[[str], None] | None) -> "answer_mod.Answer":
        from . import agent

        bound = db.has_vectors(self.conn)

        def retrieve(query: str, channels: Sequence[str], k: int) -> list[Hit]:
            params = replace(self.search_params(k, channels=channels), now=today)
            return next(iter(self._search_batch([query], params, bound)))

        tools = agent.Tools(self.conn, self.namespace, retrieve, self._speakers())
        result = agent.run(tools, self.llm, question, today, steps=steps, trace=trace, on_text=on_text,
                           dates=self.config.ask_dates)
        result.timings["total"] = round(time.perf_counter() - started, 3)
        return result

    @property
    def reranker(self) -> Any:
        """The configured cross-encoder (loaded on first use), or ``None`` when none is set."""
        if self._reranker is None and self.config.rerank_model is not None:
            if self.config.rerank_tokenizer is None:
                raise ConfigError("a rerank model needs its tokenizer.json too "
                                  "(--rerank-tokenizer or LOCALMEM_RERANK_TOKENIZER)")
            from .backends.onnx_rerank import OnnxCrossEncoder

            path = Path(self.config.rerank_model)
            self._reranker = OnnxCrossEncoder(path, Path(self.config.rerank_tokenizer), f"onnx:{path.name}",
                                              threads=self.config.onnx_threads)
        return self._reranker

    def token_counter(self) -> tuple[Callable[[str], int], str]:
        """How budgets are counted, and by what: the LLM's tokenizer when a model is installed
        (its vocabulary only is loaded), else the embedder's, else about 4 characters a token."""
        if self._counter is None:
            self._counter = self._make_counter()
        return self._counter

    def _make_counter(self) -> tuple[Callable[[str], int], str]:
        if self._llm is not None:  # given by the caller: use it or nothing model-wide
            if hasattr(self._llm, "count_tokens"):
                return self._llm.count_tokens, f"llm:{self._llm.model_id}"
        else:
            from .backends.llama import LlamaTokenCounter
            from .config import home_dir, user_cache_dir
            from .models import resolve_llm

            try:
                found = resolve_llm(self.config, home_dir() or user_cache_dir())
                counter = LlamaTokenCounter(found.path)
                counter.count_tokens("probe")
                return counter.count_tokens, f"llm:{found.model_id}"
            except LocalmemError:
                pass
        embedder = self.embedder
        if hasattr(embedder, "count_tokens"):
            return embedder.count_tokens, f"embedder:{embedder.model_id}"
        return (lambda text: len(text) // 4 + 1), "approximate:4-characters"

    def search_many(self, queries: Iterable[str], *, k: int = 10, budget: int | None = None,
                    channels: Sequence[str] | None = None, batch: int = 64,
                    promote: bool = False, rerank: str = "auto",
                    messages_only: bool = False) -> Iterator[list[Hit]]:
        """Search many queries in one process, embedding them in batches; yields per query.

        ``rerank``: "auto" uses the configured cross-encoder if any, "none" keeps the fusion
        order, "llm" asks the local LLM whether each of the top candidates is relevant (slow).
        ``messages_only``: whole raw messages by vector and BM25 alone (no units, no sentence
        parts, no other channel): the plain hybrid baseline, on any store.
        """
        params = self.search_params(k, budget, channels, promote, rerank)
        if messages_only:
            params = replace(params, channels=("vector", "bm25"), messages_only=True, promote=False)
        bound = db.has_vectors(self.conn)
        pending: list[str] = []
        for query in queries:
            pending.append(query)
            if len(pending) >= batch:
                yield from self._search_batch(pending, params, bound)
                pending = []
        if pending:
            yield from self._search_batch(pending, params, bound)

    def search_params(self, k: int = 10, budget: int | None = None,
                      channels: Sequence[str] | None = None, promote: bool = False,
                      rerank: str = "auto") -> SearchParams:
        chosen = tuple(channels) if channels else search.CHANNELS
        unknown = set(chosen) - set(search.ALL_CHANNELS)
        if unknown:
            raise LocalmemError(f"unknown channel(s) {', '.join(sorted(unknown))}; "
                                f"available: {', '.join(search.ALL_CHANNELS)}")
        if k < 1:
            raise LocalmemError("k must be at least 1")
        if rerank not in ("auto", "none", "llm"):
            raise LocalmemError(f"unknown rerank mode {rerank!r}; use auto, none or llm")
        return SearchParams(k=k, budget=max(budget or self.config.channel_budget, k),
                            rrf_k=self.config.rrf_k, channels=chosen, promote=promote, rerank=rerank)

    def _search_batch(self, queries: list[str], params: SearchParams, bound: bool) -> Iterator[list[Hit]]:
        vectors: np.ndarray | list[None] = [None] * len(queries)
        if bound and ({"vector", "temporal", "graph"} & set(params.channels) or params.promote):
            embedder = self.embedder
            db.check_embedder(self.conn, embedder.model_id, embedder.dim)
            vectors = embed_batched(embedder, queries, self.config.embed_batch)
        reranker = None
        if params.rerank == "llm":
            from .rerank import LLMReranker

            try:
                reranker = LLMReranker(self.llm)
            except TypeError as exc:
                raise LocalmemError(f"--rerank llm: {exc}") from exc
        elif params.rerank == "auto":
            reranker = self.reranker
        for query, vec in zip(queries, vectors):
            with self._locked():
                yield search.search(self.conn, self.namespace, query, vec, params, reranker)

    # -- housekeeping --------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        """Counts for this namespace and the store."""
        return manage.stats(self.conn, self.namespace, self.path)

    def namespaces(self) -> list[dict[str, Any]]:
        return manage.namespaces(self.conn)

    def forget(self, *, namespace: str | None = None, source_id: int | None = None,
               dry_run: bool = False) -> dict[str, int]:
        """Delete a namespace or one source, and everything derived from it."""
        with self._locked():
            return manage.forget(self.conn, namespace=namespace, source_id=source_id, dry_run=dry_run)

    def sources(self) -> list[dict[str, Any]]:
        return manage.sources(self.conn, self.namespace)

    def export(self, out: IO[str], *, namespaces: Sequence[str] | None = None,
               vectors: bool = True) -> dict[str, int]:
        """Write the store (or some namespaces) as JSONL that :meth:`restore` reads back exactly."""
        return transfer.export(self.conn, out, namespaces=namespaces, vectors=vectors)

    def restore(self, path: str | Path) -> dict[str, int]:
        """Import an export file. Namespaces already in the store are refused, not merged."""
        with self._locked():
            return transfer.restore(self.conn, Path(path), embedder_factory=lambda: self.embedder)

    def reembed(self, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
        """Re-embed every message and unit with the configured embedder."""
        with self._locked():
            return manage.reembed(self.conn, self.embedder, self.config.embed_batch, progress)

    # -- what was remembered ---------------------------------------------------------
    def flush(self, progress: Callable[[int, int], None] | None = None) -> "BuildReport":
        """Close every open episode buffer and extract what was closed (streaming use)."""
        return self.build(final=True, progress=progress)

    def episodes(self, limit: int = 1000) -> list[dict[str, Any]]:
        return browse.episodes(self.conn, self.namespace, limit)

    def facts(self, *, entity: str | None = None, start: str | None = None, end: str | None = None,
              limit: int = 1000) -> list[dict[str, Any]]:
        """Facts in time order, optionally about ``entity`` and within ``start``..``end`` (ISO)."""
        return browse.facts(self.conn, self.namespace, entity=entity, start=start, end=end, limit=limit)

    def entities(self, limit: int = 1000) -> list[dict[str, Any]]:
        return browse.entities(self.conn, self.namespace, limit)

    def show(self, unit_id: int) -> dict[str, Any]:
        """One unit with its source messages, entities and links."""
        return browse.show(self.conn, unit_id)

    def doctor(self) -> dict[str, Any]:
        return manage.doctor(self.conn, self.config, self.path)


class _CallLog:
    """Records each structured LLM call: tokens, time and the raw reply (so a failure can be
    inspected and better rules can re-read what the model said without calling it again)."""

    def __init__(self, conn: Any, ns: str, model_id: str) -> None:
        self.conn, self.ns, self.model_id = conn, ns, model_id
        self.episode_id: int | None = None

    def __call__(self, *, stage: str, prompt_version: str, result: Structured) -> None:
        self.conn.execute(q("llm_call_log"), {
            "ns": self.ns, "episode_id": self.episode_id if stage != "segment" else None,
            "stage": stage, "prompt_version": prompt_version, "model_id": self.model_id,
            "calls": result.calls, "prompt_tokens": result.prompt_tokens,
            "completion_tokens": result.completion_tokens, "seconds": round(result.seconds, 3),
            "ok": int(result.ok), "error": result.error,
            "raw": json.dumps(result.raw, ensure_ascii=False),
            "created_at": db.now_iso()})


@dataclass
class BuildReport:
    """What turning raw messages into memory did, for the ingest summary."""

    episodes: int = 0
    failed: int = 0
    units: dict[str, int] = field(default_factory=dict)
    entities: int = 0
    links: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    llm: list[dict[str, Any]] = field(default_factory=list)
    consolidation: dict[str, Any] = field(default_factory=dict)  # empty when off

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _consolidate_mode(mode: str) -> str:
    if mode not in consolidate_mod.MODES:
        raise LocalmemError(f"--consolidate {mode} is unknown; use one of: {', '.join(consolidate_mod.MODES)}")
    return mode
