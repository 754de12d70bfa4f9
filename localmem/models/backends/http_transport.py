"""HTTP to a model server: JSON requests, server-sent events, and one-line errors.

Every failure becomes a :class:`~localmem.errors.ModelServerError` (or, for a model the server
does not have, a :class:`~localmem.errors.ModelNotFoundError`) whose message names the URL and
says what to do. Headers are never part of a message, so an API key cannot leak into an error,
a log or the store.

The client is httpx2: the maintained continuation of httpx (Pydantic took over its stewardship
in 2025 as httpx saw little activity; httpx's last release is 0.28.1), with the same API, and what
the ``openai`` package itself depends on since its 3.x line. localmem needs four endpoints and
the servers' own extensions (a schema beside ``json_object``, ``repeat_penalty``, ``/tokenize``),
so the ``openai`` package, with pydantic models of OpenAI's API only, would add weight and
nothing it uses.
"""

from __future__ import annotations

import ipaddress
import json
import time
from typing import Any, Iterator
from urllib.parse import urlsplit

from ...config import DEFAULTS
from ...errors import MissingDependencyError, ModelServerError

CONNECT_TIMEOUT = 10.0  # seconds to open a connection: a server that is up accepts at once
# A server that is loading its model or overloaded answers 502/503/504 (llama.cpp's llama-server
# says 503 "Loading model" while it starts): asked again after these waits, then given up on.
RETRY_WAITS = (1.0, 4.0)
RETRY_STATUS = (502, 503, 504)
_SHOWN = 240  # characters of a server's own error message kept in ours


class NotJson(ModelServerError):
    """The server sent something that is not JSON (a web page, a proxy's error)."""


class Rejected(ModelServerError):
    """The server answered 4xx/5xx; ``status`` and ``detail`` (its own words) let a caller try
    another form of the request before giving up."""

    def __init__(self, message: str, status: int, detail: str, hint: str | None = None) -> None:
        super().__init__(message, hint)
        self.status = status
        self.detail = detail


