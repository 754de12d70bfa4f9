"""Who may talk to ``localmem serve``: the token, the Host and Origin checks, forgery protection.

Every request but the static assets needs the token made at start-up: in ``?token=`` (the URL
printed at start; the browser then gets it as a cookie and the token leaves the address bar), in
the cookie, or in an ``Authorization: Bearer`` header (API and MCP clients).

Browsers scope cookies by host name, not by port: a cookie set by ``127.0.0.1:8770`` is sent to
every server on 127.0.0.1. So the page lives on a host name of its own, made anew at every start
and unguessable: ``<random>.localhost`` (browsers resolve every ``*.localhost`` name to the
loopback address, without asking DNS). The cookie is set for that name only, and counts only when
a request names it in its Host header: another local server never receives it, and a cookie that
reached this server under another name is worth nothing. ``?token=`` given at ``127.0.0.1``
moves the browser to that name first.

The Host header must name the address the server listens on (or the page's name), and an
Origin header, when sent, that same place: a page elsewhere cannot reach the server through DNS
rebinding. A request that changes the store
(anything but GET and HEAD) made with the cookie must also carry the CSRF token (``?csrf=`` in a
form's action, or an ``X-CSRF-Token`` header); one made with the Bearer header needs none, since
a browser never sends that header to another site on its own. Every response forbids scripts and
styles from anywhere but the server itself (a stored ``<script>`` shown as text could not run
anyway), framing, and the Referer header outside the server.

The command line gets a token of its own from the discovery file (:mod:`.discovery`): it is good
for ``GET /api/search`` and ``POST /api/ask`` only. Before it sends a question, the command line
asks ``GET /api/hello?nonce=N`` (no token; the route is :func:`.api.hello`) and checks the
answer, an HMAC of the nonce with that token: a process that took the port of a server that died
cannot pass for it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass
from http.cookies import SimpleCookie
from typing import Any, Awaitable, Callable
from urllib.parse import parse_qsl, quote, urlencode

from .markup import refused_html

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE = "localmem_token"
CSRF_HEADER = "x-csrf-token"
PUBLIC_PREFIXES = ("/static/",)  # the package's own CSS and JS: nothing private
SAFE_METHODS = ("GET", "HEAD")
HELLO = "/api/hello"
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
CLI_ROUTES = frozenset({("GET", "/api/search"), ("POST", "/api/ask")})  # what the CLI's token may call
MAX_NONCE = 128
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),  # no-referrer would make form posts send "Origin: null"
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-resource-policy", b"same-origin"),
]


@dataclass(frozen=True)
class Guard:
    """The secrets of one server run and where it may be reached."""

    token: str
    csrf: str
    hosts: frozenset[str]  # Host header values accepted ("127.0.0.1:8765", "localhost:8765")
    any_host: bool = False  # --allow-remote: any Host, and Origin must match it
    cli_token: str = ""  # the discovery file's: ask and search only (none: refused)
    page_host: str = ""  # "<random>.localhost:PORT": where the page and its cookie live ("": remote)

    @classmethod
    def create(cls, host: str, port: int, allow_remote: bool = False, shared: str | None = None) -> "Guard":
        """New random tokens for a server listening on ``host``:``port`` (the port it got).
        ``shared``: the token every process serving the store accepts (``serve_token_env``),
        and the CSRF token derived from it, so that a page served by one process may post to
        another behind the same address; the command line's token stays this process's."""
        names = {host, "127.0.0.1", "localhost"} if host in ("127.0.0.1", "localhost") else {host}
        if host in ("::1", "[::1]"):
            names = {"[::1]", "localhost"}
        # A DNS label (letters and digits, at most 63) a browser keeps as typed: 128 random bits.
        page_host = f"{secrets.token_hex(16)}.localhost:{port}" if host in LOOPBACK else ""
        hosts = {f"{name}:{port}" for name in names}
        if page_host:
            hosts.add(page_host)
        token, csrf, cli_token = (secrets.token_urlsafe(24) for _ in range(3))
        if shared is not None:
            token = shared
            csrf = hmac.new(shared.encode(), b"localmem-csrf", hashlib.sha256).hexdigest()
        return cls(token, csrf, frozenset(hosts), allow_remote, cli_token, page_host)

    def page_url(self, host: str, port: int) -> str:
        """The URL to open, with the token: on the page's own host name (loopback), else on
        ``host``:``port``."""
        shown = f"[{host}]" if ":" in host else host
        return f"http://{self.page_host or f'{shown}:{port}'}/?token={self.token}"

    def cookie_host_ok(self, host: str | None) -> bool:
        """The cookie counts only on the page's host name: sent under another name, it came
        from somewhere else."""
        return not self.page_host or host == self.page_host

    def host_ok(self, host: str | None) -> bool:
        return bool(host) and (self.any_host or host in self.hosts)

    def origin_ok(self, origin: str | None, host: str | None) -> bool:
        """No Origin (not sent by a browser for a same-origin GET), or this server's own."""
        if origin is None:
            return True
        return origin in {f"http://{h}" for h in self.hosts} or (self.any_host and origin == f"http://{host}")

    def token_ok(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.token.encode())

    def csrf_ok(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.csrf.encode())

    def proofs(self, scope: Scope) -> tuple[bool, bool, bool]:
        """Which of the cookie, the Bearer header and ``?token=`` of this request hold a token
        of this run (the command line's counts on its own routes only)."""
        headers = _headers(scope)
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        auth = headers.get("authorization", "")
        bearer = auth[7:].strip() if auth.lower().startswith("bearer ") else None
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except Exception:  # a malformed Cookie header counts as none
            cookie = SimpleCookie()
        by_cookie = (
            COOKIE in cookie and self.cookie_host_ok(headers.get("host")) and self.token_ok(cookie[COOKIE].value)
        )
        by_bearer = self.token_ok(bearer) or self.cli_ok(bearer, scope["method"], scope["path"])
        return by_cookie, by_bearer, self.token_ok(query.get("token"))

    def holds_token(self, scope: Scope) -> bool:
        """Whether this request shows a token of this run, whatever its route (a public one
        included): the connection it came on is then the owner's (:mod:`.limits`)."""
        return any(self.proofs(scope))

    def cli_ok(self, given: str | None, method: str, path: str) -> bool:
        """The command line's token, on a route it may call."""
        return (
            bool(self.cli_token)
            and given is not None
            and (method, path) in CLI_ROUTES
            and hmac.compare_digest(given.encode(), self.cli_token.encode())
        )


