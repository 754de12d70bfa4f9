"""The page's lists and fixes of issue 53, against a real ``localmem serve`` driven by an HTTP
client: the conversations list and the overview (their numbers counted again here from the
store), the 404 page, the redirect after a forget, the conversation opened from search (not
"cited"), the import's report, a period's title, and the model loading in the background while
the page is served (a scripted LLM whose loading takes until a file exists)."""

from __future__ import annotations

import json
import re
import time
from html import unescape

import pytest

from localmem.serve.pages.browse import period_title
from localmem.serve.pages.curate import report_html
from tests.helpers import open_memory
from tests.serve.server import STORY, seed, spawn

httpx = pytest.importorskip("httpx2")
pytest.importorskip("starlette", reason="pip install 'localmem[mcp]' to test localmem serve")
pytestmark = [pytest.mark.plain_only, pytest.mark.slow]  # each test spawns serve on a store file


def visible(html: str) -> str:
    """The page's text as a person reads it (no tags, no scripts)."""
    html = re.sub(r"(?s)<(script|style)\b.*?</\1>", " ", html)
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


@pytest.fixture
def served(tmp_path):
    db = tmp_path / "m.db"
    seed(db, STORY)
    seed(db, [("Cleo", "The garden needs water on Sunday.", "2024-01-20T09:00")], conversation="garden")
    server = spawn(tmp_path, db)
    yield server, db
    server.stop()


def client(server) -> "httpx.Client":
    return httpx.Client(base_url=server.base, headers=server.auth, timeout=30)


def test_the_conversations_list_per_source_with_people_and_forget(served):
    server, db = served
    with client(server) as c:
        page = c.get("/conversations")
        assert page.status_code == 200
        text = visible(page.text)
        assert "2 conversations from 2 sources" in text
        # Each conversation: its messages, first and last time, and who speaks (with their counts).
        assert "chat 6 messages · 2024-03-02 10:00 to 2024-05-20 08:00" in text, text
        assert "Ann (3), Bob (3)" in text and "garden 1 message · 2024-01-20 09:00" in text
        forget = re.findall(r'href="(/curate/forget\?conversation=[^"]+)"', page.text)
        assert forget == ["/curate/forget?conversation=chat", "/curate/forget?conversation=garden"]
        preview = visible(c.get("/curate/forget?conversation=garden").text)
        assert "This deletes for good 1 message" in preview and "The garden needs water" in preview
        assert "Oslo" not in preview


def test_the_overview_counts_what_the_store_holds_and_what_was_built(served):
    server, db = served
    with open_memory(db) as mem:
        conn = mem.conn
        episodes = conn.execute("SELECT count(*) FROM units WHERE kind = 'episode'").fetchone()[0]
        in_none = conn.execute(
            "SELECT count(*) FROM messages m WHERE NOT EXISTS (SELECT 1 FROM unit_sources us JOIN units u "
            "ON u.id = us.unit_id WHERE us.message_id = m.id AND u.kind = 'episode')"
        ).fetchone()[0]
    with client(server) as c:
        text = visible(c.get("/overview").text)
    assert "7 messages in 2 conversations from 2 sources, said from 2024-01-20 to 2024-05-20" in text, text
    assert f"Episodes {episodes:,} episode" in text
    assert f"Messages in no episode {in_none} message" in text and in_none > 0  # what was not built
    assert "Facts none none learnt yet" in text  # no LLM ran
    assert "Ann 3 2024-03-02 to 2024-04-11" in text and "Cleo 1 2024-01-20 to 2024-01-20" in text
    assert "The busiest month: March 2024, 3 messages" in text


def test_a_missing_page_gives_page_advice_not_a_command_or_a_code(served):
    server, _ = served
    with client(server) as c:
        for path in ("/people/Nobody", "/memory/m:99999", "/nothing-here", "/conversation?name=nope"):
            page = c.get(path)
            assert page.status_code == 404, path
            box = visible(re.search(r'(?s)<div class="error".*?</div>', page.text).group())
            assert "localmem " not in box and "not_found" not in box, (path, box)
            assert 'href="/conversations"' in page.text and "<nav" in page.text, path  # the page's own menu
        assert c.get("/api/nothing").json()["code"] == "not_found"  # the API keeps its JSON errors


