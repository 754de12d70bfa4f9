"""`localmem serve`'s JSON API and MCP, end to end: a real server on 127.0.0.1 in a process of its
own (scripted models from tests/mcp_plugin), driven by an ordinary HTTP client (httpx2)."""

from __future__ import annotations

import json
import signal

import anyio
import pytest

from localmem.serve.api import ENDPOINTS
from tests.serve.server import IMPORTS, STORY, seed, spawn

httpx2 = pytest.importorskip("httpx2")
pytest.importorskip("starlette", reason="pip install 'localmem[mcp]' to test localmem serve")

# The spawned server gets a few chosen variables, not the key settings.
pytestmark = [pytest.mark.plain_only, pytest.mark.slow]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve")
    db = tmp / "m.db"
    seed(db, STORY)
    server = spawn(tmp, db)
    yield server
    assert server.stop() == 0, server.stderr.read_text()


def client(served, **kw) -> "httpx2.Client":
    return httpx2.Client(base_url=served.base, headers=served.auth, timeout=60, **kw)


def ndjson(response) -> list[dict]:
    return [json.loads(line) for line in response.text.splitlines() if line.strip()]


# -- the API -----------------------------------------------------------------------------------


def test_search_and_ask_as_of_a_date_read_only_what_was_known_then(served):
    with client(served) as http:
        known = http.get("/api/search", params={"q": "Pepper the cat", "k": 10, "as_of": "2024-03-31"}).json()
        assert known["hits"] and all(h["time"] < "2024-04" for h in known["hits"])
        later = http.get("/api/search", params={"q": "Pepper the cat", "k": 10, "as_of": "2024-04-30"}).json()
        assert any("Pepper" in h["text"] for h in later["hits"])
        bad = http.get("/api/search", params={"q": "Pepper", "as_of": "soon"})
        assert bad.status_code == 400 and "--as-of" in bad.json()["error"]
        asked = http.post("/api/ask", json={"question": "Who adopted a cat?", "as_of": "2024-03-31", "stream": False})
        assert asked.status_code == 200 and asked.json()["today"] == "31 March 2024"
        assert all(h["time"] < "2024-04" for h in asked.json()["evidence"])


def test_search_show_context_timeline_and_views(served):
    with client(served) as http:
        r = http.get("/api/search", params={"q": "Where did Ann move?", "k": 3})
        assert r.status_code == 200
        hits = r.json()["hits"]
        assert hits and any("Oslo" in h["text"] for h in hits)
        top = next(h for h in hits if "moved to Oslo" in h["text"])
        assert top["sources"][0]["speaker"] == "Ann" and top["sources"][0]["conversation"] == "chat"

        shown = http.get(f"/api/show/{top['id']}").json()
        assert shown["speaker"] == "Ann" and shown["conversation"] == "chat" and shown["kind"] == "message"
        around = http.get(f"/api/context/{top['id']}", params={"around": 1}).json()
        assert [m["speaker"] for m in around["messages"]] == ["Ann", "Bob"] and around["focus"] == top["id"]
        assert around["more_after"] and not around["more_before"]

        months = http.get("/api/timeline").json()["periods"]
        assert [(p["start"], p["messages"]) for p in months] == [
            ("2024-03-01", 3),
            ("2024-04-01", 2),
            ("2024-05-01", 1),
        ]
        assert months[0]["end"] == "2024-04-01"
        weeks = http.get("/api/timeline", params={"period": "week"}).json()["periods"]
        assert weeks[0]["start"] == "2024-02-26" and sum(p["messages"] for p in weeks) == len(STORY)
        april = http.get("/api/period", params={"start": "2024-04-01", "end": "2024-05-01"}).json()
        assert [(c["conversation"], c["messages"]) for c in april["conversations"]] == [("chat", 2)]

        stats = http.get("/api/stats").json()
        assert stats["messages"] == len(STORY)
        assert http.get("/api/namespaces").json()["namespaces"][0]["namespace"] == "default"
        assert http.get("/api/doctor").json()["db"]["integrity"] == "ok"
        assert isinstance(http.get("/api/episodes").json()["episodes"], list)
        assert http.get("/api/people").json() == {"people": []}  # no extraction ran
        talkers = http.get("/api/speakers").json()["speakers"]
        assert [(t["speaker"], t["messages"]) for t in talkers] == [("Ann", 3), ("Bob", 3)]
        ann = http.get("/api/timeline", params={"speaker": "Ann"}).json()["periods"]
        assert [(p["start"], p["messages"]) for p in ann] == [("2024-03-01", 2), ("2024-04-01", 1)]
        people = http.get("/people").text
        assert "Who speaks" in people and 'href="/timeline?speaker=Ann"' in people
        assert "Timeline of Ann" in http.get("/timeline", params={"speaker": "Ann"}).text


