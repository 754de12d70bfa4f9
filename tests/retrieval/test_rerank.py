"""The ONNX cross-encoder reranker, against a tiny cross-encoder built here.

The model has random (seeded) weights: it exercises tokenisation, feeds,
batching, padding and output handling; its ranking means nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper

from localmem.errors import LocalmemError, ModelNotFoundError
from localmem.models.backends.onnx_rerank import OnnxCrossEncoder
from localmem.retrieval.rerank import date_prefixed, rerank_order
from tests.helpers import open_memory

WORDS = (
    "the a i we you she he it is was went to from in on at paris london trip "
    "cat dog bought new car when did where live may date 2023 05 08"
).split()
DIM = 8


def _tokenizer_json(path: Path) -> Path:
    from tokenizers import Tokenizer, normalizers, pre_tokenizers
    from tokenizers.models import WordLevel
    from tokenizers.processors import TemplateProcessing

    vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3}
    for word in WORDS:
        vocab.setdefault(word, len(vocab))
    tok = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    tok.save(str(path))
    return path


def _vocab_size() -> int:
    return 4 + len(dict.fromkeys(WORDS))


def _model(path: Path, outputs: int = 1, with_mask: bool = True) -> Path:
    """Embedding lookup (+ token-type embedding), masked mean over tokens, linear head."""
    rng = np.random.default_rng(7)
    seq = ["batch", "seq"]
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, seq)]
    if with_mask:
        inputs.append(helper.make_tensor_value_info("attention_mask", TensorProto.INT64, seq))
    inputs.append(helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, seq))
    inits = [
        numpy_helper.from_array(rng.normal(size=(_vocab_size(), DIM)).astype(np.float32), "emb"),
        numpy_helper.from_array(rng.normal(size=(2, DIM)).astype(np.float32), "type_emb"),
        numpy_helper.from_array(rng.normal(scale=0.5, size=(DIM, outputs)).astype(np.float32), "w"),
    ]
    nodes = [
        helper.make_node("Gather", ["emb", "input_ids"], ["tok"]),
        helper.make_node("Gather", ["type_emb", "token_type_ids"], ["typ"]),
        helper.make_node("Add", ["tok", "typ"], ["hidden"]),
    ]
    if with_mask:
        inits += [
            numpy_helper.from_array(np.array([1], dtype=np.int64), "seq_axis"),
            numpy_helper.from_array(np.array([2], dtype=np.int64), "feat_axis"),
        ]
        nodes += [
            helper.make_node("Cast", ["attention_mask"], ["maskf"], to=TensorProto.FLOAT),
            helper.make_node("Unsqueeze", ["maskf", "feat_axis"], ["mask3"]),
            helper.make_node("Mul", ["hidden", "mask3"], ["masked"]),
            helper.make_node("ReduceSum", ["masked", "seq_axis"], ["total"], keepdims=0),
            helper.make_node("ReduceSum", ["mask3", "seq_axis"], ["count"], keepdims=0),
            helper.make_node("Div", ["total", "count"], ["pooled"]),
        ]
    else:
        # ReduceMean still takes its axes as an attribute at opset 17 (ReduceSum does not).
        nodes.append(helper.make_node("ReduceMean", ["hidden"], ["pooled"], axes=[1], keepdims=0))
    nodes.append(helper.make_node("MatMul", ["pooled", "w"], ["logits"]))
    graph = helper.make_graph(
        nodes,
        "tiny_cross_encoder",
        inputs,
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", outputs])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("tiny_ce")
    _tokenizer_json(d / "tokenizer.json")
    _model(d / "ce1.onnx", outputs=1)
    _model(d / "ce2.onnx", outputs=2)
    _model(d / "nomask.onnx", with_mask=False)
    return d


@pytest.fixture(scope="module")
def encoder(model_dir: Path) -> OnnxCrossEncoder:
    return OnnxCrossEncoder(model_dir / "ce1.onnx", model_dir / "tokenizer.json", "tiny-ce", threads=1)


QUERY = "where did she go on the trip"
PASSAGES = [
    "she went to paris",
    "the cat is new",
    "we bought a car in london",
    "i live in london",
    "he went on a trip to paris in may",
    "the dog",
]


def test_scores_in_unit_interval_one_per_passage(encoder: OnnxCrossEncoder) -> None:
    scores = encoder.score(QUERY, PASSAGES)
    assert scores.dtype == np.float32
    assert scores.shape == (len(PASSAGES),)
    assert np.all((scores > 0) & (scores < 1))
    assert len(set(scores.tolist())) > 1  # the inputs actually reach the head
    assert encoder.score(QUERY, []).shape == (0,)


def test_deterministic(encoder: OnnxCrossEncoder) -> None:
    np.testing.assert_array_equal(encoder.score(QUERY, PASSAGES), encoder.score(QUERY, PASSAGES))


def test_batching_does_not_change_scores(encoder: OnnxCrossEncoder) -> None:
    items = [(p, "2023-05-08T10:00:00" if i % 2 else None) for i, p in enumerate(PASSAGES)]
    small = dict(rerank_order(encoder, QUERY, items, batch=2))
    whole = dict(rerank_order(encoder, QUERY, items, batch=100))
    assert small.keys() == whole.keys() == set(range(len(items)))
    for i, score in whole.items():
        assert small[i] == pytest.approx(score, abs=1e-6)
    ranked = rerank_order(encoder, QUERY, items, batch=100)
    assert [s for _, s in ranked] == sorted((s for _, s in ranked), reverse=True)


def test_padding_does_not_change_a_score(encoder: OnnxCrossEncoder) -> None:
    short = "the dog"
    long = " ".join(WORDS * 3)
    alone = encoder.score(QUERY, [short])[0]
    together = encoder.score(QUERY, [short, long])[0]
    assert abs(float(alone) - float(together)) < 1e-5


def test_two_column_output(model_dir: Path) -> None:
    ce = OnnxCrossEncoder(model_dir / "ce2.onnx", model_dir / "tokenizer.json", "tiny-ce2", threads=1)
    scores = ce.score(QUERY, PASSAGES)
    assert scores.dtype == np.float32 and scores.shape == (len(PASSAGES),)
    assert np.all((scores > 0) & (scores < 1))


def test_missing_model_file(model_dir: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nope.onnx"
    ce = OnnxCrossEncoder(missing, model_dir / "tokenizer.json", "x")
    with pytest.raises(ModelNotFoundError, match=str(missing).replace("\\", "\\\\")):
        ce.score(QUERY, ["a"])


def test_missing_tokenizer(model_dir: Path, tmp_path: Path) -> None:
    missing = tmp_path / "tokenizer.json"
    ce = OnnxCrossEncoder(model_dir / "ce1.onnx", missing, "x")
    with pytest.raises(ModelNotFoundError) as err:
        ce.score(QUERY, ["a"])
    assert str(missing) in str(err.value)


def test_model_without_attention_mask_is_refused(model_dir: Path) -> None:
    ce = OnnxCrossEncoder(model_dir / "nomask.onnx", model_dir / "tokenizer.json", "x")
    with pytest.raises(ModelNotFoundError, match="attention_mask"):
        ce.score(QUERY, ["a"])


def test_date_prefixed() -> None:
    assert date_prefixed("hello", "2023-05-08T13:56:00") == "[Date: May 08, 2023 (2023-05-08)] hello"
    assert date_prefixed("hello", "2023-12-25") == "[Date: December 25, 2023 (2023-12-25)] hello"
    assert date_prefixed("hello", None) == "hello"
    assert date_prefixed("hello", "sometime") == "hello"


class _FlatReranker:
    """Gives every passage the same score, except those containing 'best'."""

    model_id = "flat"

    def __init__(self) -> None:
        self.seen: list[list[str]] = []

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        self.seen.append(list(passages))
        return np.array([0.9 if "best" in p else 0.5 for p in passages], dtype=np.float32)


def test_rerank_order_is_stable_on_ties() -> None:
    fake = _FlatReranker()
    items = [("a", None), ("b", "2023-05-08"), ("best c", None), ("d", None), ("e", None)]
    order = rerank_order(fake, "q", items, batch=2)
    assert [i for i, _ in order] == [2, 0, 1, 3, 4]
    assert order[0][1] == pytest.approx(0.9) and order[1][1] == pytest.approx(0.5)
    assert [len(b) for b in fake.seen] == [2, 2, 1]
    assert fake.seen[0][1] == "[Date: May 08, 2023 (2023-05-08)] b"
    assert rerank_order(fake, "q", []) == []


def test_search_reranks_with_the_configured_cross_encoder(model_dir: Path, tmp_path: Path) -> None:
    from dataclasses import replace

    from localmem.config import Config
    from tests.fakes import HashEmbedder

    config = replace(Config(), rerank_model=model_dir / "ce1.onnx", rerank_tokenizer=model_dir / "tokenizer.json")
    with open_memory(tmp_path / "m.db", namespace="t", config=config, embedder=HashEmbedder()) as mem:
        for text in PASSAGES:
            mem.add("Ann", text, time="2023-05-08T10:00:00")
        hits = mem.search(QUERY, k=3, channels=["vector", "bm25"])
        assert hits and all("rerank" in h.channels for h in hits)
        scores = [h.channels["rerank"]["score"] for h in hits]
        assert scores == sorted(scores, reverse=True)  # rerank order stands after fusion
        plain = open_memory(tmp_path / "m.db", namespace="t", embedder=HashEmbedder())
        try:
            assert all("rerank" not in h.channels for h in plain.search(QUERY, k=3))
        finally:
            plain.close()
    broken = replace(Config(), rerank_model=model_dir / "ce1.onnx")
    with open_memory(tmp_path / "m.db", namespace="t", config=broken, embedder=HashEmbedder()) as mem:
        with pytest.raises(LocalmemError, match="tokenizer.json"):
            mem.search(QUERY)
