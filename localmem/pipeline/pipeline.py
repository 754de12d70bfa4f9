"""The per-episode loops that turn stored messages into memory, in pipeline order.

Stage 1 (:mod:`.formats` and :mod:`.ingest`) stores and indexes messages. Then, for a
namespace:

2. :mod:`.segment` closes episodes (with the LLM, or by time gaps and embedding drops);
3. :mod:`.extract` asks the LLM for each closed episode's narrative, events and entities;
4. :mod:`.resolve` maps the entities to the namespace's entities;
5. :mod:`.link` links the new units to each other and to older ones;
6. :mod:`.consolidate` learns lasting knowledge about people, episode by episode.

Each episode is one transaction: the model's work for it happens first, outside any write
(:func:`think`, then :func:`decide`), then everything it produced is stored at once
(:func:`store`). An interrupted build, or one a failing model server stops, leaves the store as
it was before the episode it was in, and a re-run resumes there. Against a model server,
several episodes' extraction calls run at once (:func:`in_order`); their entity decisions and
stores still follow one another in episode order.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass, field
from functools import partial
from itertools import islice
from typing import Any, Callable, ContextManager, Generic, Iterator, Sequence, TypeVar

from ..config import CONSOLIDATE_MODES, DEFAULTS, Config, check_choice
from ..errors import LocalmemError
from ..models.protocols import LLM, Embedder, Judge, ThreadSafe
from ..models.structured import Structured
from ..store.engine import Store, now_iso
from ..store.rows import all_rows
from . import consolidate as consolidate_mod
from . import extract, link, resolve, segment
from .ingest import IngestReport

Progress = Callable[[int, int], None]
T = TypeVar("T")
Locked = Callable[[], ContextManager[Any]]


@dataclass(frozen=True)
class ExtractOptions:
    """How a build runs (from :class:`~localmem.config.Config`, with the caller's overrides).

    ``consolidate``: "off", "fast" or "full" predict–calibrate after extraction
    (``consolidate``); ``verify``: the fact check's least P(yes), 0 for none
    (``verify_facts``); ``workers``: episodes extracted at once against a model server
    (``llm_workers``)."""

    consolidate: str = DEFAULTS.consolidate
    verify: float = 0.0  # off unless from_config (verify_facts): a bare ExtractOptions checks nothing
    workers: int = DEFAULTS.llm_workers

    @classmethod
    def from_config(
        cls, config: Config, *, consolidate: str | None = None, workers: int | None = None
    ) -> "ExtractOptions":
        """The options ``config`` sets, with ``consolidate`` and ``workers`` where given (checked)."""
        if workers is not None and workers < 1:
            raise LocalmemError(f"--workers must be at least 1, got {workers}")
        return cls(
            consolidate=check_choice("--consolidate", consolidate or config.consolidate, CONSOLIDATE_MODES),
            verify=config.verify_facts,
            workers=config.llm_workers if workers is None else workers,
        )


class CallLog:
    """Records each structured LLM call: tokens, time and the raw reply (so a failure can be
    inspected and better rules can re-read what the model said without calling it again)."""

    def __init__(self, conn: Store, ns: str, model_id: str) -> None:
        self.conn, self.ns, self.model_id = conn, ns, model_id
        self.episode_id: int | None = None

    def __call__(self, *, stage: str, prompt_version: str, result: Structured) -> None:
        self.conn.run(
            "llm_call_log",
            {
                "ns": self.ns,
                "episode_id": self.episode_id if stage != "segment" else None,
                "stage": stage,
                "prompt_version": prompt_version,
                "model_id": self.model_id,
                "calls": result.calls,
                "prompt_tokens": result.prompt_tokens,
                "completion_tokens": result.completion_tokens,
                "seconds": round(result.seconds, 3),
                "ok": int(result.ok),
                "error": result.error,
                "raw": json.dumps(result.raw, ensure_ascii=False),
                "created_at": now_iso(),
            },
        )


@dataclass
class ExtractionReport:
    """What turning raw messages into memory did, for the ingest summary."""

    episodes: int = 0
    failed: int = 0
    units: dict[str, int] = field(default_factory=dict)
    entities: int = 0
    links: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    llm: list[dict[str, Any]] = field(default_factory=list)
    consolidation: dict[str, Any] = field(default_factory=dict)  # empty when off
    workers: int = 1  # episodes extracted at once

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def segment_without_llm(conn: Store, embedder: Embedder, ns: str, locked: Locked, *, final: bool) -> int:
    """Stage 2 without a model: close episodes by time gaps and drops in embedding similarity;
    their extraction waits for a later build with a model. Returns the episodes closed."""
    detector = segment.EmbeddingDetector(segment.stored_vectors(conn, embedder.dim))
    with locked():
        return len(segment.segment_namespace(conn, ns, detector, final=final))


def process_ingested(
    conn: Store,
    embedder: Embedder,
    llm: LLM | None,
    report: IngestReport,
    options: ExtractOptions,
    locked: Locked,
    progress: Progress | None = None,
) -> IngestReport:
    """Stages 2 to 6 for each namespace an ingest stored messages in (``report``): with an
    ``llm``, extract them (:func:`extract_episodes`, their reports in ``report.build``);
    without, close episodes by time and similarity (:func:`segment_without_llm`, the counts
    in ``report.episodes``)."""
    names = [nsr.namespace for nsr in report.namespaces]
    if llm is not None:
        report.build = {
            ns: extract_episodes(conn, llm, embedder, ns, locked, options, final=True, progress=progress).to_dict()
            for ns in names
        }
    else:
        report.episodes = {ns: segment_without_llm(conn, embedder, ns, locked, final=True) for ns in names}
    conn.after_bulk_write(sum(nsr.added for nsr in report.namespaces))
    return report


@dataclass
class Thought:
    """The model's work on one episode, before anything of it is stored."""

    episode_id: int
    conversation: str
    messages: list[extract.EpisodeMessage]
    result: Structured  # the extraction call
    extraction: extract.Extraction | None  # None: the reply stayed invalid
    checked: Structured | None = None  # the yes/no fact check, when it ran
    resolve_calls: list[dict[str, Any]] = field(default_factory=list)
    decided: dict[str, int | None] = field(default_factory=dict)


def episode_messages(conn: Store, episode_id: int) -> list[extract.EpisodeMessage]:
    rows = all_rows(conn.run("episode_messages", {"episode_id": episode_id}))
    return [extract.EpisodeMessage(mid, sp, tx, at, json.loads(a) if a else None) for mid, sp, tx, at, a, _e in rows]


def think(llm: LLM, episode_id: int, conversation: str, msgs: list[extract.EpisodeMessage], verify: float) -> Thought:
    """Stage 3's model calls for one episode: extraction, and the fact check of its events
    (``verify`` > 0, when the model can judge). Touches no store, so episodes can be thought
    about in parallel (:func:`in_order`)."""
    result = extract.call(llm, msgs)
    thought = Thought(
        episode_id,
        conversation,
        msgs,
        result,
        extract.interpret(result.data, msgs) if result.data is not None else None,
    )
    if thought.extraction is not None and verify > 0 and isinstance(llm, Judge):
        thought.checked = extract.verify(llm, thought.extraction, msgs, verify)
    return thought


def decide(conn: Store, llm: LLM, ns: str, thought: Thought) -> None:
    """Stage 4's model call: the borderline entity decisions. It reads the entities earlier
    episodes stored, so it runs in episode order, after they are stored."""
    if thought.extraction is not None:
        cases = extract.borderline(conn, ns, thought.messages, thought.extraction)
        thought.decided = resolve.decide(conn, llm, cases, log=lambda **kw: thought.resolve_calls.append(kw))


def workers_for(llm: LLM, wanted: int) -> int:
    """How many episodes' model calls run at once: ``wanted`` against a model server, one for a
    backend that takes one call at a time (the in-process model)."""
    return max(1, wanted) if isinstance(llm, ThreadSafe) else 1


def in_order(jobs: Sequence[Callable[[], T]], workers: int) -> Iterator[T]:
    """Each job's result, in the jobs' order, with up to ``workers`` jobs running at once.

    A job's exception is raised when its turn comes, after every earlier result was taken.
    The threads are daemons: an interrupted build does not wait for calls still under way
    (their results are dropped; nothing of them was stored)."""
    if workers <= 1:
        for job in jobs:
            yield job()
        return
    running: deque[_Running[T]] = deque()
    queued = iter(jobs)
    for job in islice(queued, workers):
        running.append(_Running(job))
    while running:
        value = running.popleft().result()
        nxt = next(queued, None)
        if nxt is not None:  # started before this result is used: the server stays busy
            running.append(_Running(nxt))
        yield value


class _Running(Generic[T]):
    """One job in a daemon thread."""

    def __init__(self, job: Callable[[], T]) -> None:
        self._done = threading.Event()
        self._value: Any = None
        self._error: BaseException | None = None
        threading.Thread(target=self._run, args=(job,), daemon=True).start()

    def _run(self, job: Callable[[], T]) -> None:
        try:
            self._value = job()
        except BaseException as exc:  # raised in the consuming thread, in order
            self._error = exc
        finally:
            self._done.set()

    def result(self) -> T:
        while not self._done.wait(0.5):  # a bounded wait keeps Ctrl-C responsive
            pass
        if self._error is not None:
            raise self._error
        return self._value


def store(
    conn: Store,
    ns: str,
    thought: Thought,
    embedder: Embedder,
    model_id: str,
    log: CallLog,
    report: ExtractionReport,
) -> None:
    """Stages 3 to 5's writes for one episode, in the caller's transaction: the call log, the
    units and entities (or the episode marked failed), and the links."""
    log.episode_id = thought.episode_id
    log(stage="extract", prompt_version=extract.prompt.VERSION, result=thought.result)
    if thought.checked is not None:
        log(stage="verify", prompt_version=extract.verify_prompt.VERSION, result=thought.checked)
    if thought.extraction is None:
        conn.run("episode_set_stage", {"id": thought.episode_id, "stage": "failed"})
        report.failed += 1
        return
    for entry in thought.resolve_calls:
        log(**entry)
    stored = extract.store(
        conn,
        ns,
        thought.episode_id,
        thought.conversation,
        thought.messages,
        thought.extraction,
        embedder,
        model_id,
        thought.decided,
    )
    links = link.link_episode(conn, ns, thought.episode_id, thought.conversation, stored.rows, link.LinkConfig())
    report.episodes += 1
    report.entities += stored.entities_new
    for kind, n in stored.units.items():
        report.units[kind] = report.units.get(kind, 0) + n
    for kind, n in links.items():
        report.links[kind] = report.links.get(kind, 0) + n


def extract_episodes(
    conn: Store,
    llm: LLM,
    embedder: Embedder,
    ns: str,
    locked: Locked,
    options: ExtractOptions,
    *,
    final: bool,
    progress: Progress | None = None,
) -> ExtractionReport:
    """Stages 2 to 6 for namespace ``ns``: segment unassigned messages into episodes with the
    LLM, extract and store each closed episode (one transaction each), then consolidate
    (``options.consolidate``). ``final=False`` leaves the open buffer open (streaming adds).
    ``options.workers``: episodes whose extraction and fact check run at once (a model server
    only); entity decisions and storing stay in episode order, each episode seeing the
    entities of those before it."""
    verify = options.verify
    report = ExtractionReport()
    log = CallLog(conn, ns, llm.model_id)
    t0 = time.perf_counter()
    detector = segment.LLMDetector(llm, log=log)
    with locked():
        segment.segment_namespace(conn, ns, detector, final=final)
    report.seconds["segment"] = round(time.perf_counter() - t0, 2)
    todo = all_rows(conn.run("episodes_at_stage", {"ns": ns, "stage": "segmented"}))
    t0 = time.perf_counter()
    report.workers = workers_for(llm, options.workers)
    jobs = [
        partial(think, llm, episode_id, conversation, episode_messages(conn, episode_id), verify)
        for episode_id, conversation in todo
    ]
    for done, thought in enumerate(in_order(jobs, report.workers), 1):
        decide(conn, llm, ns, thought)
        with locked(), conn:
            store(conn, ns, thought, embedder, llm.model_id, log, report)
        if progress:
            progress(done, len(todo))
    report.seconds["extract"] = round(time.perf_counter() - t0, 2)
    if options.consolidate != "off":
        done_report = consolidate_namespace(conn, llm, embedder, ns, log, locked, options, progress)
        report.consolidation = done_report.to_dict()
        report.seconds["consolidate"] = done_report.seconds
    report.llm = [
        dict(zip(("stage", "calls", "prompt_tokens", "completion_tokens", "seconds", "failures"), row))
        for row in conn.run("llm_call_totals", {"ns": ns})
    ]
    return report


def consolidate_namespace(
    conn: Store,
    llm: LLM,
    embedder: Embedder,
    ns: str,
    log: CallLog,
    locked: Locked,
    options: ExtractOptions,
    progress: Progress | None = None,
) -> consolidate_mod.Report:
    """Stage 6 for every extracted episode of ``ns`` not consolidated yet, oldest first, in
    mode ``options.consolidate``. ``options.verify``: the fact check's threshold for
    statements, applied in ``full`` mode only (``fast`` is one call per episode: its cost is
    what it promises)."""
    mode, verify = options.consolidate, options.verify
    if mode not in consolidate_mod.MODES:
        raise ValueError(f"unknown consolidation mode {mode!r}")
    report = consolidate_mod.Report()
    if mode == "off":
        return report
    started = time.perf_counter()
    todo = [row[0] for row in conn.run("episodes_to_consolidate", {"ns": ns})]
    for done, episode_id in enumerate(todo, 1):
        log.episode_id = episode_id
        result = consolidate_mod.consolidate_episode(
            conn, llm, embedder, ns, episode_id, mode, log, locked, verify if mode == "full" else 0.0
        )
        report.episodes += 1
        if result is None:
            report.failed += 1
        else:
            report.added += len(result.added)
            report.reinforced += len(result.reinforced)
            report.superseded += len(result.superseded)
            report.dropped += len(result.dropped)
        if progress:
            progress(done, len(todo))
    report.seconds = round(time.perf_counter() - started, 2)
    return report
