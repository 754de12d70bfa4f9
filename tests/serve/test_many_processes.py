"""Several ``localmem serve`` processes over one PostgreSQL database (docs/postgres.md, "Many
processes"): each answers the API on its own port, what one stores another finds, what one
forgets none finds, and with one shared token (``serve_token_env``) a client may be sent to
any of them, as a load balancer would. Real servers on 127.0.0.1, a real PostgreSQL."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.serve.server import env, spawn

httpx2 = pytest.importorskip("httpx2")
pytest.importorskip("starlette", reason="pip install 'localmem[mcp]' to test localmem serve")
pytest.importorskip("psycopg", reason="pip install 'localmem[postgres]'")
# Its store is its own PostgreSQL database, which localmem never keys: once, outside --stores.
pytestmark = pytest.mark.own_keys

TOKEN = "shared-token-for-every-process-0123456789"


def _client(base: str, token: str = TOKEN) -> "httpx2.Client":
    return httpx2.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=60)


@pytest.mark.slow  # three servers started: about 30 s on a loaded 2-core machine
def test_three_processes_over_one_database_answer_as_one(pg_url, tmp_path):
    servers = []
    try:
        with ThreadPoolExecutor(3) as pool:  # started at once, as several workers of one service
            starting = [
                pool.submit(spawn, tmp_path, pg_url, "--token-env", "LM_SHARED", LM_SHARED=TOKEN) for _ in range(3)
            ]
        failed = [f.exception() for f in starting if f.exception() is not None]
        servers += [f.result() for f in starting if f.exception() is None]  # stopped below, whatever failed
        assert not failed, failed
        assert len({s.port for s in servers}) == 3 and all(s.token == TOKEN for s in servers)
        first, second, third = (_client(s.base) for s in servers)
        with first, second, third:
            added = first.post(
                "/api/add", json={"speaker": "Ann", "text": "My locker code is qzlock-5521.", "id": "a1"}
            )
            assert added.status_code == 201, added.text
            ref = added.json()["id"]
            first.post("/api/add", json={"speaker": "Bob", "text": "I keep my bike in the shed.", "id": "b1"})
            # read through another process: the row, the search, the stats and the page
            assert "qzlock-5521" in second.get(f"/api/show/{ref}").json()["text"]
            hits = second.get("/api/search", params={"q": "locker code"}).json()["hits"]
            assert [h["id"] for h in hits][:1] == [ref]
            assert second.get("/api/stats").json()["messages"] == 2
            assert "Ann" in second.get("/").text  # the page's speaker filter reads the store's version
            again = third.post(
                "/api/add", json={"speaker": "Ann", "text": "My locker code is qzlock-5521.", "id": "a1"}
            )
            assert again.status_code == 200 and not again.json()["added"]  # the same id, stored once
            # forget through a third process: gone for every process
            done = third.post("/api/forget", json={"ids": [ref], "confirm": True}).json()
            assert done["counts"]["messages"] == 1 and done["file"]["pending"] is False
            for http in (first, second, third):
                assert http.get(f"/api/show/{ref}").status_code == 404
                found = http.get("/api/search", params={"q": "locker code qzlock"}).json()["hits"]
                assert all("qzlock" not in h["text"] for h in found)
                assert http.get("/api/stats").json()["messages"] == 1
            # a token of no process is refused by every one
            for s in servers:
                with _client(s.base, "not-the-token-" * 3) as stranger:
                    assert stranger.get("/api/stats").status_code == 401
        # one discovery file for the command line, naming the URL (no password) and the first
        # process to listen
        found = [json.loads(p.read_text()) for p in sorted((tmp_path / "home" / "run").glob("serve-*.json"))]
        assert len(found) == 1 and found[0]["store"] == pg_url and found[0]["pid"] in {s.proc.pid for s in servers}
        assert found[0]["token"] != TOKEN  # the command line's own token (ask and search only)
    finally:
        for s in servers:
            assert s.stop() == 0, s.stderr.read_text()
    assert not list((tmp_path / "home" / "run").glob("serve-*.json"))


def test_a_token_variable_that_is_not_set_stops_serve_in_one_line(pg_url, tmp_path):
    args = ["--db", pg_url, "serve", "--address", "127.0.0.1:0", "--token-env", "LM_NONE"]
    done = subprocess.run(
        [sys.executable, "-m", "localmem", *args], env=env(tmp_path), capture_output=True, text=True, timeout=120
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode != 0 and len(lines) == 1, done.stderr
    assert lines[0].startswith("error: the token environment variable LM_NONE is not set")
