"""The people page and the HTTP API say who the store's owner is, the page escaped as
every stored name is."""

from __future__ import annotations

import pytest

from tests.fakes import HashEmbedder
from tests.helpers import open_memory
from tests.serve.server import STORY, seed, spawn
from tests.serve.test_api import client

pytestmark = [pytest.mark.plain_only, pytest.mark.slow]  # spawns serve on a store file


def test_the_people_page_says_the_owner(tmp_path):
    db = tmp_path / "o.db"
    seed(db, STORY[:3])
    with open_memory(db, embedder=HashEmbedder()) as mem:
        mem.set_owner(["Ann", "<b>Annie</b>"])
    server = spawn(tmp_path, db)
    try:
        with client(server) as http:
            page = http.get("/people").text
            assert 'You ("I" in questions): &lt;b&gt;Annie&lt;/b&gt;, Ann' in page, page
            assert "<b>Annie</b>" not in page
            owner = http.get("/api/stats").json()["owner"]  # the HTTP API says it too
            assert owner["names"] == ["<b>Annie</b>", "Ann"] and owner["origin"] == "set"
    finally:
        assert server.stop() == 0, server.stderr.read_text()
