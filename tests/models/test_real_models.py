"""The real default embedder (all-MiniLM-L6-v2 int8, ONNX), shipped in the [embed] extra."""

from __future__ import annotations

import json

import numpy as np
import pytest

from localmem import Memory
from localmem.cli import cli
from localmem.config import Config
from localmem.models.backends.onnx_embed import OnnxEmbedder
from localmem.models.catalog import DEFAULT_EMBEDDER, manifest, resolve_embedder
from tests.helpers import SAMPLE_CHAT, runner

pytestmark = pytest.mark.models


@pytest.fixture(scope="module")
def real() -> OnnxEmbedder:
    found = resolve_embedder(Config())
    return OnnxEmbedder(found.model_path, found.tokenizer_path, found.model_id, found.max_tokens)


def test_resolves_from_the_package():
    found = resolve_embedder(Config())
    assert found.model_id == DEFAULT_EMBEDDER
    assert found.origin.startswith("package ")
    assert found.model_path.is_file() and found.tokenizer_path.is_file()
    assert found.model_path.stat().st_size == manifest(DEFAULT_EMBEDDER).files["model"].size


def test_dimension_and_normalisation(real):
    assert real.dim == 384
    vecs = real.embed(["Hello there.", "A much longer sentence about the weather in Lisbon in May. " * 40, ""])
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-4)
    assert real.embed([]).shape == (0, 384)


def test_paraphrase_is_closer_than_an_unrelated_sentence(real):
    a, para, other = real.embed(
        ["The cat is sleeping on the sofa.", "A kitten naps on the couch.", "Interest rates rose again this quarter."]
    )
    assert float(a @ para) > float(a @ other) + 0.2


def test_embeddings_are_deterministic_and_batch_independent(real):
    texts = ["Priya moved to Lisbon.", "Tom runs marathons.", "Mochi is a cat."]
    together = real.embed(texts)
    alone = np.vstack([real.embed([t]) for t in texts])
    assert np.allclose(together, alone, atol=1e-5)


@pytest.mark.parametrize(
    "query, expected",
    [
        ("What is the name of Priya's cat?", "my cat Mochi"),
        ("Which marathon did Tom sign up for?", "signed up for the Porto marathon"),
        ("Where is Tom's new job?", "climate startup in Berlin"),
        ("What pet does Priya have?", "my cat Mochi"),
    ],
)
def test_cli_ingest_and_search_end_to_end(tmp_path, query, expected):
    db = tmp_path / "demo.db"
    result = runner().invoke(cli, ["--db", str(db), "ingest", str(SAMPLE_CHAT), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["added"] == 25 and report["format"] == "text"
    result = runner().invoke(cli, ["--db", str(db), "search", query, "--json", "-k", "3"])
    assert result.exit_code == 0, result.output
    hits = json.loads(result.stdout)["hits"]
    assert expected in hits[0]["text"], [h["text"] for h in hits]
    assert set(hits[0]["channels"]) - {"question"} == {"vector", "bm25"}
    stats = json.loads(runner().invoke(cli, ["--db", str(db), "stats", "--json"]).stdout)
    assert (stats["embedder"], stats["embed_dim"]) == (DEFAULT_EMBEDDER, 384)


def test_vector_channel_alone_finds_a_paraphrase(tmp_path):
    with Memory(tmp_path / "m.db") as mem:
        mem.ingest(SAMPLE_CHAT)
        hits = mem.search("Tom is changing jobs and relocating to Germany", channels=["vector"], k=3)
        assert any("climate startup in Berlin" in h.text for h in hits), [h.text for h in hits]
