"""The local LLM through llama-cpp-python: JSON-schema constrained chat completions.

The model loads once, on first use. Calls whose prompts share a prefix (static
instructions first) reuse llama.cpp's evaluated prefix instead of prefilling it again.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Sequence

from ..errors import MissingDependencyError, ModelNotFoundError
from ..llm import Completion, Message


class LlamaLLM:
    """An :class:`~localmem.llm.LLM` backed by a GGUF file."""

    def __init__(self, path: Path, model_id: str, *, n_ctx: int = 4096, n_threads: int = 0,
                 n_gpu_layers: int = 0, chat_format: str | None = None, seed: int = 0) -> None:
        self.path = Path(path)
        self.model_id = model_id
        self.n_ctx = n_ctx
        self.n_threads = n_threads or (os.cpu_count() or 2)
        self.n_gpu_layers = n_gpu_layers
        self.chat_format = chat_format
        self.seed = seed
        self._llama: Any = None

    def _model(self) -> Any:
        if self._llama is None:
            try:
                import llama_cpp
            except ImportError as exc:
                raise MissingDependencyError("llama-cpp-python", "llm") from exc
            gpu_layers = self.n_gpu_layers if llama_cpp.llama_supports_gpu_offload() else 0
            try:
                self._llama = llama_cpp.Llama(
                    model_path=str(self.path), n_ctx=self.n_ctx, n_threads=self.n_threads,
                    n_gpu_layers=gpu_layers, chat_format=self.chat_format, seed=self.seed,
                    verbose=False)
            except (ValueError, RuntimeError) as exc:
                raise ModelNotFoundError(f"cannot load the GGUF model {self.path}: {exc}") from exc
        return self._llama

    def complete_json(self, messages: Sequence[Message], schema: dict[str, Any],
                      max_tokens: int) -> Completion:
        llama = self._model()
        started = time.perf_counter()
        out = llama.create_chat_completion(
            messages=list(messages), max_tokens=max_tokens, temperature=0.0,
            response_format={"type": "json_object", "schema": schema})
        usage = out.get("usage") or {}
        return Completion(text=out["choices"][0]["message"]["content"] or "",
                          prompt_tokens=int(usage.get("prompt_tokens", 0)),
                          completion_tokens=int(usage.get("completion_tokens", 0)),
                          seconds=time.perf_counter() - started)

    def count_tokens(self, text: str) -> int:
        return len(self._model().tokenize(text.encode("utf-8"), add_bos=False, special=False))
