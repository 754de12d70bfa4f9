"""``localmem serve``: one process on 127.0.0.1 serving the web page, the JSON API (``/api``) and
MCP over streamable HTTP (``/mcp``, the tools of ``localmem mcp``), all behind the token and the
checks of :mod:`localmem.serve.security`.

Built on Starlette and uvicorn, which the ``mcp`` extra already installs. Stopping (Ctrl-C or
SIGTERM) finishes the requests in flight, then closes the store, flushing background extraction
as ``localmem mcp`` does.
"""

from __future__ import annotations

import errno
import logging
import re
import signal
import socket
import sys
import threading
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Callable

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from ..answer.fast import warm
from ..config import LLM_BACKENDS_AUTO
from ..errors import AddressInUseError, ConfigError, NotFoundError
from ..memory import Memory
from ..models.factory import backend_name
from ..models.protocols import Warmable
from ..redact import redact
from . import api, discovery, pages
from .calls import Lanes, error_dict
from .limits import BodyLimitMiddleware, Limits, server_options
from .pages.errors import page_not_found
from .security import Guard, GuardMiddleware

log = logging.getLogger("localmem.serve")

STATIC = Path(__file__).parent / "static"


def build_app(
    writer: Memory, reader: Memory, guard: Guard, *, mcp: bool = True, limits: Limits | None = None
) -> Starlette:
    """The whole server as one ASGI app: ``writer`` and ``reader`` are two Memory objects on the
    same store (see :mod:`localmem.serve.calls`); ``mcp``: also serve the MCP tools at /mcp;
    ``limits``: the body sizes (:mod:`.limits`; from the writer's settings when not given)."""
    routes: list[Any] = [*api.routes(), *pages.routes(), Mount("/static", StaticFiles(directory=STATIC), name="static")]
    mcp_app = None
    if mcp:
        from ..mcp_server import build_server

        host = min(h for h in guard.hosts if h != guard.page_host).rsplit(":", 1)[0]
        mcp_app = build_server(writer).streamable_http_app(host="0.0.0.0" if guard.any_host else host.strip("[]"))
        routes += list(mcp_app.routes)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if mcp_app is None:
            yield
            return
        async with mcp_app.router.lifespan_context(mcp_app):  # the MCP session manager
            yield

    middleware = [
        Middleware(GuardMiddleware, guard=guard),  # first: nothing of a body is read for a refused request
        Middleware(BodyLimitMiddleware, limits=limits or Limits.of(writer.config)),
    ]
    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan, exception_handlers={404: not_found})
    app.state.lanes = Lanes.of(writer, reader)
    app.state.guard = guard
    app.state.model = ModelLoad("none")  # serve() sets where the model stands (preload)
    app.state.import_reports = {}  # the page's last import reports, for the redirect after an import
    return app


async def not_found(request: Request, exc: Exception) -> Response:
    """No route here: the page's own 404 (with the page's advice), the CLI's JSON shape for
    the API, plain text elsewhere."""
    path = request.url.path
    if path.startswith("/api/") or path == "/api":
        error = error_dict(NotFoundError(f"no API call at {path}", "the calls are listed at /api/openapi.json"))
        return JSONResponse(error, status_code=404)
    if path.startswith(("/static/", "/mcp")):
        return PlainTextResponse("Not Found", status_code=404)
    return page_not_found(request)


def open_reader(writer: Memory) -> Memory:
    """A second Memory on the writer's store, with its config (and key) and its models."""
    return Memory(config=writer.config, models=writer.models, create=False)


def warm_up(reader: Memory) -> None:
    """Import what the first page needs (the search module's imports take most of a cold first
    page) before the URL is printed; no model is loaded."""
    reader.stats()
    reader.recent(1)


class ModelLoad:
    """Where the in-process LLM stands, for the page (which never waits for it) and for an ask
    that has to: ``mode`` is "background" (loaded as the server starts, ``serve_preload``),
    "first-ask" (loaded by the first question) or "none" (a model server, or nothing to load);
    ``state`` is "loading", "ready" or "failed" in the background mode."""

    def __init__(self, mode: str, size: int | None = None) -> None:
        self.mode = mode
        self.size = size  # bytes of the model file: about what it takes in memory once loaded
        self.state = "loading" if mode == "background" else ""
        self.started = time.monotonic()
        self.seconds: float | None = None
        self.error = ""

    @property
    def loading(self) -> bool:
        return self.state == "loading"

    def since(self) -> float:
        return time.monotonic() - self.started


