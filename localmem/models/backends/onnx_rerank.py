"""Cross-encoder reranking with onnxruntime + a Hugging Face tokenizer.json.

Works with BERT-style sequence-classification models exported to ONNX (inputs
``input_ids``, ``attention_mask`` and optionally ``token_type_ids``; first
output the logits), such as ``cross-encoder/ms-marco-MiniLM-L-6-v2``. The
query and each passage are encoded as one pair; a single logit becomes
``sigmoid(logit)``, two (not relevant, relevant) become
``sigmoid(relevant - not_relevant)``, i.e. the softmax probability of "relevant".
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ...config import DEFAULTS
from ...errors import ModelNotFoundError
from .onnx_embed import open_encoder


class OnnxCrossEncoder:
    """A :class:`~localmem.rerank.Reranker`; the model loads on first use. Safe to share
    between threads (a lock covers loading and each call)."""

    def __init__(
        self,
        model_path: Path,
        tokenizer_path: Path,
        model_id: str,
        *,
        max_tokens: int = 512,
        threads: int = DEFAULTS.onnx_threads,
    ) -> None:
        self.model_id = model_id
        self.model_path = Path(model_path)
        self.tokenizer_path = Path(tokenizer_path)
        self.max_tokens = max_tokens
        self.threads = threads
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: set[str] = set()
        self._lock = threading.RLock()

    def _load(self) -> None:
        with self._lock:
            if self._session is None:
                self._session, self._tokenizer, self._inputs = open_encoder(
                    self.model_path, self.tokenizer_path, self.max_tokens, self.threads, "cross-encoder"
                )

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """Relevance of each passage to ``query``: a float32 array in (0, 1)."""
        with self._lock:
            return self._score(query, passages)

    def _score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        self._load()
        if not passages:
            return np.zeros(0, dtype=np.float32)
        encodings = self._tokenizer.encode_batch([(query, p) for p in passages])
        columns = {
            "input_ids": [e.ids for e in encodings],
            "attention_mask": [e.attention_mask for e in encodings],
            "token_type_ids": [e.type_ids for e in encodings],
        }
        # Some exports (e.g. DistilBERT-based) declare no token_type_ids.
        feeds = {name: np.array(rows, dtype=np.int64) for name, rows in columns.items() if name in self._inputs}
        logits = np.asarray(self._session.run(None, feeds)[0], dtype=np.float64)
        if logits.ndim == 1 or (logits.ndim == 2 and logits.shape[1] == 1):
            margin = logits.reshape(-1)
        elif logits.ndim == 2 and logits.shape[1] == 2:
            margin = logits[:, 1] - logits[:, 0]
        else:
            raise ModelNotFoundError(
                f"{self.model_path} outputs shape {list(logits.shape)}; a cross-encoder "
                "must output one logit per pair, or two (not relevant, relevant)"
            )
        return _sigmoid(margin).astype(np.float32)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # The tanh form never overflows, unlike 1 / (1 + exp(-x)) for large negative x.
    return 0.5 * (1.0 + np.tanh(0.5 * x))