def hello_proof(cli_token: str, nonce: str) -> str:
    """What the server answers to ``/api/hello?nonce=``: proof that it holds the CLI's token,
    which it does not reveal."""
    return hmac.new(cli_token.encode(), f"localmem-hello:{nonce}".encode(), hashlib.sha256).hexdigest()


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


def _is_api(path: str) -> bool:
    return path.startswith("/api/") or path == "/mcp" or path.startswith("/mcp/")


class GuardMiddleware:
    """The checks above, for every HTTP request, before any route runs. It also adds the
    security headers, and ``Server-Timing: app;dur=MS`` (the server's time until the response
    headers went out) that ``localmem bench serve`` reads."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "websocket":  # nothing here speaks websocket
                await send({"type": "websocket.close", "code": 1008})
                return
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        path: str = scope["path"]
        headers = _headers(scope)
        host = headers.get("host")
        refusal = self._refusal(scope, path, headers, host)
        if refusal is not None:
            status, code, message, hint = refusal
            await refuse(send, path, status, code, message, hint)
            return
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        if "token" in query and scope["method"] in SAFE_METHODS and not _is_api(path):
            await self._to_cookie(send, path, query, host)
            return

        async def timed_send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                extra = [
                    *SECURITY_HEADERS,
                    (b"server-timing", f"app;dur={(time.perf_counter() - started) * 1000:.1f}".encode()),
                ]
                if not path.startswith(PUBLIC_PREFIXES):
                    extra.append((b"cache-control", b"no-store"))
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, timed_send)

    async def _to_cookie(self, send: Send, path: str, query: dict[str, str], host: str | None) -> None:
        """The printed URL: keep the token as a cookie of the page's host name, and take it out
        of the address bar. At another name of this server (127.0.0.1), go to the page's name
        first, token and all. ``path`` is the decoded path: "//elsewhere" must not become a
        Location that leaves this server, so it is quoted and given one leading slash."""
        guard = self.guard
        local = "/" + quote(path.lstrip("/"), safe="/:@!$&'()*+,;=-._~")
        if guard.page_host and host != guard.page_host:
            location = f"http://{guard.page_host}{local}?{urlencode(query)}"
            await _respond(send, 303, b"", [(b"location", location.encode())])
            return
        rest = urlencode({k: v for k, v in query.items() if k != "token"})
        cookie = f"{COOKIE}={guard.token}; HttpOnly; SameSite=Strict; Path=/"
        await _respond(send, 303, b"", [(b"location", (local + (f"?{rest}" if rest else "")).encode())], cookie)

    def _refusal(
        self, scope: Scope, path: str, headers: dict[str, str], host: str | None
    ) -> tuple[int, str, str, str] | None:
        """(status, code, message, hint) when the request is refused, else None."""
        guard = self.guard
        if not guard.host_ok(host):
            return 421, "bad_host", f"this server does not answer for host {host!r}", "open the URL localmem printed"
        if not guard.origin_ok(headers.get("origin"), host):
            return 403, "bad_origin", "requests from another site are refused", "open the URL localmem printed"
        if path.startswith(PUBLIC_PREFIXES) or path == HELLO:
            return None
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        by_cookie, by_bearer, by_query = guard.proofs(scope)
        if not (by_cookie or by_bearer or by_query):
            return (
                401,
                "unauthorized",
                "this needs the token localmem serve printed",
                "open the URL it printed (http://....localhost:PORT/?token=...), or send 'Authorization: Bearer TOKEN'",
            )
        if scope["method"] not in SAFE_METHODS and not by_bearer:
            if not (guard.csrf_ok(headers.get(CSRF_HEADER)) or guard.csrf_ok(query.get("csrf"))):
                return 403, "csrf", "this change was not sent by localmem's own page", "reload the page and try again"
        return None


async def refuse(send: Send, path: str, status: int, code: str, message: str, hint: str) -> None:
    """Answer a request this server refuses, before any route runs, and close its connection:
    the CLI's JSON error for the API and MCP, else a page (:func:`.markup.refused_html`)."""
    if _is_api(path):
        body = json.dumps({"error": message, "code": code, "hint": hint, "exit_code": 2}).encode()
        await _respond(send, status, body, [(b"content-type", b"application/json")])
    else:
        text = refused_html(status, message, hint)
        await _respond(send, status, text.encode(), [(b"content-type", b"text/html; charset=utf-8")])


async def _respond(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]], cookie: str | None = None
) -> None:
    extra = [(b"set-cookie", cookie.encode())] if cookie else []
    await send(
        {
            "type": "http.response.start",
            "status": status,
            # A refusal closes the connection: a body sent with it is not read, nor waited for.
            "headers": [
                *headers,
                *extra,
                *SECURITY_HEADERS,
                (b"cache-control", b"no-store"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
