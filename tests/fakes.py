"""Deterministic stand-ins for the model roles."""

from __future__ import annotations

import hashlib
import re
from typing import Sequence

import numpy as np

_WORD = re.compile(r"\w+")


class HashEmbedder:
    """Hashes each lower-cased word (and its 4-letter prefix) into a bucket; L2-normalised.

    Texts that share words share dimensions, so similarity behaves sensibly.
    ``calls`` records every batch it embedded.
    """

    def __init__(self, dim: int = 64, model_id: str = "hash-embedder") -> None:
        self.model_id = model_id
        self._dim = dim
        self.calls: list[list[str]] = []
        self.roles: list[str] = []  # per call, what the texts were to the caller: "query" or "passage"

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str], role: str = "passage") -> np.ndarray:
        self.calls.append(list(texts))
        self.roles.append(role)
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                for token in {word, word[:4]}:
                    bucket = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=4).digest(), "little")
                    out[row, bucket % self._dim] += 1.0
            norm = np.linalg.norm(out[row])
            out[row] = out[row] / norm if norm else out[row]
            if not norm:
                out[row, 0] = 1.0
        return out


class ScriptedLLM:
    """Answers from a script: queued replies (dicts or raw strings), or a function of the messages.

    ``calls`` records every message list it received, so tests can assert on prompts.
    """

    def __init__(self, replies=None, responder=None, model_id: str = "scripted-llm", judge=None) -> None:
        self.model_id = model_id
        self.replies = list(replies or [])
        self.responder = responder
        self.judge_fn = judge  # prompts -> list of P(yes); None: every answer is yes (0.99)
        self.calls: list[list[dict]] = []
        self.judged: list[list[dict]] = []

    def judge(self, prompts):
        from localmem.models.protocols import Judged

        prompts = [[dict(m) for m in p] for p in prompts]
        self.judged.extend(prompts)
        p_yes = self.judge_fn(prompts) if self.judge_fn else [0.99] * len(prompts)
        tokens = sum(len(m["content"].split()) for p in prompts for m in p)
        return Judged(p_yes=list(p_yes), prompt_tokens=tokens, prefilled=tokens)

    def complete_json(self, messages, schema, max_tokens, on_text=None):
        import json

        from localmem.models.protocols import Completion

        self.calls.append([dict(m) for m in messages])
        if self.replies:
            reply = self.replies.pop(0)
        elif self.responder is not None:
            reply = self.responder(messages)
        else:
            raise AssertionError("ScriptedLLM ran out of replies")
        text = reply if isinstance(reply, str) else json.dumps(reply)
        if on_text is not None:  # streamed in small pieces, as a model would
            for i in range(0, len(text), 3):
                on_text(text[i : i + 3])
        prompt_tokens = sum(len(m["content"].split()) for m in messages)
        return Completion(text=text, prompt_tokens=prompt_tokens, completion_tokens=len(text.split()))

    def count_tokens(self, text: str) -> int:
        return len(text.split())