def test_errors_have_the_cli_shape_and_status(served):
    with client(served) as http:
        missing = http.get("/api/show/m:999999")
        assert missing.status_code == 404
        assert set(missing.json()) == {"error", "code", "hint", "exit_code"} and missing.json()["code"] == "not_found"
        nobody = http.get("/api/profile/Nobody")
        assert nobody.status_code == 404 and "no one called" in nobody.json()["error"]
        usage = http.get("/api/search")
        assert usage.status_code == 400 and usage.json()["code"] == "usage"
        bad_json = http.post("/api/add", content=b"{not json")
        assert bad_json.status_code == 400 and bad_json.json()["code"] == "usage"
        assert http.get("/api/timeline", params={"period": "decade"}).status_code == 400
        assert http.get("/api/add").status_code == 405  # writes are POST only


def test_ask_streams_progress_text_then_the_answer(served):
    with client(served) as http:
        r = http.post("/api/ask", json={"question": "Where did Ann move to?"})
        assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-ndjson")
        events = ndjson(r)
        assert events[0]["event"] == "progress"
        stages = [(e["stage"], e["elapsed"]) for e in events if e["event"] == "progress"]
        assert [s for s, _ in stages] == ["start", "search", "answer"]  # each as it started, with the time
        assert [t for _, t in stages] == sorted(t for _, t in stages)
        assert any(e["event"] == "text" for e in events)
        final = events[-1]
        assert final["event"] == "answer"
        streamed = "".join(e["text"] for e in events if e["event"] == "text")
        assert final["answer"]["answer"] in streamed
        assert final["answer"]["citations"] and not final["answer"]["refused"]
        plain = http.post("/api/ask", json={"question": "Where did Ann move to?", "stream": False}).json()
        assert plain["answer"] == final["answer"]["answer"]
        empty = http.post("/api/ask", json={"question": ""})
        assert empty.status_code == 400 and empty.json()["code"] == "usage"


def test_openapi_lists_every_endpoint(served):
    with client(served) as http:
        doc = http.get("/api/openapi.json").json()
    assert doc["openapi"].startswith("3.")
    for endpoint in ENDPOINTS:
        assert endpoint.method.lower() in doc["paths"][endpoint.path], endpoint.path
    assert "multipart/form-data" in doc["paths"]["/api/ingest"]["post"]["requestBody"]["content"]


