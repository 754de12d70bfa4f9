"""The MCP `profile` tool says who the store's owner is, and "me" asks for the owner's profile
(the official MCP client over stdio, as an assistant would)."""

from __future__ import annotations

import anyio
import pytest

from tests.fakes import HashEmbedder
from tests.helpers import open_memory

pytest.importorskip("mcp", reason="pip install 'localmem[mcp]' to test the MCP server")
from tests.mcp_server.test_mcp_server import _text, stdio  # noqa: E402


@pytest.mark.slow
def test_profile_says_the_owner_and_me_is_the_owners_profile(tmp_path):
    from tests.fakes import ScriptedLLM
    from tests.pipeline.test_pipeline import _responder, _transcript

    db = tmp_path / "m.db"
    with open_memory(db, namespace="alice", embedder=HashEmbedder(), llm=ScriptedLLM(responder=_responder)) as mem:
        mem.ingest(_transcript(tmp_path), extract="llm")
        mem.set_owner(["Caroline", "Caro"])

    async def main():
        async with stdio(tmp_path, db) as client:
            mine = await client.call_tool("profile", {"name": "me"})
            assert not mine.is_error, _text(mine)
            assert mine.structured_content["name"] == "Caroline" and mine.structured_content["is_owner"]
            assert mine.structured_content["owner"] == ["Caro", "Caroline"]
            assert "This is the store's owner" in _text(mine)
            other = await client.call_tool("profile", {"name": "melanie"})
            assert not other.is_error, _text(other)
            assert not other.structured_content["is_owner"]
            assert 'The store\'s owner ("I") is "Caro", "Caroline".' in _text(other)

    anyio.run(main)