def test_forget_redirects_after_its_post_and_keeps_the_token_out_of_the_address(served):
    server, db = served
    with client(server) as c:
        csrf = re.search(r'name="csrf" content="([^"]+)"', c.get("/curate").text).group(1)
        done = c.post(f"/curate/forget?csrf={csrf}", data={"conversation": "garden"})
        assert done.status_code == 303
        where = done.headers["location"]
        assert where.startswith("/curate/forgotten?") and "csrf" not in where and csrf not in where
        text = visible(c.get(where).text)
        assert "Forgotten for good: 1 message" in text
    with open_memory(db) as mem:
        assert mem.conn.execute("SELECT count(*) FROM messages WHERE conversation = 'garden'").fetchone()[0] == 0


def test_an_import_without_the_script_redirects_to_its_report(served):
    server, _ = served
    with client(server) as c:
        csrf = re.search(r'name="csrf" content="([^"]+)"', c.get("/curate").text).group(1)
        upload = {"file": ("chat.jsonl", b'{"speaker": "Dee", "text": "Tulips in April", "time": "2024-04-02"}\n')}
        done = c.post(f"/curate/import?csrf={csrf}", files=upload)
        assert done.status_code == 303 and "csrf" not in done.headers["location"]
        report = c.get(done.headers["location"])
        assert report.status_code == 200 and "Stored 1 new message" in visible(report.text)
        gone = c.get("/curate/imported", params={"report": "nope"})
        assert gone.status_code == 404 and "no longer kept" in visible(gone.text)


def test_a_message_opened_from_search_is_not_badged_cited(served):
    server, _ = served
    with client(server) as c:
        hit = c.get("/api/search", params={"q": "sauna fjord"}).json()["hits"][0]["id"]
        page = c.get("/conversation", params={"around": hit}).text
    assert "cited" not in visible(page) and "msg cited" not in page
    assert re.search(rf'<li class="msg focus" aria-current="true" id="{hit}"', page)


def test_the_import_report_keeps_notes_apart_from_what_was_left_out():
    report = {"file": "chat.txt", "format": "whatsapp", "added": 3, "seconds": 0.1, "sources": [],
              "notes": ["5 media files kept as attachments"], "not_read": []}  # fmt: skip
    html = report_html(report)
    assert "Left out" not in html and "No file was left out." in html
    assert re.search(r"<h3>Notes</h3><ul class=list><li>5 media files kept as attachments", html)
    html = report_html({**report, "not_read": [{"path": "a.bin", "why": "not a chat"}]})
    assert re.search(r"<h3>Left out</h3><ul class=list><li>a.bin: not a chat</li></ul><h3>Notes</h3>", html)


def test_a_period_is_titled_as_a_person_says_it(served):
    assert period_title("2024-01-01", "2024-02-01") == "January 2024"
    assert period_title("2024-12-01", "2025-01-01") == "December 2024"
    assert period_title("2024-01-08", "2024-01-15") == "The week of 8 January 2024"
    assert period_title("2024-01-03", "2024-01-10") == "2024-01-03 to 2024-01-09"
    server, _ = served
    with client(server) as c:
        page = c.get("/period", params={"start": "2024-03-01", "end": "2024-04-01"}).text
    assert "<h1>March 2024</h1>" in page


def test_the_page_never_waits_for_the_model_and_an_ask_says_it_waits(tmp_path):
    """The model loads in the background (here until a file exists): pages are served at once
    and say so; an ask made meanwhile reports that it waits for the model, then answers."""
    db = tmp_path / "m.db"
    seed(db, STORY)
    loaded = tmp_path / "loaded"
    server = spawn(tmp_path, db, LOCALMEM_TEST_WARM=str(loaded))
    try:
        with client(server) as c:
            started = time.perf_counter()
            home = c.get("/")
            assert time.perf_counter() - started < 2 and home.status_code == 200
            assert "is loading in the background" in visible(home.text)
            assert "a question asked now waits until it is ready" in visible(home.text)
            assert "is loading in the background" in visible(c.get("/settings").text)
            assert c.get("/overview").status_code == 200 and c.get("/?q=Oslo").status_code == 200
            with c.stream("GET", "/ask/stream", params={"q": "Where did Ann move?"}) as response:
                lines = response.iter_lines()
                first: list[dict] = []
                while not first or first[-1].get("stage") != "load":  # memory is read without the model
                    first.append(json.loads(next(lines)))
                assert [e.get("stage") for e in first] == ["start", "search", "load"], first
                assert first[-1]["message"].startswith("waiting for the model, loading in the background")
                time.sleep(0.5)
                loaded.write_text("")  # the model is ready: the answer comes
                rest = [json.loads(line) for line in lines if line.strip()]
            # Answering starts once the model is loaded, not before: the page waited in "load".
            assert rest[0]["stage"] == "answer" and rest[0]["elapsed"] >= first[-1]["elapsed"] + 0.5, rest[0]
            assert rest[-1]["event"] == "html" and "Oslo" in rest[-1]["html"]
            deadline = time.monotonic() + 10
            while "was loaded in the background" not in visible(c.get("/").text):
                assert time.monotonic() < deadline
                time.sleep(0.1)
    finally:
        loaded.write_text("")
        server.stop()


