"""The local LLM as a reranker (``--rerank llm``): each passage judged relevant or not."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .protocols import Judge


class LLMReranker:
    """The local LLM as a yes/no relevance judge (``--rerank llm``): slow (about 0.4 s a
    passage for the 1.5B model on 2 cores), so only the top candidates are judged."""

    def __init__(self, llm: Judge) -> None:
        if not isinstance(llm, Judge):
            raise TypeError("this LLM backend cannot answer yes/no questions (no judge())")
        self.llm = llm
        self.model_id = f"llm:{getattr(llm, 'model_id', 'llm')}"

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        from ..prompts import relevance

        prompts = [relevance.render(query, p) for p in passages]  # question first: a shared prefix
        return np.asarray(self.llm.judge(prompts).p_yes, dtype=np.float32)
