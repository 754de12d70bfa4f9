"""The page's cookie in a real browser (headless Chromium from the distribution, driven by
Playwright): browsers scope cookies by host name, not port, so a cookie of 127.0.0.1 would reach
every server on 127.0.0.1. The page lives on a per-start ``<random>.localhost`` name instead
(localmem/serve/security.py): another local server that the browser visits receives no cookie of
it, and two servers in one browser keep their own.

CI: apt-get install -y chromium; python -m pytest -m browser tests/serve/test_browser_cookies.py"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

import pytest

from tests.serve.server import STORY, seed, spawn
from tests.serve.test_browser import ARGS, CHROMIUM

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.plain_only,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium (apt-get install chromium)"),
]
playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (no browser download)")
pytest.importorskip("starlette", reason="pip install 'localmem[mcp]' to test localmem serve")


class Recorder(BaseHTTPRequestHandler):
    """Another local server: it answers every GET with a small page and keeps the headers."""

    seen: list[dict[str, str]] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        type(self).seen.append({"path": self.path, **{k.lower(): v for k, v in self.headers.items()}})
        body = b"<!doctype html><title>another server</title><p>hello"
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def other_server():
    Recorder.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_address[1], Recorder.seen
    httpd.shutdown()
    httpd.server_close()


def test_another_local_server_gets_no_cookie_and_two_servers_keep_theirs(tmp_path, other_server):
    other_port, seen = other_server
    servers = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        db = tmp_path / name / "m.db"
        seed(db, STORY)
        servers.append(spawn(tmp_path / name, db))
    a, b = servers
    try:
        with playwright_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
            context = browser.new_context()
            page = context.new_page()

            # Open each printed URL in the same browser, as a user running two servers would.
            for server in (a, b):
                url = f"{server.page}/?token={server.token}"
                assert page.goto(url).status == 200
                assert urlparse(page.url).query == "" and page.title().startswith("Search & ask")
            assert urlparse(a.page).hostname != urlparse(b.page).hostname

            # Both keep working: neither cookie replaced the other.
            for server in (a, b, a):
                response = page.goto(f"{server.page}/timeline")
                assert response.status == 200 and page.title().startswith("Timeline"), server.page
            cookies = context.cookies()
            assert {c["domain"] for c in cookies} == {urlparse(a.page).hostname, urlparse(b.page).hostname}
            assert all(c["httpOnly"] and c["sameSite"] == "Strict" for c in cookies)

            # Another local server the browser visits (a typed address, a link from elsewhere)
            # receives nothing: not the cookie, not a token.
            for host in ("127.0.0.1", "localhost"):
                assert page.goto(f"http://{host}:{other_port}/page").status == 200
            assert len(seen) >= 2
            for request in seen:
                sent = " ".join(request.values())
                assert "cookie" not in request, request
                assert a.token not in sent and b.token not in sent

            # And a server's own 127.0.0.1 address, given the cookie's value by hand, is not
            # authenticated by it: the cookie counts only under the page's own name.
            page.context.add_cookies([{"name": "localmem_token", "value": a.token, "domain": "127.0.0.1", "path": "/"}])
            assert page.goto(f"{a.base}/timeline").status == 401
            assert page.goto(f"{a.page}/timeline").status == 200
            context.close()
            browser.close()
    finally:
        for server in servers:
            server.stop()
