"""What a long call is doing, told to whoever shows it (the command line's status line, the web
page's ask): the stages of an ``ask`` are reported from where they happen (the model assembled
from its packages, loaded, memory read, the answer written) to a listener the caller sets for
the duration of the call with :func:`reporting`.

The listener lives in a context variable: it follows the call into the code it runs, in the same
thread, and nothing else sees it (serve's background extraction loading the model reports
nothing to a question's page). A listener that fails never fails the work it reports on.
"""

from __future__ import annotations

import contextlib
import logging
from contextvars import ContextVar
from typing import Callable, Iterator

log = logging.getLogger("localmem")

Listener = Callable[[str, str], None]  # (stage, what to show)

# The stages of an ask, in the order they usually come, with what is shown for each.
ASSEMBLE = "assemble"
LOAD = "load"
SEARCH = "search"
ANSWER = "answer"
STAGES = {
    ASSEMBLE: "assembling the model from its packages (once on this machine)",
    LOAD: "loading the model",
    SEARCH: "reading memory",
    ANSWER: "answering",
}

_listener: ContextVar[Listener | None] = ContextVar("localmem_progress", default=None)


def stage(name: str, detail: str | None = None) -> None:
    """Tell the current listener (if any) that stage ``name`` starts; ``detail`` replaces the
    stage's usual words."""
    listener = _listener.get()
    if listener is None:
        return
    try:
        listener(name, detail or STAGES.get(name, name))
    except Exception as exc:  # noqa: BLE001 (showing progress must not stop the work)
        log.debug("progress listener failed: %s", exc)


def active() -> bool:
    """Whether someone listens (so that work done only to report can be skipped otherwise)."""
    return _listener.get() is not None


@contextlib.contextmanager
def reporting(listener: Listener | None) -> Iterator[None]:
    """Send the stages reported in this context to ``listener`` (None: to no one) until the
    block ends."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)
