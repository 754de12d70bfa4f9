"""``mem.extraction``: turning the stored messages of a :class:`~localmem.memory.Memory` into
memory, stages 2 to 6 of :mod:`localmem.pipeline` (episodes, then with the LLM narratives,
facts, entities, links and knowledge).

:meth:`Memory.ingest <localmem.memory.Memory.ingest>` and :meth:`~localmem.memory.Memory.add`
store messages and then call this, as the ``extract`` setting says; :class:`Extraction` is
also where a caller extracts later (:meth:`~Extraction.flush`), consolidates, or hands
extraction to a background thread. It checks its arguments and calls
:mod:`localmem.pipeline.pipeline`, sharing the Memory's connection and lock
(:class:`~localmem.store.handle.Handle`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from .config import CONSOLIDATE_MODES, Config, check_choice
from .errors import LocalmemError
from .serial import one_at_a_time

if TYPE_CHECKING:
    from .models.factory import Models
    from .pipeline.consolidate import Report as ConsolidationReport
    from .pipeline.pipeline import ExtractionReport
    from .pipeline.worker import Extracting, ExtractionWorker
    from .store.handle import Handle

Progress = Callable[[int, int], None]


@one_at_a_time
class Extraction:
    """Episodes and what the LLM learns from them, for one namespace. With ``extract="llm"``,
    :meth:`extract` segments and extracts; with ``extract="none"``,
    :meth:`segment_without_llm` only closes episodes, and their extraction waits for a later
    :meth:`extract` or :meth:`flush` with a model.

    ``open_memory`` opens another Memory on the same store and models, for the background
    thread of :meth:`in_background` (it needs a connection of its own)."""

    def __init__(
        self, store: "Handle", config: Config, models: "Models", namespace: str, open_memory: Callable[[], "Extracting"]
    ) -> None:
        self._store, self._config, self._models, self.namespace = store, config, models, namespace
        self._open_memory = open_memory
        self._lock = store.lock
        self._worker: "ExtractionWorker | None" = None

    def _locked(self) -> Any:
        return self._store.locked()

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

        Resumable: each episode is one transaction, so an interrupted extraction redoes at
        most the episode it was in. ``final=False`` leaves the open buffer open.
        ``workers``: episodes extracted at once against a model server (default
        ``llm_workers``; the in-process model takes one call at a time).
        """
        from .pipeline import pipeline

        options = pipeline.ExtractOptions.from_config(self._config, consolidate=consolidate, workers=workers)
        ns, models = namespace or self.namespace, self._models
        return pipeline.extract_episodes(
            self._store.conn, models.llm, models.embedder, ns, self._locked, options, final=final, progress=progress
        )

    def flush(self, progress: Progress | None = None, workers: int | None = None) -> "ExtractionReport":
        """Close every open episode buffer and extract what was closed (streaming use)."""
        return self.extract(final=True, progress=progress, workers=workers)

    def segment_without_llm(self, namespace: str | None = None, *, final: bool = True) -> int:
        """Close episodes by time gaps and drops in embedding similarity (no LLM); their
        extraction waits for a later :meth:`extract` with a model. Returns the episodes closed."""
        from .pipeline import pipeline

        ns, embedder = namespace or self.namespace, self._models.embedder
        return pipeline.segment_without_llm(self._store.conn, embedder, ns, self._locked, final=final)

    def consolidate(
        self, *, namespace: str | None = None, mode: str = "fast", progress: Progress | None = None
    ) -> "ConsolidationReport":
        """Predict–calibrate every extracted episode not consolidated yet, oldest first:
        lasting knowledge about people as ``knowledge`` units, changes as ``supersedes`` links.
        ``mode``: "fast" (one call per episode) or "full" (predict, then calibrate)."""
        from .pipeline import pipeline

        check_choice("--consolidate", mode, CONSOLIDATE_MODES)
        options = pipeline.ExtractOptions.from_config(self._config, consolidate=mode)
        if options.consolidate == "off":
            raise LocalmemError("consolidate needs a mode: fast or full")
        conn, ns, llm = self._store.conn, namespace or self.namespace, self._models.llm
        log = pipeline.CallLog(conn, ns, llm.model_id)
        embedder = self._models.embedder
        return pipeline.consolidate_namespace(conn, llm, embedder, ns, log, self._locked, options, progress)

    def in_background(self) -> None:
        """With ``extract="llm"``: from now on, episodes that :meth:`Memory.add
        <localmem.memory.Memory.add>` closes are extracted by a background thread instead of
        inside ``add``, which then returns as soon as the message is stored. The thread runs
        one extraction at a time on its own connection to the same file, with the same models;
        :meth:`stop` (and closing the Memory) flushes and waits. A process killed
        mid-extraction loses nothing: an episode is stored in one transaction, and the next
        extraction (the next ``add``, or ``localmem flush``) redoes it."""
        from .pipeline.worker import ExtractionWorker

        if self._config.extract != "llm":
            raise LocalmemError("background extraction needs extract = llm (--extract llm)")
        if self._worker is None:
            self._worker = ExtractionWorker(self._open_memory)

    def after_add(self) -> None:
        """What a newly stored message sets off: with ``extract="llm"``, extracting an episode
        it closes (by the background thread after :meth:`in_background`, else here: only at a
        boundary or the cap); without, closing episodes as a batch ingest would, minus the
        open buffer."""
        if self._config.extract == "llm" and self._worker is not None:
            self._worker.wake()
        elif self._config.extract == "llm":
            self.extract(final=False)
        else:
            self.segment_without_llm(final=False)

    def status(self) -> dict[str, Any] | None:
        """What background extraction has done (builds, episodes, failures, the last error);
        ``None`` unless :meth:`in_background` started it."""
        return self._worker.status() if self._worker is not None else None

    def stop(self) -> None:
        """Stop background extraction, after it extracted what is left (as :meth:`flush`
        does), waiting for it; nothing to do when it is not running."""
        if self._worker is not None:
            worker, self._worker = self._worker, None
            worker.close()
