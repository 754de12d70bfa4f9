"""Every page of `localmem serve`, in the real headless Chromium, on a store holding a realistic
made-up conversation (examples/sample-chat.txt and a WhatsApp group export), built without the
LLM as a new user's first import is. Each page is checked to load nothing from outside the
server, and photographed into $LOCALMEM_SCREENSHOTS/pages (CI keeps them as artifacts; the
README's pictures in docs/img come from here).

python -m pytest -m browser tests/serve/test_pages_tour.py"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.fakes import HashEmbedder
from tests.helpers import SAMPLE_CHAT, open_memory
from tests.serve.server import IMPORTS, spawn
from tests.serve.test_browser import ARGS, CHROMIUM, _page

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
    server = spawn(tmp_path, db, LOCALMEM_TEST_SUPPORTS="1,2,3")
    outside: list[str] = []
    folder = pages_folder()
    try:
        page = _page(browser, server.base, outside)
        assert page.goto("/").status == 401
        page.screenshot(path=str(folder / "refused.png"))
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
        }
        if episode:
            shots["episode"] = f"/memory/u:{episode[0]}"
        for name, path in shots.items():
            page.goto(path)
            page.screenshot(path=str(folder / f"{name}.png"), full_page=True)
        page.goto("/")
        page.fill("#q", "Where did Priya find a flat?")
        page.click("#ask-button")
        page.locator("#ask-live .answer").wait_for(timeout=60_000)
        page.screenshot(path=str(folder / "ask.png"), full_page=True)
        page.context.close()
    finally:
        server.stop()
    assert outside == []
