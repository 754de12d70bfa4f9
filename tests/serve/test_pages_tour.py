"""Every page of `localmem serve`, in the real headless Chromium, on a store holding a realistic
made-up conversation (examples/sample-chat.txt and a WhatsApp group export), built without the
LLM as a new user's first import is. Each page is checked to load nothing from outside the
server, and photographed into $LOCALMEM_SCREENSHOTS/pages (CI keeps them as artifacts; the
README's pictures in docs/img come from here).

python -m pytest -m browser tests/serve/test_pages_tour.py"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from urllib.parse import quote, urlparse

import pytest

from tests.fakes import HashEmbedder
from tests.helpers import SAMPLE_CHAT, open_memory
from tests.serve.server import IMPORTS, spawn
from tests.serve.test_browser import ARGS, CHROMIUM

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.plain_only,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium (apt-get install chromium)"),
]
playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (no browser download)")
pytest.importorskip("starlette", reason="pip install 'localmem[mcp]' to test localmem serve")

SCREENSHOTS = os.environ.get("LOCALMEM_SCREENSHOTS")
WHATSAPP = IMPORTS / "whatsapp" / "WhatsApp Chat with Book club.txt"
MEDIA = IMPORTS.parent / "whatsapp-media"  # beside imports/: the folder tests ingest that whole


def pages_folder() -> Path:
    folder = Path(SCREENSHOTS or Path(tempfile.gettempdir()) / "localmem-screenshots") / "pages"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield chromium
        chromium.close()


def _page(browser, base: str, outside: list[str]):
    """A page that records every request leaving the server (none may). Recorded, not routed:
    Playwright's routing stalls a request whose body is not ASCII (the import's report)."""
    context = browser.new_context(viewport={"width": 1100, "height": 800}, base_url=base)

    def record(request) -> None:
        host = urlparse(request.url).hostname or ""
        if host not in ("127.0.0.1", "localhost") and not host.endswith(".localhost"):
            outside.append(request.url)

    context.on("request", record)
    page = context.new_page()
    page.on("dialog", lambda dialog: (outside.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    return page


def seed_sample(db: Path) -> None:
    """The sample chat and the WhatsApp group, ingested as a user would (no LLM: episodes are
    closed by time gaps, with no title or narrative)."""
    with open_memory(db, embedder=HashEmbedder()) as mem:
        mem.ingest(SAMPLE_CHAT)
        mem.ingest(WHATSAPP)


def test_every_page(browser, tmp_path):
    db = tmp_path / "m.db"
    seed_sample(db)
    with open_memory(db, embedder=HashEmbedder()) as mem:
        episode = mem.conn.execute("SELECT id FROM units WHERE kind = 'episode' ORDER BY id LIMIT 1").fetchone()
    go = tmp_path / "go"  # the scripted LLM answers once this exists: the page is seen waiting
    server = spawn(tmp_path, db, LOCALMEM_TEST_SUPPORTS="1,2,3", LOCALMEM_TEST_BLOCK=str(go))
    outside: list[str] = []
    folder = pages_folder()
    try:
        page = _page(browser, server.page, outside)  # where the printed URL leads
        # Refused: a styled page that says how to get in, with the package's own icon and style.
        assert page.goto("/").status == 401
        assert "needs the link" in page.locator("h1").inner_text()
        assert "?token=" in page.locator("main").inner_text() and "Priya" not in page.content()
        assert page.evaluate("getComputedStyle(document.body).fontFamily").startswith("system-ui")
        page.screenshot(path=str(folder / "refused.png"))
        icon = page.request.get(f"{server.base}/static/favicon.svg")  # the test runner resolves no *.localhost
        assert icon.status == 200 and icon.headers["content-type"].startswith("image/svg")
        page.goto(f"/?token={server.token}")
        shots = {
            "home": "/",
            "search": "/?q=Lisbon+flat",
            "timeline": "/timeline",
            "timeline-week": "/timeline?period=week",
            "period": "/period?start=2024-02-01&end=2024-03-01",
            "people": "/people",
            "person": f"/people/{quote('Priya')}",
            "conversation": "/conversation?around=m:3",
            "message": "/memory/m:3",
            "curate": "/curate",
            "forget": "/curate/forget?match=marathon",
            "settings": "/settings",
            "episode": f"/memory/u:{episode[0]}",
            "overview": "/overview",
            "conversations": "/conversations",
        }
        for name, path in shots.items():
            assert page.goto(path).status == 200, path
            assert page.locator('link[rel=icon][href="/static/favicon.svg"]').count() == 1
            assert "1 messages" not in page.locator("main").inner_text(), path  # plurals
            page.screenshot(path=str(folder / f"{name}.png"), full_page=True)
            check = CHECKS.get(name)
            if check:
                check(page)
        assert page.goto("/people/Nobody").status == 404

        # Ask: the stages the server reports, with their times, while the model works.
        page.goto("/")
        page.fill("#q", "Where did Priya find a flat?")
        page.click("#ask-button")
        current = page.locator("#ask-live .stages li.current")
        current.filter(has_text="Answering").wait_for(timeout=60_000)
        stages = page.locator("#ask-live .stages li").evaluate_all("els => els.map(el => el.dataset.stage)")
        assert stages[-2:] == ["search", "answer"] and "start" in stages, stages
        elapsed = page.locator("#ask-live .stages li.current .elapsed")
        deadline = time.monotonic() + 30
        while not elapsed.inner_text() or float(elapsed.inner_text().split()[0]) < 1.0:  # the wait, counted
            assert time.monotonic() < deadline, elapsed.inner_text()
            time.sleep(0.1)
        assert page.locator("#ask-live .stages li.done .elapsed").first.inner_text().endswith(" s")
        page.screenshot(path=str(folder / "ask-waiting.png"), full_page=True)
        go.write_text("go")
        page.locator("#ask-live .answer").wait_for(timeout=60_000)
        # Citations of one conversation in one window: each message once, the cited ones marked.
        assert page.locator("#ask-live .cite").count() == 1
        ids = page.locator("#ask-live .msg").evaluate_all("els => els.map(el => el.id)")
        assert len(ids) == len(set(ids)) and page.locator("#ask-live .msg.cited").count() == 3
        assert "flat" in [m.lower() for m in page.locator("#ask-live mark").all_inner_texts()]
        assert page.locator("#ask-live .confidence").inner_text().startswith("The model rates this answer")
        assert page.locator("#ask-live .stages").count() == 0
        assert "Answered in" in page.locator("#ask-live").inner_text()
        page.screenshot(path=str(folder / "ask.png"), full_page=True)

        # A file imported through the page keeps its name as its source; its media are notes.
        page.goto("/curate")
        page.set_input_files("#file", str(MEDIA / "WhatsApp Chat - Grupo viaje.txt"))
        page.click("#import-form button[type=submit]")
        page.locator("#import-progress .report").wait_for(timeout=60_000)
        page.goto("/?q=omitted&conversation=Grupo+viaje")
        first = page.locator("ol.hits li.hit").first
        assert "[image omitted]" in page.locator("ol.hits").inner_text()
        first.locator("a", has_text="m:").first.click()
        source = page.locator("dl.facts").inner_text()
        assert "WhatsApp Chat - Grupo viaje.txt" in source and "localmem-upload" not in source, source
        page.context.close()
    finally:
        go.write_text("go")
        server.stop()
    assert outside == []


def _timeline(page) -> None:
    svg = page.locator("svg.timeline")
    assert svg.get_attribute("width") == "100%"  # the width it has
    box = svg.bounding_box()
    assert box and box["width"] > 800
    ticks = page.locator("svg.timeline text.tick").all_text_contents()
    assert (
        ticks == ["Jan", "Feb", "Mar", "Apr", "May"]
        and "2024" in page.locator("svg.timeline text.year").all_text_contents()
    )
    assert page.locator("svg.timeline text.count").all_text_contents() == ["8", "15", "1", "9"]
    march = page.locator('svg.timeline a.bar[data-start="2024-03-01"]')
    assert march.get_attribute("aria-label") == "Mar 2024: 1 message, 1 episode"
    march.hover()
    assert page.locator("#chart-info").inner_text() == "Mar 2024: 1 message, 1 episode"


def _timeline_week(page) -> None:
    ticks = page.locator("svg.timeline text.tick").all_text_contents()
    assert ticks[:2] == ["Jan", "Feb"] and len(ticks) == len(set(ticks))


def _search(page) -> None:
    why = page.locator("ol.hits .why").all_inner_texts()
    assert why and all("found by" in w for w in why)
    assert any("reply to a question that matched" in w for w in why)
    assert page.locator("ol.hits mark").count() >= 3
    page.goto("/?q=Lisbon+flat&speaker=Tom&since=2024-01-01&until=2024-01-31")
    assert page.locator("details.filters[open]").count() == 1
    assert page.locator("#f-speaker").input_value() == "Tom"
    speakers = set(page.locator("ol.hits .speaker").all_inner_texts())
    days = {t[:10] for t in page.locator("ol.hits time").all_inner_texts()}
    assert speakers == {"Tom"} and days == {"2024-01-14"}, (speakers, days)


def _people(page) -> None:
    links = page.locator("main table a[href^='/people/']").all_inner_texts()
    assert set(links) == {"Priya", "Tom", "Tom Becker", "Priya Nair", "+44 7700 900123"}


def _person(page) -> None:
    assert "Priya said 13 messages" in page.locator("main").inner_text()
    assert page.locator("svg.timeline a.bar").count() == 5
    assert page.locator("main ol.list li.item").count() == 13


def _period(page) -> None:
    eps = page.locator("li.item.episode")
    assert eps.count() == 4
    assert all(eps.nth(i).locator(".opening li").count() >= 1 for i in range(4))
    assert "2024-02-14 19:05 to 19:07" in eps.first.inner_text()


def _episode(page) -> None:
    quote_ = page.locator("blockquote.memory").inner_text()
    assert "8 messages, 2024-01-14 19:02" in quote_ and "Hey Tom!" in quote_ and "No summary yet" in quote_


def _overview(page) -> None:
    built = page.locator("table.built").inner_text()
    assert "Episodes\t8 episodes" in built and "none has a summary yet" in built, built
    assert "Facts\tnone" in built
    sources = page.locator("main table").nth(1).inner_text()
    assert "sample-chat.txt (text transcript)\t25" in sources and "/" not in sources.split("\n", 1)[1], sources


def _conversations(page) -> None:
    rows = page.locator("li.conv-row")
    assert rows.count() == 2
    assert page.locator("section.source h2").all_inner_texts() == [
        "sample-chat.txt (text transcript)",
        "WhatsApp Chat with Book club.txt (WhatsApp export)",
    ]
    book = rows.nth(1).inner_text()
    assert "Book club" in book and "8 messages" in book and "Tom Becker (4), Priya Nair (3)" in book, book
    rows.nth(1).locator("a.forget").click()
    assert "This deletes for good 8 messages" in page.locator("main").inner_text()


def _conversation(page) -> None:
    assert page.locator(".thread li.session").count() >= 1  # the chat's sittings, apart
    assert page.locator(".msg.cited").count() == 0 and page.locator(".msg.focus").count() == 1


CHECKS = {
    "overview": _overview,
    "conversations": _conversations,
    "conversation": _conversation,
    "timeline": _timeline,
    "timeline-week": _timeline_week,
    "search": _search,
    "people": _people,
    "person": _person,
    "period": _period,
    "episode": _episode,
}
