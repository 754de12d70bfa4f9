"""The model roles as Protocols: what localmem needs of an LLM, an embedder and a reranker.

A backend implements a role's Protocol; what only some backends can do is an optional
capability, a ``runtime_checkable`` Protocol tested with ``isinstance``:

- :class:`Judge`: yes/no questions answered with P(yes), nothing generated (fact
  verification, ``--rerank llm``);
- :class:`TokenCounter`: the model's own token count of a text (evidence budgets);
- :class:`SpeedMeter`: prefill and generation speed on this machine (``bench llm``);
- :class:`ThreadSafe`: calls may come from several threads at once (a model server), so
  independent episodes are extracted in parallel (``llm_workers``).

Backends are built from the configuration by :mod:`localmem.models.factory`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Literal, Protocol, Sequence, runtime_checkable

if TYPE_CHECKING:
    import numpy as np

Message = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": ...}


@dataclass
class Completion:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    reused: int = 0  # of the prompt tokens, those taken from the model's cache (not evaluated)
    prompt_seconds: float = 0.0  # of ``seconds``, evaluating the prompt (0: the backend does not say)


@dataclass
class Judged:
    p_yes: list[float]
    prompt_tokens: int = 0  # over all prompts
    prefilled: int = 0  # of those, the tokens evaluated (the rest was a reused prefix)


class LLM(Protocol):
    """A chat model that can be constrained to a JSON schema."""

    model_id: str

    def complete_json(
        self,
        messages: Sequence[Message],
        schema: dict[str, Any],
        max_tokens: int,
        on_text: Callable[[str], None] | None = None,
    ) -> Completion:
        """One chat completion constrained to ``schema``; ``on_text`` receives the reply's
        text piece by piece as it is generated (backends that cannot stream call it once)."""
        ...


@runtime_checkable
class Judge(Protocol):
    """An optional LLM capability: yes/no questions answered with P(yes), nothing generated."""

    def judge(self, prompts: Sequence[Sequence[Message]]) -> Judged:
        """P(yes) for each chat prompt that ends in a yes/no question. Backends reuse the
        evaluated prefix that consecutive prompts share, so callers order them to share it."""
        ...


@runtime_checkable
class TokenCounter(Protocol):
    """An optional capability: how many of the model's tokens a text is."""

    def count_tokens(self, text: str) -> int: ...


@runtime_checkable
class SpeedMeter(Protocol):
    """An optional LLM capability: prefill and generation speed (tokens/s) on this machine."""

    def measure_speed(self, prompt_tokens: int = 512, gen_tokens: int = 128) -> dict[str, Any]: ...

    def plain_call(self, prompt_tokens: int, gen_tokens: int) -> float:
        """Seconds of one plain call of the binding (no reused prefix, no grammar, no
        localmem decoding) with a prompt of ``prompt_tokens`` fresh tokens and a reply of
        exactly ``gen_tokens``: the yardstick ask's speed is given against."""
        ...


@runtime_checkable
class Warmable(Protocol):
    """An optional LLM capability: load the model and evaluate a prompt's reusable prefix ahead
    of the first call (``localmem serve`` does it as it starts)."""

    def warm(self, messages: Sequence[Message]) -> float:
        """Load the model if needed and evaluate ``messages``' system message, so that a call
        whose prompt starts with it reuses that work; returns the seconds spent."""
        ...


@runtime_checkable
class ThreadSafe(Protocol):
    """An optional LLM capability: calls may come from several threads at once (a model server
    queues or batches them). Backends without it, like the in-process llama.cpp one, are called
    one call at a time."""

    def thread_safe(self) -> bool: ...


# What a text is to an embedder: a question looking for something ("query"), or something stored
# ("passage"). Asymmetric models (e5) embed the two differently; symmetric ones (MiniLM) ignore it.
EmbedRole = Literal["query", "passage"]


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of dimension ``dim``."""

    model_id: str

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str], role: EmbedRole = "passage") -> np.ndarray:
        """A ``(len(texts), dim)`` float32 array, rows L2-normalised; ``role``: "query" for
        what searches (a question), "passage" for what is stored."""
        ...


class Reranker(Protocol):
    """Scores passages against a query; higher means more relevant."""

    model_id: str

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """A ``(len(passages),)`` float32 array of relevance scores in (0, 1)."""
        ...
