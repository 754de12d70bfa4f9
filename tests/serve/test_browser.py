"""`localmem serve` in a real browser: headless Chromium from the distribution (/usr/bin/chromium)
driven by Playwright, against a spawned server with the scripted models. Screenshots of each page
go to $LOCALMEM_SCREENSHOTS (default: <tmp>/localmem-screenshots), kept by CI as artifacts.

CI: apt-get install -y chromium; python -m pytest -m browser tests/serve/test_browser.py"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.serve.server import IMPORTS, STORY, seed, spawn

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.plain_only,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium (apt-get install chromium)"),
]
playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (no browser download)")
pytest.importorskip("starlette", reason="pip install 'localmem[mcp]' to test localmem serve")


# Read at collection: every test runs without the caller's LOCALMEM_* variables (tests/conftest.py).
SCREENSHOTS = os.environ.get("LOCALMEM_SCREENSHOTS")


def shots() -> Path:
    folder = Path(SCREENSHOTS or Path(tempfile.gettempdir()) / "localmem-screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def served(tmp_path):
    db = tmp_path / "m.db"
    seed(db, STORY)
    server = spawn(tmp_path, db)
    yield server, db
    server.stop()


def _page(browser, base: str, outside: list[str]):
    context = browser.new_context(viewport={"width": 1100, "height": 800}, base_url=base)

    def only_loopback(route):
        host = urlparse(route.request.url).hostname or ""
        if host not in ("127.0.0.1", "localhost") and not host.endswith(".localhost"):
            outside.append(route.request.url)
            route.abort()
        else:
            route.continue_()

    context.route("**/*", only_loopback)
    page = context.new_page()
    page.on("dialog", lambda dialog: (outside.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    return page


def _labelled(page) -> list[str]:
    """The form fields of the page that have no label."""
    return page.evaluate(
        """() => Array.from(document.querySelectorAll('main input, main select, main textarea'))
            .filter(el => el.type !== 'hidden' && !(el.labels && el.labels.length) && !el.getAttribute('aria-label'))
            .map(el => el.id || el.name)"""
    )


def test_import_search_ask_timeline_forget(browser, served):
    server, db = served
    outside: list[str] = []
    page = _page(browser, server.page, outside)  # where the printed URL leads
    folder = shots()

    page.goto(f"/?token={server.token}")
    assert urlparse(page.url).query == ""  # the token left the address bar for a cookie
    assert page.title().startswith("Search & ask")
    page.screenshot(path=str(folder / "home.png"), full_page=True)

    # Keyboard: "/" focuses the search box; every field of the main pages has a label.
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "q"
    page.keyboard.press("Escape")
    for path in ("/", "/curate", "/timeline", "/people", "/settings"):
        page.goto(path)
        assert _labelled(page) == [], path
        assert page.locator("nav[aria-label=Main] a[aria-current=page]").count() == 1, path
    page.goto("/")
    page.keyboard.press("g")
    page.keyboard.press("t")
    page.wait_for_url("**/timeline")

    # Import a realistic export through the page, with the progress bar and the summary.
    page.goto("/curate")
    page.set_input_files("#file", str(IMPORTS / "whatsapp" / "WhatsApp Chat with Book club.txt"))
    page.click("#import-form button[type=submit]")
    report = page.locator("#import-progress .report")
    report.wait_for(timeout=60_000)
    assert "Stored" in report.inner_text() and "new messages" in report.inner_text()
    bar = page.locator("#import-bar")
    assert bar.get_attribute("value") == bar.get_attribute("max")
    page.screenshot(path=str(folder / "curate-import.png"), full_page=True)

    # Search: hits with speaker, date and conversation.
    page.goto("/")
    page.fill("#q", "Where did Ann move?")
    page.press("#q", "Enter")
    page.wait_for_url("**/?q=*")
    first = page.locator("ol.hits li.hit").first
    assert "Oslo" in page.locator("ol.hits").inner_text()
    assert first.locator(".speaker").count() == 1 and first.locator("time").count() == 1
    page.screenshot(path=str(folder / "search.png"), full_page=True)

    # Ask (the scripted LLM): the cited message highlighted inside its conversation.
    page.fill("#q", "Where did Ann move to?")
    page.click("#ask-button")
    page.locator("#ask-live .answer").wait_for(timeout=60_000)
    cited = page.locator("#ask-live .msg.cited")
    assert cited.count() >= 1 and "Oslo" in cited.first.inner_text()
    assert page.locator("#ask-live .thread .msg").count() > cited.count()  # the messages around it
    assert page.locator("#ask-live a.more").count() >= 1  # the rest of the conversation, one click away
    page.screenshot(path=str(folder / "answer.png"), full_page=True)

    # The timeline: an SVG drawn by the server; arrows move between periods; a click opens one.
    page.goto("/timeline")
    bars = page.locator("svg.timeline a.bar")
    assert bars.count() >= 3
    bars.first.focus()
    page.keyboard.press("ArrowRight")
    assert "messages" in page.locator("#chart-info").inner_text()
    page.screenshot(path=str(folder / "timeline.png"), full_page=True)
    bars.first.click()
    page.wait_for_url("**/period?*")
    assert "Book club" in page.locator("main").inner_text()  # the imported chat, February 2024

    page.goto("/people")
    page.screenshot(path=str(folder / "people.png"), full_page=True)
    page.goto("/settings")
    assert "Encrypted" in page.locator("main").inner_text()
    page.screenshot(path=str(folder / "settings.png"), full_page=True)

    # A stored <script> is shown as text and does not run.
    page.goto("/?q=script+pwned+bold")
    assert "<script>document.title='pwned'</script>" in page.locator("main").inner_text()
    assert "pwned" not in page.title() and page.locator("main b").count() == 0

    # One memory, then forget it: the preview says what goes, the confirmation deletes it.
    page.goto("/memory/m:1")
    assert "harbour office" in page.locator("blockquote.memory").inner_text()
    page.screenshot(path=str(folder / "memory.png"), full_page=True)
    page.click("a.button.danger")
    page.wait_for_url("**/curate/forget?*")
    assert "harbour office" in page.locator("main").inner_text()
    page.screenshot(path=str(folder / "forget.png"), full_page=True)
    page.click("#confirm-forget")
    page.wait_for_url("**/curate/forgotten?*")  # redirected after the POST: no CSRF token in the address
    assert "csrf" not in page.url and "Forgotten for good: 1 message," in page.locator("main").inner_text()
    assert page.goto("/memory/m:1").status == 404
    assert outside == []  # nothing was fetched from anywhere else, and no dialog opened
    page.context.close()
    assert server.stop() == 0
    raw = b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*"))
    assert b"harbour office" not in raw


def test_a_page_without_the_token_is_refused(browser, served):
    server, _ = served
    outside: list[str] = []
    page = _page(browser, server.base, outside)
    response = page.goto("/")
    assert response.status == 401 and "needs the link" in page.locator("h1").inner_text()
    assert "401" not in page.locator("main").inner_text()  # said in words, as the 404 page does
    assert "Oslo" not in page.content()
    assert page.goto("/memory/m:1").status == 401
    assert page.goto("/?token=not-the-token").status == 401
    page.screenshot(path=str(shots() / "refused.png"))
    page.context.close()


def test_a_phone_gets_one_row_of_menu_and_a_readable_timeline(browser, served):
    """At 390 px: the menu is one row (it scrolls sideways, with the current page in view), no
    page is wider than the screen, and the timeline's labels are drawn at 9 px or more."""
    server, _ = served
    context = browser.new_context(viewport={"width": 390, "height": 800}, base_url=server.page)
    page = context.new_page()
    page.goto(f"/?token={server.token}")
    for path in ("/", "/overview", "/conversations", "/timeline", "/people", "/curate", "/settings",
                 "/conversation?around=m:1", "/memory/m:1", "/period?start=2024-03-01&end=2024-04-01"):  # fmt: skip
        page.goto(path)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, path
        links = page.locator("header nav a").evaluate_all("els => els.map(a => a.getBoundingClientRect().top)")
        assert len(set(round(top) for top in links)) == 1, (path, links)  # one row, never wrapped
    page.goto("/people")
    current = page.locator("header nav a[aria-current=page]").bounding_box()
    assert current and 0 <= current["x"] and current["x"] + current["width"] <= 390  # in view
    page.goto("/timeline")
    for label in ("text.tick", "text.year", "text.count"):
        heights = page.locator(f"svg.timeline {label}").evaluate_all(
            "els => els.map(t => t.getBoundingClientRect().height)"
        )
        assert heights and min(heights) >= 9, (label, heights)
    page.screenshot(path=str(shots() / "timeline-390.png"), full_page=True)
    context.close()


