"""Every page of ``localmem serve``, reached as a user would (from the menu, following every link),
on a store with a WhatsApp export, a ChatGPT export built with the (scripted) LLM and a text chat
built without it: no page shows an internal id without words beside it (a bare ``m:3`` or
``u:40``), an external id joined with ``|`` (``Jonas/2024-09-14T21:15:00|Jonas|0``) or the
absolute path a file was imported from; every link leads to a page.

python -m pytest tests/serve/test_pages_walk.py"""

from __future__ import annotations

import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

from tests.helpers import REPO, SAMPLE_CHAT
from tests.serve.server import IMPORTS, env, spawn

httpx = pytest.importorskip("httpx2")
pytest.importorskip("starlette", reason="pip install 'localmem[mcp]' to test localmem serve")
pytestmark = [pytest.mark.slow, pytest.mark.plain_only]

WHATSAPP = IMPORTS / "whatsapp" / "WhatsApp Chat with Book club.txt"
CHATGPT = IMPORTS / "chatgpt" / "conversations.json"
START = ["/", "/overview", "/conversations", "/timeline", "/timeline?period=week", "/people", "/curate",
         "/settings", "/?q=Lisbon+flat", "/curate/forget?match=flat",
         "/?q=Where+did+Priya+find+a+flat%3F&do=ask"]  # fmt: skip
MAX_PAGES = 600
# An id is readable when a word saying what it is stands before it ("message m:3").
KIND_WORD = re.compile(r"(message|episode|fact|gist|knowledge|memory|memories)\s*$", re.IGNORECASE)
ID = re.compile(r"(?<![\w:/])[mu]:\d+\b")
JOINED = re.compile(r"[^\s|]+\|[^\s|]+\|\d+")


class Visible(HTMLParser):
    """The text a person sees on a page (not attributes, scripts or styles), and its links."""

    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []
        self.links: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self._hidden += 1
        if tag == "a":
            href = dict(attrs).get("href")
            if href:
                self.links.append(href)
        self.text.append(" ")

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._hidden -= 1
        self.text.append(" ")

    def handle_data(self, data):
        if not self._hidden:
            self.text.append(data)


def problems(text: str, secrets: list[str]) -> list[str]:
    found = []
    for hit in ID.finditer(text):
        if not KIND_WORD.search(text[: hit.start()]):
            found.append(f"bare id {hit.group()!r} in …{text[max(0, hit.start() - 40) : hit.end() + 20]!r}")
    found += [f"|-joined id {m.group()!r}" for m in JOINED.finditer(text)]
    found += [f"absolute path {s!r}" for s in secrets if s in text]
    return found


def seed(tmp_path: Path, db: Path) -> None:
    def cli(*args: str) -> None:
        run = [sys.executable, "-m", "localmem", "--db", str(db), *args]
        subprocess.run(run, env=env(tmp_path), check=True, capture_output=True, timeout=300)

    cli("ingest", str(SAMPLE_CHAT))
    cli("ingest", str(WHATSAPP))
    cli("ingest", str(CHATGPT), "--extract", "llm")


def walk(server, start: list[str]) -> dict[str, tuple[int, str]]:
    """Every page reachable from ``start`` by links (GET only, this server's pages only)."""
    seen: dict[str, tuple[int, str]] = {}
    queue = list(start)
    with httpx.Client(base_url=server.base, headers=server.auth, timeout=30) as client:
        while queue and len(seen) < MAX_PAGES:
            path = queue.pop(0)
            if path in seen:
                continue
            response = client.get(path)
            seen[path] = (response.status_code, response.text)
            if "text/html" not in response.headers.get("content-type", ""):
                continue
            parser = Visible()
            parser.feed(response.text)
            for href in parser.links:
                target = urlsplit(urljoin(f"{server.base}{path}", href))
                if target.netloc != urlsplit(server.base).netloc or target.path.startswith(("/static", "/api", "/mcp")):
                    continue
                link = target.path + (f"?{target.query}" if target.query else "")
                if link not in seen:
                    queue.append(link)
    return seen


def test_every_page_shows_words_where_ids_are(tmp_path):
    db = tmp_path / "m.db"
    seed(tmp_path, db)
    server = spawn(tmp_path, db)
    try:
        pages = walk(server, START)
    finally:
        server.stop()
    assert len(pages) < MAX_PAGES, "the walk did not end"
    kinds = {urlsplit(p).path.split("/")[1] for p in pages}
    # The walk reached every kind of page: messages and built memories, people, periods, conversations.
    assert {"memory", "people", "period", "conversation", "conversations", "overview", "curate"} <= kinds, kinds
    assert sum(p.startswith("/memory/u:") for p in pages) >= 5 and sum(p.startswith("/memory/m:") for p in pages) >= 20
    secrets = [str(REPO), str(tmp_path), str(IMPORTS)]
    bad = {}
    for path, (status, html) in pages.items():
        if status != 200:
            bad[path] = [f"status {status}"]
            continue
        parser = Visible()
        parser.feed(html)
        text = " ".join("".join(parser.text).split())
        if path == "/settings":  # the settings say where the store and the models' packages are, on purpose
            text = text.replace(sys.prefix, "PREFIX")  # a venv inside the checkout (CI's) holds the repo's path
        found = problems(text, secrets if path != "/settings" else secrets[:1] + secrets[2:])
        if found:
            bad[path] = found
    assert not bad, "\n".join(f"{p}: {v[:3]}" for p, v in list(bad.items())[:15])


def test_the_check_finds_what_it_looks_for():
    """The rules above, on text made to break them (so the walk cannot pass by finding nothing)."""
    assert problems("Forget m:3…", []) and problems("u:14 FACT Priya noted", [])
    assert problems("from Jonas/2024-09-14T21:15:00|Jonas|0", [])
    assert problems("Source /home/a/chat.txt", ["/home/a"])
    assert not problems("message m:3 · episode u:40 · a built memory u:7", [])
