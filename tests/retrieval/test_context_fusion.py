"""Context fusion (the WITH_CONTEXT recipe; only its speaker weight on by default): a message is scored with the turns
around it, its session and the one speaker a question names (docs/recall.md)."""

from __future__ import annotations

from localmem.retrieval.search import WITH_CONTEXT, SearchParams
from tests.conftest import FIXTURES
from tests.fakes import HashEmbedder
from tests.helpers import open_memory

LOCOMO = FIXTURES / "tiny_locomo.json"


def test_the_default_search_leaves_neighbours_and_session_out_and_weighs_the_speaker_named():
    assert SearchParams().neighbour_weight == SearchParams().session_weight == 0
    assert SearchParams().speaker_weight == WITH_CONTEXT.speaker_weight > 0
    assert WITH_CONTEXT.neighbour_weight > 0 and WITH_CONTEXT.session_weight > 0 and WITH_CONTEXT.speaker_weight > 0


def test_with_context_a_turn_no_channel_found_comes_in_beside_its_neighbour(tmp_path):
    with open_memory(tmp_path / "m.db", namespace="all", embedder=HashEmbedder()) as mem:
        mem.ingest(LOCOMO)
    with open_memory(tmp_path / "m.db", namespace="tiny-1", embedder=HashEmbedder()) as m1:
        plain = m1.search("sofa", channels=["bm25"])  # only in D1:3's caption
        assert [h.sources[0].external_id for h in plain] == ["D1:3"]
        fused = m1.search("sofa", channels=["bm25"], recipe=WITH_CONTEXT)
        ids = [h.sources[0].external_id for h in fused]
        assert ids[0] == "D1:3" and "D1:2" in ids  # the turn before it, lifted as its neighbour
        neighbour = fused[ids.index("D1:2")]
        assert set(neighbour.channels) == {"neighbour"} and neighbour.score < fused[0].score
