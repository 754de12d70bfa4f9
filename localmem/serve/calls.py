"""Memory calls off the event loop, and their results and errors as JSON.

The server holds two :class:`~localmem.memory.Memory` objects on the same store, sharing their
models: ``writer`` for whatever writes or runs the LLM (add, correct, forget, ingest, ask, and
the MCP tools), ``reader`` for the views (search, show, timeline, people, stats). Each runs its
calls one at a time in a worker thread, so a page stays quick while an ``ask`` or an import runs:
the store's write-ahead log lets the reader read while the writer writes.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import time
from typing import Any, Callable

import anyio
import anyio.to_thread

from ..errors import LocalmemError
from ..memory import Memory
from ..redact import redact

log = logging.getLogger("localmem.serve")

# HTTP statuses of the CLI's error codes (the JSON body is the CLI's --json error, unchanged).
_STATUS_BY_EXIT = {2: 400, 3: 409, 4: 503, 5: 502, 6: 500, 7: 507, 8: 500}
_NOT_FOUND = {"not_found", "no_store", "unknown_namespace"}


def as_json(value: Any) -> Any:
    """``value`` as JSON-ready data: what has ``to_dict()`` through it, dataclasses as dicts,
    lists and dicts item by item (results are dataclasses, lists of them, or plain data)."""
    if hasattr(value, "to_dict"):
        return as_json(value.to_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return as_json(dataclasses.asdict(value))
    if isinstance(value, dict):
        return {str(k): as_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_json(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def error_status(error: dict[str, Any]) -> int:
    """The HTTP status for a CLI-shaped error (``{"error", "code", "hint", "exit_code"}``)."""
    if error["code"] in _NOT_FOUND:
        return 404
    if error["code"] == "too_large":
        return 413
    if error["code"] == "unexpected":
        return 500
    return _STATUS_BY_EXIT.get(int(error.get("exit_code") or 1), 400)


def error_dict(exc: BaseException) -> dict[str, Any]:
    """The CLI's --json error for ``exc``: a LocalmemError's own, a request the server could not
    read (Starlette's 4xx: a malformed form or upload) as a usage error, else "unexpected"."""
    if isinstance(exc, LocalmemError):
        return exc.to_dict()
    unreadable = bad_request(exc)
    if unreadable is not None:
        return unreadable.to_dict()
    return {
        "error": redact(f"unexpected {type(exc).__name__}: {exc}"),  # a driver's text may quote a URL
        "code": "unexpected",
        "hint": "see the server's log",
        "exit_code": 1,
    }


class ReportedError(LocalmemError):
    """An error known by its JSON form only (an error event of a stream, a usage error)."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(str(error["error"]), error.get("hint"))
        self.code = str(error.get("code") or "error")
        self.exit_code = int(error.get("exit_code") or 1)


def usage_error(message: str, hint: str = "see /api/openapi.json") -> LocalmemError:
    """A request the API cannot read (a missing field, a wrong type): code "usage", as the CLI's."""
    return ReportedError({"error": message, "code": "usage", "hint": hint, "exit_code": 2})


def bad_request(exc: BaseException) -> LocalmemError | None:
    """``exc`` as a usage error when it says the request could not be read: Starlette's
    HTTPException with a 4xx status (a malformed multipart body: no boundary, too many files, a
    part too large) or its multipart parser's own error; else None."""
    from starlette.exceptions import HTTPException
    from starlette.formparsers import MultiPartException

    if isinstance(exc, HTTPException) and 400 <= exc.status_code < 500:
        return usage_error(f"the request could not be read: {exc.detail}", "send a well-formed request")
    if isinstance(exc, MultiPartException):
        return usage_error(
            f"the upload could not be read: {exc.message}", "send a well-formed multipart/form-data body"
        )
    return None


class Lane:
    """One Memory whose calls run one at a time in a worker thread, returning their results as
    JSON-ready data (:func:`as_json`, for a method of the Memory or of its parts ``browse`` and
    ``admin``); each call is logged with its time, not its arguments (they are the user's
    memories)."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self._limiter: anyio.CapacityLimiter | None = None

    async def __call__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self._limiter is None:  # made in the server's event loop
            self._limiter = anyio.CapacityLimiter(1)
        started = time.perf_counter()
        try:
            result = await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs), limiter=self._limiter)
            return as_json(result)
        finally:
            name = getattr(fn, "__name__", "call")
            log.debug("%s: %.3f s", name, time.perf_counter() - started)


@dataclasses.dataclass
class Lanes:
    """The server's two lanes (see the module docstring)."""

    writer: Lane
    reader: Lane

    @classmethod
    def of(cls, writer: Memory, reader: Memory) -> "Lanes":
        return cls(Lane(writer), Lane(reader))