def test_add_correct_ingest_and_forget(tmp_path):
    db = tmp_path / "w.db"
    seed(db, STORY[:2])
    server = spawn(tmp_path, db)
    try:
        with client(server) as http:
            added = http.post("/api/add", json={"speaker": "Dana", "text": "My locker code is 4417.", "id": "d1"})
            assert added.status_code == 201 and added.json()["added"]
            again = http.post("/api/add", json={"speaker": "Dana", "text": "My locker code is 4417.", "id": "d1"})
            assert again.status_code == 200 and not again.json()["added"]
            ref = added.json()["id"]
            assert ref.startswith("m:")
            fixed = http.post("/api/correct", json={"item": ref, "text": "My locker code is 4418."})
            assert fixed.status_code == 200, fixed.text
            assert http.get(f"/api/show/{ref}").json()["replaced_by"]

            with open(IMPORTS / "chatgpt" / "conversations.json", "rb") as fh:
                r = http.post("/api/ingest", files={"file": ("conversations.json", fh, "application/json")})
            events = ndjson(r)
            assert events[-1]["event"] == "report", events[-1]
            report = events[-1]["report"]
            assert report["added"] > 0 and report["format"] == "chatgpt" and report["file"] == "conversations.json"
            assert report["path"] == "conversations.json" and "localmem-upload-" not in json.dumps(report)
            assert report["notes"]  # what was left out, and why
            assert any(e["event"] == "progress" and e["total"] for e in events)
            assert not list(tmp_path.glob("localmem-upload-*"))
            bad = http.post("/api/ingest", files={"file": ("junk.bin", b"\x00\x01 not an export", "application/x")})
            last = ndjson(bad)[-1]
            assert last["event"] == "error" and "junk.bin" in last["error"]["error"]
            assert "localmem-upload-" not in json.dumps(last)

            dry = http.post("/api/forget", json={"match": "locker code"}).json()
            assert dry["dry_run"] and dry["counts"]["messages"] == 2
            assert any("4418" in text for text in dry["texts"].values())
            assert http.get("/api/search", params={"q": "locker code"}).json()["hits"]
            done = http.post("/api/forget", json={"match": "locker code", "confirm": True}).json()
            assert not done["dry_run"] and done["counts"]["messages"] == 2
            assert not any(
                "locker" in h["text"] for h in http.get("/api/search", params={"q": "locker"}).json()["hits"]
            )
    finally:
        assert server.stop() == 0, server.stderr.read_text()
    raw = db.read_bytes() + (
        db.with_name(db.name + "-wal").read_bytes() if db.with_name(db.name + "-wal").exists() else b""
    )
    assert b"4417" not in raw and b"4418" not in raw


# -- security ------------------------------------------------------------------------------------


