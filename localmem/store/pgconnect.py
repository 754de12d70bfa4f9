"""Connecting to a PostgreSQL store: why a connection failed, said at once and in one line.

psycopg's pool connects in a thread of its own. When that fails it logs the reason (a warning
of the ``psycopg.pool`` logger, which Python prints on stderr when nothing handles it), tries
again with backoff, and the caller waiting for a connection is told only "couldn't get a
connection after 5.00 sec" once its timeout has passed: a wrong password, an unknown database
and a stopped server all read the same, five seconds later, with the reason on a second line.

So each pool connects with :func:`recording`'s connection class, which keeps the last failure
of each URL, and :func:`getconn` waits for a connection in short steps, looking at it between
them:

- a pool that never had a connection in this process (the store is being opened) fails at its
  first failed attempt, with the server's reason (say a wrong password, a database or a role
  that does not exist, nothing listening there): retrying would not change it, or the user
  would rather know now;
- a pool that had connections (a server restarted under a running ``serve``) keeps waiting
  until its timeout, then fails with the last reason.

The pool's logger gets a ``NullHandler``: its records still reach the handlers a server sets
up (``serve``'s log), but nothing is printed on stderr beside the command's own error. Every
message goes through :func:`~localmem.redact.redact`, as every :class:`LocalmemError` does.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from typing import Any

from ..errors import LocalmemError
from ..redact import redact

STEP_S = 0.02  # how often a waiting caller looks at the pool's last failure

_LOCK = threading.Lock()
_FAILED: dict[str, tuple[float, BaseException]] = {}  # by URL: when the last attempt failed, and why
_CONNECTED: set[str] = set()  # the URLs a connection was ever made to, in this process


class ConnectError(LocalmemError):
    """The PostgreSQL server could not be reached or refused the connection."""

    code = "cannot_connect"


@functools.lru_cache(maxsize=1)
def recording() -> type:
    """psycopg's connection class, with each URL's last failure and first success kept."""
    import psycopg

    logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())

    class Recording(psycopg.Connection):  # type: ignore[type-arg]
        @classmethod
        def connect(cls, conninfo: str = "", **kwargs: Any) -> Any:  # type: ignore[override]
            try:
                conn = super().connect(conninfo, **kwargs)
            except Exception as exc:
                with _LOCK:
                    _FAILED[conninfo] = (time.monotonic(), exc)
                raise
            with _LOCK:
                _CONNECTED.add(conninfo)
                _FAILED.pop(conninfo, None)
            return conn

    return Recording


def getconn(pool: Any, url: str, timeout_s: float) -> Any:
    """A connection from ``pool`` (the pool of ``url``) within ``timeout_s``, or a
    :class:`ConnectError` with the server's reason (see the module docstring for when)."""
    import psycopg_pool

    started = time.monotonic()
    deadline = started + timeout_s
    while True:
        with _LOCK:
            ever = url in _CONNECTED
        # A pool that has connected waits its whole time at once, keeping its place in the
        # queue of waiting callers (many threads may share a busy pool); one that never did
        # looks at its failures between short waits.
        left = deadline - time.monotonic()
        try:
            return pool.getconn(timeout=max(0.001, left if ever else min(STEP_S, left)))
        except psycopg_pool.PoolTimeout as exc:
            with _LOCK:
                when, why = _FAILED.get(url, (0.0, None))
            failed_now = why is not None and when >= started
            if (failed_now and not ever) or time.monotonic() >= deadline:
                raise failure(url, why if why is not None else exc, timeout_s) from why or exc


def failure(url: str, exc: BaseException, timeout_s: float | None = None) -> ConnectError:
    """``exc`` (psycopg's, or the pool's timeout) as one line that says why and what to do."""
    import psycopg_pool

    # The first line: libpq's own hint ("Is the server running...?") follows on a second one.
    text = " ".join((str(exc).strip().splitlines() or [""])[0].split()) or type(exc).__name__
    for prefix in ("connection failed: ", "connection is bad: "):
        text = text.removeprefix(prefix)
    lower = text.lower()
    if isinstance(exc, psycopg_pool.PoolTimeout):
        text = f"no connection within {timeout_s or 0:g} s"
        hint = "is the server running, and not at its connection limit? (localmem postgres start runs a local one)"
    elif "password" in lower or "authentication failed" in lower:
        hint = "check the user and password in the URL (or PGPASSWORD, or the password file)"
    elif "database" in lower and "does not exist" in lower:
        hint = "create the database (createdb), or fix the database name at the end of the URL"
    elif "role" in lower and "does not exist" in lower:
        hint = "fix the user name in the URL, or create that role on the server"
    elif "invalid" in lower and ("uri" in lower or "option" in lower or "dsn" in lower):
        hint = "fix the URL (libpq's syntax: postgresql://user@host:port/database?param=value)"
    else:
        hint = "is the server running there? (localmem postgres start runs a local one)"
    return ConnectError(f"cannot connect to the PostgreSQL server at {redact(url)}: {text}", hint)