def _model_size(llm: Any) -> int | None:
    path = getattr(llm, "path", None)
    try:
        return Path(path).stat().st_size if path else None
    except OSError:
        return None


def preload(writer: Memory) -> tuple[ModelLoad, threading.Thread | None]:
    """Load the in-process LLM and evaluate the answer instructions in a background thread
    (``serve_preload``), so the first ``ask`` finds the model warm; the page never waits for it.
    A model server backend has nothing to load here, and a model that cannot be loaded is
    reported at the first ask, as without preloading.

    Why in the background rather than at the first ask: loading took 1.9 s (the bundled 1.5B
    model, 1.1 GB) and a browsing user's pages are served meanwhile, while the first question
    would otherwise wait for it; ``serve_preload = false`` keeps the memory free until then."""
    if backend_name("llm", writer.config) == LLM_BACKENDS_AUTO[0]:  # a model server keeps its own
        return ModelLoad("none"), None
    if not writer.config.serve_preload:
        return ModelLoad("first-ask"), None
    load = ModelLoad("background")

    def run() -> None:
        try:
            llm = writer.models.llm  # assembled from its packages here, once on a machine
            if not isinstance(llm, Warmable):
                load.mode, load.state = "none", ""
                return
            load.size = _model_size(llm)
            seconds = warm(llm)
        except Exception as exc:  # noqa: BLE001 (logged; the first ask reports it to its caller)
            load.state, load.error = "failed", str(exc)
            log.info("the LLM was not preloaded: %s", exc)
            return
        load.state, load.seconds = "ready", seconds
        if seconds is not None:
            log.info("LLM loaded and answer instructions evaluated in %.1f s", seconds)

    thread = threading.Thread(target=run, name="localmem-preload", daemon=True)
    thread.start()
    return load, thread