def test_every_page_and_call_needs_the_token(served):
    with httpx2.Client(base_url=served.base, timeout=30) as http:
        for path in ("/", "/timeline", "/settings", "/api/stats", "/api/openapi.json", "/memory/m:1"):
            r = http.get(path)
            assert r.status_code == 401, path
            assert "Oslo" not in r.text
        assert http.get("/api/stats", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert http.get("/api/stats", params={"token": "wrong"}).status_code == 401
        assert http.get("/static/app.css").status_code == 200  # the package's own assets are public

        # The printed URL: the token becomes a cookie of the page's own host name and leaves the
        # address. Given at 127.0.0.1, it first moves to that name (a cookie of 127.0.0.1 would
        # reach every server there); a cookie sent under another name counts for nothing.
        r = http.get("/", params={"token": served.token})
        assert r.status_code == 303 and r.headers["location"] == f"{served.page}/?token={served.token}"
        assert "set-cookie" not in r.headers
        own = {"Host": served.page.split("//", 1)[1]}
        r = http.get("/", params={"token": served.token}, headers=own)
        assert r.status_code == 303 and r.headers["location"] == "/"
        cookie = r.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Domain" not in cookie
        page = http.get("/", headers={**own, "Cookie": f"localmem_token={served.token}"})
        assert page.status_code == 200 and "Search &amp; ask" in page.text
        assert http.get("/", headers={"Cookie": f"localmem_token={served.token}"}).status_code == 401
        # An open redirect: the path "//evil.example" stays a path of this server.
        r = http.get("/%2Fevil.example", params={"token": served.token, "q": "x"}, headers=own)
        assert r.status_code == 303 and r.headers["location"] == "/evil.example?q=x"
        r = http.get("/%2Fevil.example", params={"token": served.token})
        assert r.headers["location"].startswith(f"{served.page}/evil.example?")
        csp = page.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "default-src 'none'" in csp
        assert page.headers["referrer-policy"] == "same-origin" and page.headers["cache-control"] == "no-store"


def test_host_origin_and_forgery_checks(served):
    with httpx2.Client(base_url=served.base, timeout=30) as http:
        # DNS rebinding: a foreign Host or Origin is refused even with the token.
        assert http.get("/api/stats", headers={**served.auth, "Host": f"evil.example:{served.port}"}).status_code == 421
        assert http.get("/api/stats", headers={**served.auth, "Origin": "http://evil.example"}).status_code == 403
        own = {"Origin": served.base, **served.auth}
        assert http.get("/api/stats", headers=own).status_code == 200
        # With the cookie, a change needs the CSRF token; a Bearer token needs none.
        cookie = {"Cookie": f"localmem_token={served.token}", "Host": served.page.split("//", 1)[1]}
        body = {"speaker": "Eve", "text": "forged"}
        forged = http.post("/api/add", json=body, headers=cookie)
        assert forged.status_code == 403 and forged.json()["code"] == "csrf"
        page = http.get("/", headers=cookie).text
        csrf = page.split('name="csrf" content="', 1)[1].split('"', 1)[0]
        assert csrf and csrf != served.token
        wrong = http.post(
            "/api/forget", json={"match": "Oslo", "confirm": True}, headers={**cookie, "X-CSRF-Token": "x"}
        )
        assert wrong.status_code == 403
        ok = http.post("/api/forget", json={"match": "nothing like this"}, headers={**cookie, "X-CSRF-Token": csrf})
        assert ok.status_code == 200 and ok.json()["dry_run"]
        assert http.get("/api/search", params={"q": "forged"}, headers=served.auth).json()["hits"] == [] or all(
            "forged" not in h["text"]
            for h in http.get("/api/search", params={"q": "forged"}, headers=served.auth).json()["hits"]
        )


def test_stored_html_is_shown_as_text(served):
    with client(served) as http:
        for path in ("/?q=script+bold", "/memory/m:6", "/conversation?around=m:6", "/curate/forget?ids=m:6"):
            page = http.get(path).text
            assert "<script>document.title" not in page and "<b>bold?</b>" not in page, path
            page = page.replace("<mark>", "").replace("</mark>", "")  # the searched words, marked
            assert (
                "&lt;script&gt;document.title=&#x27;pwned&#x27;&lt;/script&gt;&lt;b&gt;bold?&lt;/b&gt; &amp; more"
                in page
            ), path


def test_pages_render(served):
    with client(served) as http:
        for path in ("/", "/timeline", "/timeline?period=week", "/people", "/curate", "/settings", "/memory/m:1",
                     "/period?start=2024-03-01&end=2024-04-01", "/conversation?name=chat", "/curate/forget?ids=m:1"):  # fmt: skip
            r = http.get(path)
            assert r.status_code == 200, (path, r.text[:300])
            assert (
                "<main" in r.text
                and 'lang="en"' in r.text
                and "http"
                not in r.text.split("<main")[0]
                .replace("http-equiv", "")
                .replace('xmlns="http://www.w3.org/2000/svg"', "")
            ), path
        timeline = http.get("/timeline").text
        assert "<svg" in timeline and 'href="/period?start=2024-03-01&amp;end=2024-04-01"' in timeline
        missing = http.get("/memory/m:424242")
        assert missing.status_code == 404 and "no message m:424242" in missing.text


# -- MCP on the same server ------------------------------------------------------------------------


def test_mcp_tools_are_served_at_mcp_behind_the_token(served):
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def main():
        async with httpx2.AsyncClient(headers=served.auth, timeout=60) as http:
            transport = streamable_http_client(f"{served.base}/mcp", http_client=http)
            async with Client(transport, read_timeout_seconds=60) as mcp_client:
                tools = {t.name for t in (await mcp_client.list_tools()).tools}
                assert {"remember", "search", "ask", "forget", "stats"} <= tools
                result = await mcp_client.call_tool("search", {"query": "Where did Ann move?"})
                assert "Oslo" in "\n".join(block.text for block in result.content)

    anyio.run(main)
    with httpx2.Client(base_url=served.base, timeout=30) as http:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        assert (
            http.post("/mcp", json=body, headers={"Accept": "application/json, text/event-stream"}).status_code == 401
        )


def test_ctrl_c_stops_cleanly(tmp_path):
    server = spawn(tmp_path, tmp_path / "new.db")  # serve creates the store
    with client(server) as http:
        assert http.get("/api/stats").json()["messages"] == 0
        refused = http.get("/", params={"q": "Where did Ann move?", "do": "ask"}).text
        assert "Not in memory" in refused and "Searched this namespace for <q>Where did Ann move?</q>" in refused
        assert "nothing stored matched the question" in refused
        assert "Nothing stored yet" in http.get("/timeline").text
    assert server.stop(signal.SIGINT) == 0
    log = server.stderr.read_text()
    assert "stopped" in log and "Traceback" not in log


def test_people_profile_and_unit_pages_after_extraction(tmp_path):
    from tests.fakes import HashEmbedder, ScriptedLLM
    from tests.helpers import open_memory
    from tests.pipeline.test_pipeline import _responder, _transcript

    db = tmp_path / "p.db"
    with open_memory(db, embedder=HashEmbedder(), llm=ScriptedLLM(responder=_responder)) as mem:
        mem.ingest(_transcript(tmp_path), extract="llm")
        episode = mem.browse.episodes()[0]
    server = spawn(tmp_path, db)
    try:
        with client(server) as http:
            people = http.get("/api/people").json()["people"]
            assert "Caroline" in [p["name"] for p in people]
            assert http.get("/api/profile/caroline").json()["name"] == "Caroline"
            listing = http.get("/people").text
            assert 'href="/people/Caroline"' in listing
            page = http.get("/people/Caroline")
            assert page.status_code == 200 and "What is known" in page.text and "<svg" in page.text
            unit = http.get(f"/memory/{episode.id}")
            assert unit.status_code == 200 and "What it rests on" in unit.text
            assert "m:" in unit.text.split("What it rests on", 1)[1]
    finally:
        assert server.stop() == 0, server.stderr.read_text()


def test_the_page_forms_work_without_javascript(tmp_path):
    db = tmp_path / "f.db"
    seed(db, STORY[:3])
    server = spawn(tmp_path, db)
    try:
        # As a browser: at the page's own host name (which the Host header names), with its cookie.
        with httpx2.Client(base_url=server.base, timeout=60, headers={"Host": server.page.split("//")[1]}) as http:
            http.get("/", params={"token": server.token})
            page = http.get("/curate").text
            action = page.split('id="import-form" method="post" enctype="multipart/form-data" action="', 1)[1]
            action = action.split('"', 1)[0].replace("&amp;", "&")
            assert action.startswith("/curate/import?csrf=")
            with open(IMPORTS / "claude" / "conversations.json", "rb") as fh:
                done = http.post(action, files={"file": ("conversations.json", fh, "application/json")})
            assert done.status_code == 303 and "csrf" not in done.headers["location"]  # post/redirect/get
            done = http.get(done.headers["location"])
            assert done.status_code == 200 and "Imported conversations.json" in done.text and "Stored" in done.text
            assert http.post("/curate/import", files={"file": ("x.json", b"{}", "application/json")}).status_code == 403
            preview = http.get("/curate/forget", params={"match": "sauna"})
            assert "sauna by the fjord" in preview.text and "Forget these for good" in preview.text
            confirm = preview.text.split('<form method="post" action="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
            gone = http.post(confirm, data={"match": "sauna"})  # then redirected (post/redirect/get)
            assert gone.status_code == 303 and "csrf" not in gone.headers["location"]
            assert "Forgotten for good: 1 message," in http.get(gone.headers["location"]).text
            assert "sauna" not in http.get("/conversation", params={"name": "chat"}).text
    finally:
        assert server.stop() == 0, server.stderr.read_text()


def test_sigterm_flushes_background_extraction(tmp_path):
    from tests.fakes import HashEmbedder
    from tests.helpers import open_memory

    db = tmp_path / "x.db"
    server = spawn(tmp_path, db, "--extract", "llm")
    try:
        with client(server) as http:
            for day in (2, 6):  # four days apart: the second message closes the first episode
                body = {"speaker": "Ann", "text": f"Day {day}: a swim in the fjord.", "time": f"2024-03-0{day}T10:00"}
                assert http.post("/api/add", json=body).status_code == 201
    finally:
        assert server.stop(signal.SIGTERM, timeout=60) == 0, server.stderr.read_text()
    with open_memory(db, embedder=HashEmbedder()) as mem:
        rows = mem.conn.execute("select stage, count(*) from units where kind = 'episode' group by stage").fetchall()
    assert dict(rows) == {"done": 2}  # both episodes, the open one closed by the flush
