"""Sentence embeddings with onnxruntime + a Hugging Face tokenizer.json.

Works with BERT-style encoders exported to ONNX (inputs ``input_ids``,
``attention_mask`` and optionally ``token_type_ids``; output
``last_hidden_state``): mean pooling over real tokens, then L2 norm — what
sentence-transformers does for all-MiniLM-L6-v2.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ...config import DEFAULTS
from ...errors import MissingDependencyError, ModelNotFoundError
from . import library


class OnnxEmbedder:
    """An :class:`~localmem.embed.Embedder`; the model loads on first use.

    Safe to share between threads (an MCP server's tool calls and its background extraction
    use one embedder): a lock covers loading and each call, since counting tokens changes the
    shared tokenizer's truncation for its duration. A call takes milliseconds, so the lock
    never makes a caller wait long.
    """

    def __init__(
        self,
        model_path: Path,
        tokenizer_path: Path,
        model_id: str,
        max_tokens: int = DEFAULTS.embed_max_tokens,
        threads: int = DEFAULTS.onnx_threads,
    ) -> None:
        self.model_id = model_id
        self.model_path = Path(model_path)
        self.tokenizer_path = Path(tokenizer_path)
        self.max_tokens = max_tokens
        self.threads = threads
        self._session: Any = None
        self._tokenizer: Any = None
        self._counter: Any = None
        self._inputs: set[str] = set()
        self._dim: int | None = None
        self._lock = threading.RLock()

    def _load(self) -> None:
        with self._lock:
            if self._session is None:
                self._session, self._tokenizer, self._inputs = open_encoder(
                    self.model_path, self.tokenizer_path, self.max_tokens, self.threads, "embedder"
                )

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` under this embedder's tokenizer, without its truncation."""
        with self._lock:
            return self._count_tokens(text)

    def _count_tokens(self, text: str) -> int:
        if self._tokenizer is not None:  # loaded to embed: count with it (a second load costs ~25 ms)
            truncation = self._tokenizer.truncation
            self._tokenizer.no_truncation()
            try:
                return len(self._tokenizer.encode(text, add_special_tokens=False).ids)
            finally:
                self._tokenizer.enable_truncation(**truncation)
        if self._counter is None:
            self._counter = library("tokenizers").Tokenizer.from_file(str(self.tokenizer_path))
            self._counter.no_truncation()
            self._counter.no_padding()
        return len(self._counter.encode(text, add_special_tokens=False).ids)

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    def embed(self, texts: Sequence[str], role: str = "passage") -> np.ndarray:
        """Vectors of ``texts``; ``role`` is ignored (all-MiniLM-L6-v2 embeds questions and
        passages alike)."""
        with self._lock:
            return self._embed(texts)

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        self._load()
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        out = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        self._dim = out.shape[1]
        return out


def open_encoder(
    model_path: Path, tokenizer_path: Path, max_tokens: int, threads: int, what: str
) -> tuple[Any, Any, set[str]]:
    """An onnxruntime session for a BERT-style encoder, its tokenizer (truncating to
    ``max_tokens``, padding) and the session's input names; clear errors naming ``what``."""
    try:
        ort = library("onnxruntime")
        tokenizers = library("tokenizers")
    except ImportError as exc:  # pragma: no cover - both are core dependencies
        raise MissingDependencyError(exc.name or "onnxruntime", "embed") from exc
    try:
        tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_path))
    except Exception as exc:
        raise ModelNotFoundError(f"cannot read the {what} tokenizer {tokenizer_path}: {exc}") from exc
    # For pairs, truncation trims the longer side first, so a long passage cannot push out the query.
    tokenizer.enable_truncation(max_length=max_tokens)
    tokenizer.enable_padding(pad_id=tokenizer.token_to_id("[PAD]") or 0)
    opts = ort.SessionOptions()
    # "Extended" rather than onnxruntime's default "all": the session is ready in ~0.13 s
    # instead of ~0.26 s (the layout passes "all" adds), and all-MiniLM-L6-v2 int8 gave
    # bit-identical embeddings for 256 chat messages either way.
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    if threads:
        opts.intra_op_num_threads = threads
    opts.log_severity_level = 3
    try:
        session = ort.InferenceSession(str(model_path), sess_options=opts, providers=_providers(ort))
    except Exception as exc:
        raise ModelNotFoundError(f"cannot load the ONNX {what} {model_path}: {exc}") from exc
    inputs = {i.name for i in session.get_inputs()}
    if not {"input_ids", "attention_mask"} <= inputs:
        raise ModelNotFoundError(
            f"{model_path} is not a BERT-style {what} (inputs: {sorted(inputs)}; needs input_ids and attention_mask)"
        )
    return session, tokenizer, inputs


def _providers(ort: Any) -> list[str]:
    """A GPU execution provider when this onnxruntime build has one, else the CPU."""
    available = ort.get_available_providers()
    preferred = [
        p for p in ("CUDAExecutionProvider", "CoreMLExecutionProvider", "DmlExecutionProvider") if p in available
    ]
    return preferred + ["CPUExecutionProvider"]
