"""The OpenAPI document cannot drift from the app: it lists exactly the app's /api routes (and
docs/serve.md's table the same), and each call's success status is one it documents (the
hostile test found /api/add answering 201, documented 200, and /api/hello missing)."""

from __future__ import annotations

import json
import re
from typing import Any

import anyio
import pytest

from tests.fakes import HashEmbedder
from tests.helpers import REPO, open_memory

pytest.importorskip("starlette", reason="pip install 'localmem[mcp]' to test localmem serve")

from starlette.routing import Route  # noqa: E402

from localmem.serve.api import openapi_document  # noqa: E402
from localmem.serve.app import build_app, open_reader  # noqa: E402
from localmem.serve.security import Guard  # noqa: E402

# The document against the routes, not the store: plain stores only, as tests/serve/test_api.py
# (the app's reader here is opened without the passphrase an encrypted run gives the writer).
pytestmark = pytest.mark.plain_only


def documented() -> set[tuple[str, str]]:
    return {(method.upper(), path) for path, ops in openapi_document()["paths"].items() for method in ops}


@pytest.fixture
def app(tmp_path):
    writer = open_memory(tmp_path / "m.db", embedder=HashEmbedder())
    writer.add("Ann", "I moved to Oslo last spring.", time="2024-03-02T10:00", conversation="chat", id="s0")
    reader = open_reader(writer)
    guard = Guard.create("127.0.0.1", 8770)
    yield build_app(writer, reader, guard, mcp=False), guard
    reader.close()
    writer.close()


def call(app, guard: Guard, method: str, target: str, body: Any = None, token: bool = True) -> tuple[int, Any]:
    """One request through the whole app (the guard included), in this process."""
    path, _, query = target.partition("?")
    raw = json.dumps(body).encode() if body is not None else b""
    headers = [(b"host", b"127.0.0.1:8770"), (b"content-type", b"application/json")]
    if token:
        headers.append((b"authorization", f"Bearer {guard.token}".encode()))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": query.encode(),
        "headers": headers,
        "server": ("127.0.0.1", 8770),
        "client": ("127.0.0.1", 50000),
    }
    sent: list[dict] = []
    given = False

    async def receive() -> dict:
        nonlocal given
        if given:
            await anyio.sleep_forever()
        given = True
        return {"type": "http.request", "body": raw, "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    anyio.run(app, scope, receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    data = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, json.loads(data) if data.startswith((b"{", b"[")) else data


def test_the_document_lists_exactly_the_app_s_api_routes(app):
    starlette_app, _ = app
    routes = {
        (method, route.path)
        for route in starlette_app.routes
        if isinstance(route, Route) and route.path.startswith("/api/")
        for method in (route.methods or set()) - {"HEAD"}
    }
    assert routes == documented()
    assert ("GET", "/api/hello") in routes


def test_docs_serve_md_lists_the_same_calls():
    text = (REPO / "docs" / "serve.md").read_text(encoding="utf-8")
    table = set(re.findall(r"^\| (GET|POST) \| `(/api/[^`?]+)", text, re.M))
    assert table == documented()


def test_each_call_answers_a_status_it_documents(app):
    starlette_app, guard = app
    doc = openapi_document()["paths"]

    def check(method: str, target: str, body: Any = None, token: bool = True) -> Any:
        status, data = call(starlette_app, guard, method, target, body, token)
        path = target.split("?", 1)[0]
        template = next(p for p in doc if re.fullmatch(re.sub(r"\{[^}]+\}", "[^/]+", p), path))
        assert str(status) in doc[template][method.lower()]["responses"], (method, target, status, data)
        return status, data

    assert check("POST", "/api/add", {"speaker": "Bob", "text": "Is it cold?", "id": "n1"})[0] == 201
    assert check("POST", "/api/add", {"speaker": "Bob", "text": "Is it cold?", "id": "n1"})[0] == 200
    check("GET", "/api/search?q=Oslo")
    check("GET", "/api/show/m:1")
    check("GET", "/api/context/m:1")
    check("POST", "/api/forget", {"match": "nothing like this"})
    check("POST", "/api/correct", {"item": "m:1", "text": "I moved to Bergen last spring."})
    for path in ("/api/people", "/api/episodes", "/api/timeline", "/api/speakers", "/api/stats", "/api/namespaces"):
        check("GET", path)
    check("GET", "/api/period?start=2024-03-01&end=2024-04-01")
    check("GET", "/api/openapi.json")
    status, data = check("GET", "/api/hello?nonce=" + "n" * 24, token=False)
    assert status == 200 and set(data) == {"proof", "pid"}
