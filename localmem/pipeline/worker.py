"""Background extraction: episodes closed by streaming adds are built in a thread of their own.

:meth:`Memory.add <localmem.memory.Memory.add>` with ``extract="llm"`` would otherwise segment
and extract inline, so a message that closes an episode waits for the model (tens of seconds
with the 1.5B model on 2 cores). After :meth:`Extraction.in_background
<localmem.extraction.Extraction.in_background>`, ``add`` stores the message and wakes the
worker instead:

- one thread, so one build at a time: a wake while a build runs makes exactly one more build
  after it, never two at once (they would segment the same pending messages);
- its own connection to the file (SQLite serialises the two writers; every write of a build
  is a short transaction taken after the model's work, see :mod:`.pipeline`), and the same
  models as the Memory that woke it (the backends are thread-safe);
- :meth:`ExtractionWorker.close` flushes: a last build with ``final=True`` closes the open episode
  and extracts it, and the caller waits for it. Killed before or during that, nothing is lost:
  each episode is one transaction, and the next build redoes the one that was cut off.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Protocol

from .pipeline import ExtractionReport


class Extracts(Protocol):
    def extract(self, *, final: bool) -> ExtractionReport: ...


class Extracting(Protocol):
    """What the worker needs of the memory it runs on (a :class:`~localmem.memory.Memory`)."""

    @property
    def extraction(self) -> Extracts: ...

    def close(self) -> None: ...


log = logging.getLogger("localmem.worker")


class ExtractionWorker:
    """Runs ``Extraction.extract`` in a background thread whenever woken; see the module docstring.

    ``open_memory`` is called once, in the thread, for the memory the extractions run on.
    """

    def __init__(self, open_memory: Callable[[], Extracting]) -> None:
        self._open = open_memory
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._guard = threading.Lock()
        self._thread: threading.Thread | None = None
        self._status: dict[str, Any] = {
            "builds": 0,
            "episodes": 0,
            "failed": 0,
            "running": False,
            "last_error": None,
            "last_build_seconds": None,
        }

    def wake(self) -> None:
        """Ask for a build (returns at once); starts the thread on first use."""
        with self._guard:
            if self._stop.is_set():
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="localmem-extract", daemon=True)
                self._thread.start()
        self._wake.set()

    def status(self) -> dict[str, Any]:
        """Builds run, episodes extracted and failed, whether one is running, the last error."""
        with self._guard:
            return dict(self._status)

    def close(self, timeout: float | None = None) -> None:
        """Flush and stop: the thread runs a last ``extract(final=True)``; waits up to
        ``timeout`` seconds (``None``: until it is done). Nothing to do if never woken."""
        with self._guard:
            self._stop.set()
            thread = self._thread
        if thread is None:
            return
        self._wake.set()
        thread.join(timeout)

    def _run(self) -> None:
        try:
            mem = self._open()
        except Exception as exc:  # a store that cannot be opened: say so, never crash the caller
            self._failed(exc)
            return
        try:
            while not self._stop.is_set():
                self._wake.wait()
                self._wake.clear()
                if self._stop.is_set():
                    break
                self._extract(mem, final=False)
            self._extract(mem, final=True)
        finally:
            mem.close()

    def _extract(self, mem: Extracting, *, final: bool) -> None:
        with self._guard:
            self._status["running"] = True
        started = time.perf_counter()
        try:
            report = mem.extraction.extract(final=final)
        except Exception as exc:  # logged and kept for stats; the messages stay stored and searchable
            self._failed(exc)
            return
        finally:
            with self._guard:
                self._status["running"] = False
        seconds = round(time.perf_counter() - started, 2)
        with self._guard:
            self._status["builds"] += 1
            self._status["episodes"] += report.episodes
            self._status["failed"] += report.failed
            self._status["last_build_seconds"] = seconds
        if report.episodes or report.failed:
            log.info(
                "extracted %d episode(s) (%d failed) in %.1f s%s",
                report.episodes,
                report.failed,
                seconds,
                " (flush)" if final else "",
            )

    def _failed(self, exc: Exception) -> None:
        from ..errors import LocalmemError

        with self._guard:
            self._status["last_error"] = str(exc)
        if isinstance(exc, LocalmemError):
            log.error("background extraction failed: %s", exc)
        else:
            log.exception("background extraction failed")
