"""The command line's side of a running ``localmem serve``: ``localmem ask`` passes its question
to the server that serves its store (found through :mod:`.discovery`), where the model is
already loaded, and reads the answer back as the server streams it.

Only the standard library (http.client): a command that ends up asking the server imports
nothing heavy. Any failure to reach or read the server is :class:`Unavailable` (the caller
answers locally); an error the server reports about the question itself (a bad date, an
unknown mode) is :class:`ServedError`, the same error the local run would raise.
"""

from __future__ import annotations

import hmac
import http.client
import json
import secrets
import time
from typing import Any, Callable

from ..errors import LocalmemError
from .discovery import Discovery
from .security import hello_proof

CONNECT_TIMEOUT = 5.0  # seconds: a loopback server that does not accept and say hello by then is not there
READ_TIMEOUT = 900.0  # seconds between two lines of the stream: a first model load, a long answer
# Errors the server answers about the request itself, which the local run would raise the same
# ("error": a LocalmemError of no kind of its own, such as a date that is not one).
_THE_QUESTIONS = frozenset({"error", "usage", "bad_input", "invalid_text", "not_found", "unknown_namespace", "config"})


class Unavailable(Exception):
    """The server could not be used; the message says why, in one line. ``gone``: nothing
    listens on its port (the server died without removing its discovery file)."""

    def __init__(self, message: str, gone: bool = False) -> None:
        super().__init__(message)
        self.gone = gone


class ServedError(LocalmemError):
    """An error the server reported about the question, as the local run would have raised it."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(str(error.get("error") or "error"), error.get("hint"))
        self.code = str(error.get("code") or "error")
        self.exit_code = int(error.get("exit_code") or 1)


class Served:
    """A connection to the server ``found`` names, once it has proved it holds the token."""

    def __init__(self, found: Discovery) -> None:
        self.found = found
        self.http = http.client.HTTPConnection(found.host, found.port, timeout=CONNECT_TIMEOUT)
        try:
            self.http.connect()
            self._hello()
            self.http.sock.settimeout(READ_TIMEOUT)  # the server proved itself: wait for the model
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            gone = isinstance(exc, ConnectionRefusedError)
            raise Unavailable(f"no answer from {found.address} ({_reason(exc)})", gone) from None
        except Unavailable:
            self.close()
            raise

    def _hello(self) -> None:
        nonce = secrets.token_urlsafe(24)
        self.http.request("GET", f"/api/hello?nonce={nonce}", headers={"Accept": "application/json"})
        response = self.http.getresponse()
        body = response.read(4096)
        try:
            proof = json.loads(body)["proof"] if response.status == 200 else None
        except (ValueError, KeyError, TypeError):
            proof = None
        if not isinstance(proof, str) or not hmac.compare_digest(proof, hello_proof(self.found.token, nonce)):
            raise Unavailable(f"the process on {self.found.address} is not the server the discovery file names")

    def close(self) -> None:
        self.http.close()

    def ask(
        self,
        body: dict[str, Any],
        on_text: Callable[[str], None] | None = None,
        on_step: Callable[[dict[str, Any]], None] | None = None,
        on_progress: Callable[[str, str], None] | None = None,
    ) -> tuple[dict[str, Any], float]:
        """The answer (``Answer.to_dict()``) to the question in ``body`` (the API's ask request)
        and the seconds the round trip took; ``on_text`` gets the answer as it is written,
        ``on_step`` each agentic step, ``on_progress`` each stage (name, words) as it starts."""
        started = time.perf_counter()
        request = {**body, "stream": True, "text": on_text is not None, "trace": on_step is not None}
        headers = {
            "Authorization": f"Bearer {self.found.token}",
            "Content-Type": "application/json",
            "Accept": "application/x-ndjson",
            "X-Localmem-Client": "cli",
        }
        try:
            self.http.request("POST", "/api/ask", body=json.dumps(request).encode(), headers=headers)
            response = self.http.getresponse()
            if response.status != 200:
                _raise_error(response.status, response.read(65536))
            while line := response.readline():
                if not line.strip():
                    continue
                event = json.loads(line)
                kind = event.get("event")
                if kind == "text" and on_text is not None:
                    on_text(str(event.get("text", "")))
                elif kind == "step" and on_step is not None:
                    on_step(event["step"])
                elif kind == "progress" and on_progress is not None:
                    on_progress(str(event.get("stage", "")), str(event.get("message", "")))
                elif kind == "answer":
                    return event["answer"], time.perf_counter() - started
                elif kind == "error":
                    _raise_error(200, json.dumps(event.get("error")).encode())
        except (OSError, http.client.HTTPException, ValueError, KeyError, TypeError) as exc:
            raise Unavailable(f"{self.found.address} stopped answering ({_reason(exc)})") from None
        raise Unavailable(f"{self.found.address} closed the answer before its end")


def _raise_error(status: int, body: bytes) -> None:
    try:
        error = json.loads(body)
    except ValueError:
        error = None
    if not isinstance(error, dict) or "error" not in error:
        raise Unavailable(f"HTTP {status}")
    if error.get("code") in _THE_QUESTIONS:
        raise ServedError(error)
    raise Unavailable(f"{error.get('error')} ({error.get('code')})")


def _reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
