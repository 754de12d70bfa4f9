"""``localmem serve``: one process on 127.0.0.1 serving the web page, the JSON API (``/api``) and
MCP over streamable HTTP (``/mcp``, the tools of ``localmem mcp``), all behind the token and the
checks of :mod:`localmem.serve.security`.

Built on Starlette and uvicorn, which the ``mcp`` extra already installs. Stopping (Ctrl-C or
SIGTERM) finishes the requests in flight, then closes the store, flushing background extraction
as ``localmem mcp`` does.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Callable

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from ..answer.fast import warm
from ..memory import Memory
from ..models.factory import backend_name
from . import api, discovery, pages
from .calls import Lanes
from .security import Guard, GuardMiddleware

log = logging.getLogger("localmem.serve")

STATIC = Path(__file__).parent / "static"


def build_app(writer: Memory, reader: Memory, guard: Guard, *, mcp: bool = True) -> Starlette:
    """The whole server as one ASGI app: ``writer`` and ``reader`` are two Memory objects on the
    same store (see :mod:`localmem.serve.calls`); ``mcp``: also serve the MCP tools at /mcp."""
    routes: list[Any] = [*api.routes(), *pages.routes(), Mount("/static", StaticFiles(directory=STATIC), name="static")]
    mcp_app = None
    if mcp:
        from ..mcp_server import build_server

        host = next(iter(sorted(guard.hosts))).rsplit(":", 1)[0]
        mcp_app = build_server(writer).streamable_http_app(host="0.0.0.0" if guard.any_host else host.strip("[]"))
        routes += list(mcp_app.routes)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if mcp_app is None:
            yield
            return
        async with mcp_app.router.lifespan_context(mcp_app):  # the MCP session manager
            yield

    app = Starlette(routes=routes, middleware=[Middleware(GuardMiddleware, guard=guard)], lifespan=lifespan)
    app.state.lanes = Lanes.of(writer, reader)
    app.state.guard = guard
    return app


def open_reader(writer: Memory) -> Memory:
    """A second Memory on the writer's store, with its config (and key) and its models."""
    return Memory(config=writer.config, models=writer.models, create=False)


def warm_up(reader: Memory) -> None:
    """Import what the first page needs (the search module's imports take most of a cold first
    page) before the URL is printed; no model is loaded."""
    reader.stats()
    reader.recent(1)


def preload(writer: Memory) -> threading.Thread | None:
    """Load the in-process LLM and evaluate the answer instructions in a background thread
    (``serve_preload``), so the first ``ask`` finds the model warm. A model server backend has
    nothing to load here, and a model that cannot be loaded is reported at the first ask, as
    without preloading."""
    if not writer.config.serve_preload or backend_name("llm", writer.config) != "llama":
        return None

    def run() -> None:
        try:
            seconds = warm(writer.models.llm)
        except Exception as exc:  # noqa: BLE001 (logged; the first ask reports it to its caller)
            log.info("the LLM was not preloaded: %s", exc)
            return
        if seconds is not None:
            log.info("LLM loaded and answer instructions evaluated in %.1f s", seconds)

    thread = threading.Thread(target=run, name="localmem-preload", daemon=True)
    thread.start()
    return thread


class Announced:
    """A uvicorn server that leaves a discovery file for the command line once it listens, and
    takes it back as it stops (:mod:`.discovery`)."""

    def __init__(self, config: Any, writer: Memory, guard: Guard) -> None:
        import uvicorn

        announced = self

        class Server(uvicorn.Server):
            async def startup(self, sockets: Any = None) -> None:
                await super().startup(sockets)
                if self.started:
                    announced.announce()

            async def shutdown(self, sockets: Any = None) -> None:
                announced.withdraw()
                await super().shutdown(sockets)

        self.server = Server(config)
        self.config = config
        self.writer = writer
        self.guard = guard
        self.path: Path | None = None

    def run(self) -> None:
        try:
            self.server.run()
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
    extraction). ``announce`` receives the URL to open, with its token."""
    import uvicorn

    from ..mcp_server import setup_logging

    setup_logging(log_file, debug)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # as Ctrl-C: the flush below runs
    guard = Guard.create(host, port, allow_remote)
    reader = open_reader(writer)
    try:
        if writer.config.extract == "llm":
            writer.extraction.in_background()
        app = build_app(writer, reader, guard)
        warm_up(reader)
        preload(writer)
        shown = f"[{host}]" if ":" in host else host
        link = f"http://{shown}:{port}/?token={guard.token}"
        (announce or (lambda text: print(text, file=sys.stderr, flush=True)))(link)
        log.info("serving %s, namespace %r, at http://%s:%d/ (MCP at /mcp)", writer.path, writer.namespace, shown, port)
        config = uvicorn.Config(app, host=host, port=port, log_config=None, lifespan="on", timeout_graceful_shutdown=10)
        Announced(config, writer, guard).run()
    except KeyboardInterrupt:
        log.info("stopping (signal)")
    finally:
        reader.close()
        try:
            writer.close()
        except KeyboardInterrupt:  # stopped again during the flush: the next build redoes that episode
            log.warning("stopped during the final extraction; the next build finishes it")
        log.info("stopped")
