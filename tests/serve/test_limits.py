"""The body limit of `localmem serve` (localmem/serve/limits.py) in this process: a body
without a Content-Length (chunked) is counted as it comes and refused when it passes the
limit, whether the route answers the error or lets it through; and the log filter that keeps
tokens and search text out of every log line."""

from __future__ import annotations

import json
import logging

import anyio
import pytest

pytest.importorskip("starlette", reason="pip install 'localmem[mcp]' to test localmem serve")

from starlette.applications import Starlette  # noqa: E402
from starlette.middleware import Middleware  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import JSONResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402

from localmem.serve.api import guarded  # noqa: E402
from localmem.serve.limits import BodyLimitMiddleware, Limits  # noqa: E402


def run(app, path: str, chunks: list[bytes], headers: tuple[tuple[bytes, bytes], ...] = ()) -> tuple[int, dict, dict]:
    """``chunks`` sent as the body of a POST to ``path``; the status, headers and JSON answered,
    and how much of the body the app asked for."""
    scope = {"type": "http", "method": "POST", "path": path, "headers": list(headers), "query_string": b""}
    pending = list(chunks)
    read = {"chunks": 0}

    async def receive() -> dict:
        if not pending:
            await anyio.sleep_forever()
        read["chunks"] += 1
        chunk = pending.pop(0)
        return {"type": "http.request", "body": chunk, "more_body": bool(pending)}

    sent: list[dict] = []

    async def send(message: dict) -> None:
        sent.append(message)

    anyio.run(app, scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], dict(start["headers"]), {**json.loads(body), "_read": read["chunks"]}


async def whole_body(request: Request) -> JSONResponse:
    return JSONResponse({"size": len(await request.body())})


async def whole_body_lanes(request: Request, lanes) -> JSONResponse:
    return await whole_body(request)


LIMITS = Limits(max_body=1000, max_upload=5000)
# As in the server: the limit is a middleware of the app (inside Starlette's error handler).
APP = Starlette(
    routes=[
        Route("/api/raw", whole_body, methods=["POST"]),
        Route("/api/x", guarded(whole_body_lanes), methods=["POST"]),
    ],
    middleware=[Middleware(BodyLimitMiddleware, limits=LIMITS)],
)
APP.state.lanes = None  # the routes here need none


@pytest.mark.parametrize("path", ["/api/raw", "/api/x"])  # the route lets the error through, or answers it
def test_a_chunked_body_is_refused_when_it_passes_the_limit(path):
    status, headers, data = run(APP, path, [b"x" * 400] * 10)
    assert status == 413 and data["code"] == "too_large"
    assert headers[b"connection"] == b"close"
    assert data["_read"] == 3  # 1,200 bytes: it stopped reading there


def test_a_body_within_the_limit_is_read_whole():
    status, _, data = run(APP, "/api/raw", [b"x" * 400, b"x" * 400])
    assert status == 200 and data["size"] == 800


def test_an_upload_path_has_the_upload_limit():
    limits = Limits(max_body=1000, max_upload=5000)
    assert limits.body_limit("/api/ingest") == limits.body_limit("/curate/import") == 5000
    assert limits.body_limit("/api/add") == 1000


def test_a_content_length_over_the_limit_is_refused_before_the_body():
    status, _, data = run(APP, "/api/raw", [b"x"], ((b"content-length", b"2000"),))
    assert status == 413 and data["_read"] == 0
    status, _, data = run(APP, "/api/raw", [b"x"], ((b"content-length", b"12abc"),))
    assert status == 400 and data["code"] == "usage"


def test_logs_never_hold_a_token_or_a_search():
    from localmem.serve.app import Redacted

    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        1,
        '%s "GET %s HTTP/1.1" 200',
        ("127.0.0.1", "/?token=abc&q=oslo"),
        None,
    )
    Redacted(["s3cret"]).filter(record)
    assert record.getMessage() == '127.0.0.1 "GET /?token=[hidden]&q=[hidden] HTTP/1.1" 200'
    record = logging.LogRecord("mcp", logging.DEBUG, __file__, 1, "call with s3cret", (), None)
    Redacted(["s3cret"]).filter(record)
    assert record.getMessage() == "call with [hidden]"


def test_the_default_limits_are_the_settings_defaults():
    """One declaration: the limits a server gets with no setting changed, and those built
    without a config (bench, tests), are the same (config.py declares them)."""
    from localmem.config import Config

    assert Limits() == Limits.of(Config())
    assert Limits.of(Config(serve_max_connections=7, serve_header_timeout=1.5)).max_connections == 7