class Announced:
    """A uvicorn server that, once it listens, says so (``on_listening``: the URL is printed
    then, never before) and leaves a discovery file for the command line, and takes the file
    back as it stops (:mod:`.discovery`)."""

    def __init__(
        self, config: Any, writer: Memory, guard: Guard, on_listening: Callable[[], None] | None = None
    ) -> None:
        import uvicorn

        announced = self

        class Server(uvicorn.Server):
            async def startup(self, sockets: Any = None) -> None:
                await super().startup(sockets)
                if self.started:
                    if on_listening is not None:
                        on_listening()
                    announced.announce()

            async def shutdown(self, sockets: Any = None) -> None:
                announced.withdraw()
                await super().shutdown(sockets)

        self.server = Server(config)
        self.config = config
        self.writer = writer
        self.guard = guard
        self.path: Path | None = None

    def run(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            self.server.run(sockets=sockets)
        finally:
            self.withdraw()

    def announce(self) -> None:
        if str(self.writer.path) == ":memory:":
            return
        try:
            self.path = discovery.announce(
                self.writer.path,
                self.writer.namespace,
                self.config.host,
                self.config.port,
                self.guard.cli_token,
                discovery.answer_settings(self.writer.config),
            )
        except (discovery.Untrusted, OSError) as exc:
            log.warning("the command line will not find this server: %s", exc)
            return
        if self.path is not None:
            log.info("localmem ask on this store and namespace will use this server (%s)", self.path)

    def withdraw(self) -> None:
        path, self.path = self.path, None
        if path is not None:
            discovery.withdraw(path, self.guard.cli_token)


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host``:``port`` (0: any free port), before anything is announced: a
    port another process holds is an :class:`AddressInUseError`, never a URL pointing at it."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ConfigError(f"--address {host}:{port}: {exc.strerror}; give an IP address such as 127.0.0.1") from None
    found.sort(key=lambda info: info[0] != socket.AF_INET)  # "localhost": 127.0.0.1 first, as before
    family, kind, proto, _, address = found[0]
    sock = socket.socket(family, kind, proto)
    try:
        # Not SO_REUSEPORT: a port another socket listens on stays refused (SO_REUSEADDR only
        # lets a restart take its own port back from connections still closing).
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise AddressInUseError(host, port) from None
        raise ConfigError(f"--address {host}:{port}: cannot listen there: {exc.strerror or exc}") from None
    return sock


class Redacted(logging.Filter):
    """Keeps the secrets and the memory's words out of every log line, whatever logs them (a
    library at debug level included): the run's tokens, and the values of ``token``, ``csrf``,
    ``nonce`` and ``q`` in a URL."""

    QUERY = re.compile(r"(?i)\b(token|csrf|nonce|q)=[^&\s\"']*")

    def __init__(self, secrets: list[str]) -> None:
        super().__init__()
        self.secrets = [s for s in secrets if s]

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        clean = self.QUERY.sub(r"\1=[hidden]", text)
        for secret in self.secrets:
            clean = clean.replace(secret, "[hidden]")
        if clean != text:
            record.msg, record.args = clean, None
        return True


# Libraries that log what a request holds (a URL with its query, an MCP call with its arguments)
# at debug level: --debug keeps them at INFO, where they log neither.
CHATTY = ("uvicorn.access", "mcp", "httpx", "httpcore", "multipart", "python_multipart", "sse_starlette")


def _quiet_logs(guard: Guard) -> None:
    for name in CHATTY:
        logger = logging.getLogger(name)
        logger.setLevel(max(logger.getEffectiveLevel(), logging.INFO))
    redact = Redacted([guard.token, guard.csrf, guard.cli_token, guard.page_host.split(".", 1)[0]])
    for handler in logging.getLogger().handlers:
        handler.addFilter(redact)


def serve(
    writer: Memory,
    host: str,
    port: int,
    *,
    allow_remote: bool = False,
    log_file: Path | None = None,
    debug: bool = False,
    announce: Callable[[str], None] | None = None,
) -> None:
    """Serve ``writer``'s store until Ctrl-C or SIGTERM, then close it (flushing background
    extraction). ``announce`` receives the URL to open, with its token, once the server listens
    (``port`` 0: on the free port it got)."""
    import uvicorn

    from ..mcp_server import setup_logging

    try:
        sock = listen(host, port)  # before anything else: a port that is taken stops here
    except BaseException:
        writer.close()
        raise
    port = sock.getsockname()[1]
    setup_logging(log_file, debug)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # as Ctrl-C: the flush below runs
    try:
        shared = writer.config.serve_token()
    except BaseException:
        sock.close()
        writer.close()
        raise
    guard = Guard.create(host, port, allow_remote, shared)
    _quiet_logs(guard)
    limits = Limits.of(writer.config).within_files()
    if limits.max_connections < writer.config.serve_max_connections:
        log.warning(
            "at most %d connections at once (serve_max_connections is %d): the process may not open more files",
            limits.max_connections,
            writer.config.serve_max_connections,
        )
    reader = open_reader(writer)
    try:
        if writer.config.extract == "llm":
            writer.extraction.in_background()
        app = build_app(writer, reader, guard, limits=limits)
        warm_up(reader)
        app.state.model, _ = preload(writer)
        shown = f"[{host}]" if ":" in host else host
        link = guard.page_url(host, port)
        say = announce or (lambda text: print(text, file=sys.stderr, flush=True))
        log.info(
            "serving %s, namespace %r, at http://%s:%d/ (MCP at /mcp)",
            redact(writer.path),
            writer.namespace,
            shown,
            port,
        )
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_config=None,
            lifespan="on",
            timeout_graceful_shutdown=10,
            **server_options(limits, guard.holds_token),
        )
        Announced(config, writer, guard, on_listening=lambda: say(link)).run(sockets=[sock])
    except KeyboardInterrupt:
        log.info("stopping (signal)")
    finally:
        sock.close()
        reader.close()
        try:
            writer.close()
        except KeyboardInterrupt:  # stopped again during the flush: the next build redoes that episode
            log.warning("stopped during the final extraction; the next build finishes it")
        log.info("stopped")