def test_with_preload_off_the_page_says_the_first_question_loads_it(tmp_path):
    db = tmp_path / "m.db"
    seed(db, STORY)
    server = spawn(tmp_path, db, LOCALMEM_TEST_WARM=str(tmp_path / "never"), LOCALMEM_SERVE_PRELOAD="false")
    try:
        with client(server) as c:
            text = visible(c.get("/").text)
        assert "The model is loaded by the first question" in text and "loading in the background" not in text
    finally:
        server.stop()


def test_a_malformed_report_posted_back_is_a_400_line_not_a_500(served):
    """/curate/report renders the report the page's script posts back: what is not one gets one
    line naming what is wrong (the script shows it in place of the report), never a 500."""
    server, _ = served
    real = {"file": "chat.txt", "format": "whatsapp", "added": 3, "seconds": 0.1, "sources": [], "not_read": []}
    source = {"name": "chat.txt", "format": "whatsapp", "messages": 3, "added": 3}
    bad = {
        "no 'added'": ({"format": "whatsapp", "seconds": 0.1}, "'added' of the report is missing"),
        "an empty object": ({}, "'added' of the report is missing"),
        "added as text": ({**real, "added": "3"}, "'added' of the report is of the wrong kind"),
        "a source of a number": ({**real, "sources": [1]}, "the report's source 1 is not an object"),
        "a source without counts": (
            {**real, "sources": [{"name": "a.txt", "format": "text"}]},
            "'messages' of the report's source 1 is missing",
        ),
        "a file left out without why": (
            {**real, "not_read": [{"path": "a.bin"}]},
            "'why' of the report's file left out 1 is missing",
        ),
        "notes of numbers": ({**real, "notes": [1]}, "the report's notes are not all text"),
    }
    with client(server) as c:
        for name, (body, said) in bad.items():
            r = c.post("/curate/report", json=body)
            assert r.status_code == 400, (name, r.status_code, r.text[:300])
            assert r.text.count("\n") == 0 and "<nav" not in r.text and "<html" not in r.text, name
            assert unescape(visible(r.text)) == said + ".", (name, r.text)
        not_json = c.post("/curate/report", content=b"{", headers={"content-type": "application/json"})
        assert not_json.status_code == 400 and visible(not_json.text).startswith("the request body is not JSON")
        ok = c.post("/curate/report", json={**real, "sources": [source], "notes": ["kept as attachments"]})
        assert ok.status_code == 200 and "Stored 3 new messages" in visible(ok.text)
        # The report /api/ingest answers, posted back unchanged, as the page's script does.
        upload = {"file": ("chat.jsonl", b'{"speaker": "Dee", "text": "Tulips in April", "time": "2024-04-02"}\n')}
        events = [json.loads(line) for line in c.post("/api/ingest", files=upload).text.splitlines() if line]
        report = next(e["report"] for e in events if e["event"] == "report")
        back = c.post("/curate/report", json=report)
        assert back.status_code == 200 and "Stored 1 new message" in visible(back.text)


def test_a_refused_page_says_its_status_in_words_not_a_code(served):
    """Without the token (401) or from another site (403), the page says what happened and how
    to get in, as the 404 page does; the status is for programs (data-status), not shown."""
    server, _ = served
    with httpx.Client(base_url=server.base, timeout=30) as anyone:
        page = anyone.get("/")
        assert page.status_code == 401
        text = visible(page.text)
        assert "This page needs the link localmem printed" in text and "this needs the token" in text
        assert "HTTP" not in text and "401" not in text, text
        assert 'data-status="401"' in page.text
    with client(server) as c:
        elsewhere = c.get("/", headers={"origin": "http://evil.example"})
        assert elsewhere.status_code == 403
        text = visible(elsewhere.text)
        assert "requests from another site are refused" in text and "HTTP" not in text and "403" not in text