def test_an_ask_while_the_model_loads_shows_that_it_waits_for_it(browser, tmp_path):
    """The model loads in the background (a scripted one, until a file exists): the page says so
    at once, and a question shows the stage it waits in, then its answer."""
    db = tmp_path / "m.db"
    seed(db, STORY)
    loaded = tmp_path / "loaded"
    server = spawn(tmp_path, db, LOCALMEM_TEST_WARM=str(loaded))
    outside: list[str] = []
    try:
        page = _page(browser, server.page, outside)
        page.goto(f"/?token={server.token}")
        assert "loading in the background" in page.locator(".model-state").inner_text()
        page.fill("#q", "Where did Ann move?")
        page.click("#ask-button")
        waiting = page.locator('#ask-live .stages li.current[data-stage="load"]')
        waiting.wait_for(timeout=30_000)
        assert "waiting for the model" in waiting.inner_text().lower()
        page.screenshot(path=str(shots() / "ask-waiting-for-the-model.png"), full_page=True)
        loaded.write_text("")
        page.locator("#ask-live .answer").wait_for(timeout=60_000)
        assert "Oslo" in page.locator("#ask-live .answer-text").inner_text()
        page.reload()
        assert "was loaded in the background" in page.locator(".model-state").inner_text()
        page.context.close()
    finally:
        loaded.write_text("")
        server.stop()
    assert outside == []
