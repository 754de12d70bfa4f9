"""What one client can hold of ``localmem serve``: connections, time and bytes.

A client that opens connections and never finishes its request must not make the server
unreachable for its owner, and an upload must not be taken whole before it is refused. So:

- **Connections**: at most ``serve_max_connections`` at once. A connection is the owner's once
  one of its requests showed a token of this run (:meth:`.Guard.holds_token`, whatever the
  route); until then it is anyone's. One more connection evicts the oldest of anyone's (those
  not in the middle of a call to the app first), else the oldest of the owner's that is between
  two requests; when every one is the owner's and busy, the new one is closed. So connections
  without the token, however many and however slow, never keep the owner out. uvicorn's own
  ``limit_concurrency`` answers 503 to a request beyond that (a second line, which the eviction
  keeps from being met).
- **Time**: a request's headers must be complete within ``serve_header_timeout`` seconds of the
  connection (or of its first byte, on a kept-alive connection), however slowly they trickle in.
  On the owner's connections a body may pause at most ``serve_body_timeout`` seconds between two
  pieces (a slow upload is fine, a stalled one is closed); on anyone's, the whole body must come
  within :data:`UNTRUSTED_BODY_SECONDS` (no route takes a body without the token: a public one
  answers without reading it, the others refuse). The server answers 408 and closes. uvicorn
  closes an idle kept-alive connection after ``timeout_keep_alive`` (5 s) itself.
- **Bytes**: headers are at most h11's ``max_incomplete_event_size`` (16 KiB, else 400). A body
  is at most :data:`MAX_BODY` (the JSON calls and forms), or ``max_input_bytes`` plus room for
  the multipart framing (an upload to ``/api/ingest`` or the page's import): a larger
  ``Content-Length`` is refused (413) before a byte is read, and a body without one (chunked) is
  counted as it comes and refused when it passes the limit, the connection then closed.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from typing import Any, Callable

from ..config import DEFAULTS
from .calls import ReportedError
from .security import ASGIApp, Receive, Scope, Send, refuse

MAX_BODY = 8 * 2**20  # a JSON call or a form: a message of max_message_chars escaped as JSON fits
MULTIPART_ROOM = 2**20  # the multipart framing and the small fields beside the file
UPLOADS = frozenset({"/api/ingest", "/curate/import"})
MAX_HEADER_BYTES = 16 * 1024
KEEP_ALIVE_SECONDS = 5
# The whole body of a request on a connection that has not shown the token (issue 50: GETs of
# /static/app.js with a Content-Length and a byte every 1.5 s held the 128 connections for ever).
UNTRUSTED_BODY_SECONDS = 2.0
# asyncio accepts up to this many waiting connections at once, before any of them is seen (and
# evicted): it is room the file descriptors must have beyond the connections held.
BACKLOG = 32
SPARE_FILES = 32  # the store, its WAL, the models, the log, a socket of the command line...
TIMED_OUT = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"connection: close\r\ncontent-length: 27\r\n\r\nthe request took too long.\n"
)


@dataclass(frozen=True)
class Limits:
    """The bounds of one server run (:meth:`of` a config; by default, the settings' defaults)."""

    max_connections: int = DEFAULTS.serve_max_connections
    header_timeout: float = DEFAULTS.serve_header_timeout
    body_timeout: float = DEFAULTS.serve_body_timeout
    max_upload: int = DEFAULTS.max_input_bytes + MULTIPART_ROOM
    max_body: int = MAX_BODY
    untrusted_body_timeout: float = UNTRUSTED_BODY_SECONDS

    @classmethod
    def of(cls, config: Any) -> "Limits":
        return cls(
            max_connections=config.serve_max_connections,
            header_timeout=config.serve_header_timeout,
            body_timeout=config.serve_body_timeout,
            max_upload=config.max_input_bytes + MULTIPART_ROOM,
            untrusted_body_timeout=min(UNTRUSTED_BODY_SECONDS, config.serve_body_timeout),
        )

    def body_limit(self, path: str) -> int:
        return self.max_upload if path in UPLOADS else self.max_body

    def within_files(self) -> "Limits":
        """These limits, with as many connections as the process's file descriptors can hold
        (a connection is one): the soft limit is first raised to the hard one, as far as it
        goes; what is open already, the burst of :data:`BACKLOG` accepted at once (twice: the
        evicted close a moment later) and a spare are kept free. A server out of descriptors
        stops accepting for a second at a time, its owner included."""
        try:
            import resource
        except ImportError:  # not POSIX: no such limit to fit
            return self
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard == resource.RLIM_INFINITY or hard > soft:
            wanted = 65536 if hard == resource.RLIM_INFINITY else min(hard, 65536)
            if wanted > soft:
                try:
                    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
                    soft = wanted
                except (OSError, ValueError):
                    pass
        room = soft - _open_files() - 2 * BACKLOG - SPARE_FILES
        fitted = max(2, min(self.max_connections, room))
        return self if fitted == self.max_connections else replace(self, max_connections=fitted)


class BodyTooLarge(ReportedError):
    """A request body over its limit (HTTP 413)."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            {
                "error": f"the request body is larger than {limit:,} bytes",
                "code": "too_large",
                "hint": "an upload may be as large as max_input_bytes; split the file, or raise max_input_bytes",
                "exit_code": 2,
            }
        )


class BodyLimitMiddleware:
    """Refuses a body over its limit (see the module docstring): by its Content-Length before
    the route runs, or, counted as it comes, as an error the route answers (413) or this
    middleware does if the route let it through. Either way the connection is then closed, so
    the rest of the body is not read."""

    def __init__(self, app: ASGIApp, limits: Limits) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        limit = self.limits.body_limit(path)
        length = next((v for k, v in scope.get("headers", []) if k.lower() == b"content-length"), None)
        if length is not None:
            if not length.strip().isdigit():
                await refuse(
                    send, path, 400, "usage", "the Content-Length header is not a number", "send a valid request"
                )
                return
            if int(length) > limit:
                error = BodyTooLarge(limit).to_dict()
                await refuse(send, path, 413, "too_large", error["error"], error["hint"] or "")
                return
        seen = 0
        over = False
        started = False

        async def counted() -> dict[str, Any]:
            nonlocal seen, over
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    over = True
                    raise BodyTooLarge(limit)
            return message

        async def closing(message: dict[str, Any]) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                if over:  # the rest of the body is not wanted: close rather than read it
                    message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
            await send(message)

        try:
            await self.app(scope, counted, closing)
        except BodyTooLarge as exc:
            if started:
                raise
            error = exc.to_dict()
            await refuse(send, path, 413, "too_large", error["error"], error["hint"] or "")


def _open_files() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:  # no /proc: a guess
        return 64


def protocol(limits: Limits, trusts: Callable[[Scope], bool]) -> type:
    """uvicorn's h11 protocol with the connection cap and the header and body timeouts;
    ``trusts``: whether a request shows the token (its connection is then the owner's)."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class Bounded(H11Protocol):
        """One connection (see the module docstring)."""

        _timer: Any = None
        _phase = ""  # "headers", "body" or "anyone's body" while a timer runs
        _born = 0.0
        _trusted = False  # one of its requests showed the token
        _checked: Any = None  # the request (its scope) last looked at

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._born = time.monotonic()
            if len(self.connections) > limits.max_connections:
                self._make_room()
            if not transport.is_closing():
                self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._arm()

        def handle_events(self) -> None:
            super().handle_events()
            if self.scope is not None and self.scope is not self._checked:  # a new request
                self._checked = self.scope
                self._trusted = self._trusted or trusts(dict(self.scope))

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()  # a pipelined request may be waiting; else the keep-alive timer runs

        def _between_requests(self) -> bool:
            return self.conn.their_state is h11.IDLE and (self.cycle is None or self.cycle.response_complete)

        def _with_app(self) -> bool:
            return self.cycle is not None and not self.cycle.response_complete

        def _make_room(self) -> None:
            """Close the oldest of anyone's connections (those the app is not answering first),
            else the owner's oldest between requests, else this new one."""
            others = [c for c in self.connections if c is not self and isinstance(c, Bounded)]
            anyones = [c for c in others if not c._trusted]
            waiting = [c for c in others if c._trusted and c._between_requests()]
            if anyones:
                victim = min(anyones, key=lambda c: (c._with_app(), c._born))
            else:
                victim = min(waiting, key=lambda c: c._born) if waiting else self
            victim._disarm()
            victim.connections.discard(victim)  # counted out now, not when the loop gets to it
            victim.transport.close()

        def _arm(self) -> None:
            """Start, keep or stop the timer for where the request stands."""
            if self.transport is None or self.transport.is_closing():
                return self._disarm()
            if self._between_requests() and self.timeout_keep_alive_task is None:
                if self._phase != "headers":  # a deadline for the whole header, not reset by each byte
                    self._start("headers", limits.header_timeout)
            elif self.conn.their_state is h11.SEND_BODY:
                if self._trusted:
                    self._start("body", limits.body_timeout)  # reset by each piece
                elif self._phase != "anyone's body":  # a deadline for the whole body
                    self._start("anyone's body", limits.untrusted_body_timeout)
            else:
                self._disarm()  # the app has the request, or the keep-alive timer runs

        def _start(self, phase: str, seconds: float) -> None:
            self._disarm()
            self._phase = phase
            self._timer = self.loop.call_later(seconds, self._expired)

        def _disarm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
            self._timer, self._phase = None, ""

        def _expired(self) -> None:
            phase, self._timer, self._phase = self._phase, None, ""
            if self.transport.is_closing():
                return
            if phase == "body" and self.flow.read_paused:  # the app is not reading: not the client's delay
                self._start("body", limits.body_timeout)
                return
            if self.cycle is None or self.cycle.response_complete or not self.cycle.response_started:
                self.transport.write(TIMED_OUT)
            self.transport.close()

    return Bounded


def server_options(limits: Limits, trusts: Callable[[Scope], bool]) -> dict[str, Any]:
    """uvicorn.Config's own limits, beside :func:`protocol` (``trusts``: as there)."""
    return {
        "http": protocol(limits, trusts),
        "limit_concurrency": limits.max_connections + 1,  # +1: the newcomer before the eviction
        "backlog": BACKLOG,
        "timeout_keep_alive": KEEP_ALIVE_SECONDS,
        "h11_max_incomplete_event_size": MAX_HEADER_BYTES,
        "access_log": False,  # it would log each request's query: the token, the search text
    }