def is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Transport:
    """One server's base URL (``…/v1``), with its API key and timeouts; safe to use from
    several threads at once (the connection pool is shared)."""

    def __init__(
        self, url: str, *, api_key: str | None = None, timeout: float = DEFAULTS.llm_timeout, key_env: str | None = None
    ) -> None:
        try:
            import httpx2
        except ImportError as exc:
            raise MissingDependencyError("httpx2", "server") from exc
        self.url = url.rstrip("/")
        self.key_env = key_env  # named in the message of a 401, never the key itself
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # A proxy from the environment (HTTP_PROXY) is for the outside world: a server on this
        # machine is reached directly.
        self._client = httpx2.Client(
            timeout=httpx2.Timeout(timeout, connect=CONNECT_TIMEOUT),
            headers=headers,
            trust_env=not is_loopback(self.url),
        )
        self._httpx = httpx2
        self.timeout = timeout

    @property
    def root(self) -> str:
        """The server's root: the base URL without a trailing ``/v1`` (where llama.cpp's and
        vLLM's ``/tokenize`` live)."""
        return self.url[:-3] if self.url.endswith("/v1") else self.url

    def close(self) -> None:
        self._client.close()

    def get(self, path: str) -> Any:
        return self._json(self._send("GET", self.url + path))

    def post(self, path: str, body: dict[str, Any], *, root: bool = False) -> Any:
        return self._json(self._send("POST", (self.root if root else self.url) + path, body))

    def events(self, path: str, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """The JSON objects of a server-sent event stream (``data: {...}`` lines), up to
        ``data: [DONE]``."""
        url = self.url + path
        for attempt in range(len(RETRY_WAITS) + 1):
            with self._guard(url):
                with self._client.stream("POST", url, json=body) as response:
                    if response.status_code >= 400:
                        response.read()
                        if response.status_code in RETRY_STATUS and attempt < len(RETRY_WAITS):
                            time.sleep(RETRY_WAITS[attempt])
                            continue
                        raise self._rejected(url, response)
                    for line in response.iter_lines():
                        if not line.startswith("data:"):
                            continue  # comments (": ping"), event names, blank separators
                        data = line[5:].strip()
                        if data == "[DONE]":
                            return
                        try:
                            yield json.loads(data)
                        except json.JSONDecodeError:
                            raise NotJson(
                                f"the model server at {self.url} streamed an event that is not JSON "
                                f"({_clip(data)!r}); is llm_url its OpenAI-compatible base URL?"
                            ) from None
                    return

    # -- the one place requests are made and failures named ------------------------------------
    def _send(self, method: str, url: str, body: dict[str, Any] | None = None) -> Any:
        for attempt in range(len(RETRY_WAITS) + 1):
            with self._guard(url):
                response = self._client.request(method, url, json=body)
            if response.status_code in RETRY_STATUS and attempt < len(RETRY_WAITS):
                time.sleep(RETRY_WAITS[attempt])
                continue
            if response.status_code >= 400:
                raise self._rejected(url, response)
            return response
        raise AssertionError("unreachable")  # pragma: no cover

    def _guard(self, url: str) -> Any:
        return _Guard(self, url)

    def _json(self, response: Any) -> Any:
        try:
            return response.json()
        except ValueError:
            kind = response.headers.get("content-type", "no content type").split(";")[0]
            raise NotJson(
                f"the model server at {self.url} sent a reply that is not JSON ({kind}: "
                f"{_clip(response.text)!r}) to {response.request.method} {response.request.url.path}; "
                "is llm_url the server's OpenAI-compatible base URL (usually ending in /v1)?"
            ) from None

    def _rejected(self, url: str, response: Any) -> Rejected:
        status, reason = response.status_code, response.reason_phrase or ""
        detail = _detail(response)
        path = urlsplit(url).path
        if status in (401, 403):
            fix = (
                f"check the key in ${self.key_env}"
                if self.key_env
                else "the server wants an API key: name the environment variable that holds it with "
                "llm_api_key_env (LOCALMEM_LLM_API_KEY_ENV)"
            )
            message = f"the model server at {self.url} refused the API key ({status} {reason})"
        elif status == 404 and not self.url.endswith("/v1") and "model" not in detail.lower():
            message = (
                f"the model server at {self.url} has no {path} ({status} {reason}); OpenAI-compatible "
                f"servers usually serve it under /v1: try --llm-url {self.url}/v1"
            )
            fix = None
        else:
            message = (
                f"the model server at {self.url} answered {status} {reason} to "
                f"{response.request.method} {path}: {_clip(detail) or 'no details'}"
            )
            fix = "see the server's log"
        return Rejected(message, status, detail, fix)


class _Guard:
    """Turns the HTTP library's exceptions into one-line errors naming the URL."""

    def __init__(self, transport: Transport, url: str) -> None:
        self.t, self.url = transport, url

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> bool:
        if exc is None:
            return False
        httpx2 = self.t._httpx
        base = self.t.url
        if isinstance(exc, httpx2.ConnectTimeout):
            raise ModelServerError(
                f"could not connect to the model server at {base} within {CONNECT_TIMEOUT:g} s",
                "check that it runs and that llm_url is right",
            ) from None
        if isinstance(exc, httpx2.TimeoutException):
            raise ModelServerError(
                f"the model server at {base} did not answer within {self.t.timeout:g} s "
                "(llm_timeout); the model may be too slow for it or busy with other "
                "calls: raise llm_timeout, or use fewer workers"
            ) from None
        if isinstance(exc, httpx2.ConnectError):
            raise ModelServerError(
                f"cannot reach the model server at {base} ({_reason(exc)}); start it, "
                "or fix llm_url (--llm-url, LOCALMEM_LLM_URL)"
            ) from None
        if isinstance(exc, (httpx2.RemoteProtocolError, httpx2.ReadError, httpx2.WriteError)):
            raise ModelServerError(
                f"the model server at {base} dropped the connection ({_reason(exc)}); "
                "did it stop or crash? Check its log and re-run: what was done "
                "is kept"
            ) from None
        if isinstance(exc, httpx2.HTTPError):
            raise ModelServerError(f"talking to the model server at {base} failed: {_reason(exc)}") from None
        return False


def _detail(response: Any) -> str:
    """The server's own error message: OpenAI's ``{"error": {"message": ...}}``, FastAPI's
    ``{"detail": ...}``, Ollama's ``{"error": "..."}``, or the raw text."""
    try:
        body = response.json()
    except ValueError:
        return " ".join(response.text.split())
    if isinstance(body, dict):
        error = body.get("error", body.get("detail", body.get("message")))
        if isinstance(error, dict):
            error = error.get("message", error)
        if error is not None:
            return " ".join(str(error).split())
    return " ".join(json.dumps(body).split())


def _reason(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    for known in (
        "Connection refused",
        "Name or service not known",
        "Connection reset",
        "No route to host",
        "Temporary failure in name resolution",
    ):
        if known.lower() in text.lower():
            return known.lower()
    return _clip(text, 120)


def _clip(text: str, width: int = _SHOWN) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
