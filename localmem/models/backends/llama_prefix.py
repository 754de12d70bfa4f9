"""Prefill that reuses evaluated prompt prefixes, including ones evicted by other prompts.

llama.cpp keeps one evaluated sequence: a call whose prompt starts like the previous one
skips the shared part. The pipeline alternates prompts with different instructions
(extract, then verify, then the next episode's extract), and each switch threw away the
other's instructions: about 500 tokens, 6-7 s on 2 cores, per episode. So the key-value
state of each static prefix (the system message) is snapshotted once, with llama.cpp's
per-sequence state API (~15 MB for 500 tokens of the 1.5B model), and copied back when a
prompt with that prefix finds the cache holding something else.
"""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Sequence


@dataclass
class _Snapshot:
    tokens: list[int]
    data: Any  # ctypes uint8 array from llama_state_seq_get_data
    size: int


class PrefixCache:
    """Snapshots of evaluated static prefixes, least recently used dropped first."""

    def __init__(self, max_entries: int = 8) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[int, ...], _Snapshot] = OrderedDict()
        self.restored = 0  # how many times a snapshot saved a re-prefill

    def prefill(self, llama: Any, tokens: Sequence[int], n_static: int = 0) -> int:
        """Evaluate ``tokens`` so that the next-token logits are ready; ``n_static`` leading
        tokens are the reusable part. Returns how many tokens were actually evaluated."""
        import llama_cpp

        tokens = list(tokens)
        keep = 0
        limit = min(llama.n_tokens, len(tokens) - 1)  # evaluate at least one token: fresh logits
        while keep < limit and llama.input_ids[keep] == tokens[keep]:
            keep += 1
        static = n_static if 0 < n_static < len(tokens) else 0
        key = tuple(tokens[:static])
        snap = self._entries.get(key) if static else None
        if snap is not None:
            self._entries.move_to_end(key)
            if keep < static:
                llama._ctx.kv_cache_seq_rm(0, 0, -1)
                if llama_cpp.llama_state_seq_set_data(llama._ctx.ctx, snap.data, snap.size, 0):
                    llama.input_ids[:static] = snap.tokens
                    keep = static
                    self.restored += 1
                else:  # pragma: no cover - a state llama.cpp no longer accepts
                    del self._entries[key]
                    keep = 0
        elif static:
            if keep > static:
                keep = static
            llama.n_tokens = keep
            llama.eval(tokens[keep:static])  # eval() first drops the cache beyond n_tokens
            llama._ctx.kv_cache_seq_rm(0, static, -1)
            keep = static
            self._save(llama, key)
        evaluated = len(tokens) - keep
        llama.n_tokens = keep
        llama.eval(tokens[keep:])
        return evaluated

    def _save(self, llama: Any, key: tuple[int, ...]) -> None:
        import llama_cpp

        size = llama_cpp.llama_state_seq_get_size(llama._ctx.ctx, 0)
        data = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_seq_get_data(llama._ctx.ctx, data, size, 0)
        if not written:  # pragma: no cover
            return
        self._entries[key] = _Snapshot(list(key), data, written)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)


def static_length(llama: Any, prompt: str, tokens: Sequence[int], static_text: str | None) -> int:
    """How many leading ``tokens`` encode ``prompt`` up to the end of ``static_text`` (the
    system message), or 0 when that boundary does not fall between two tokens."""
    if not static_text:
        return 0
    at = prompt.find(static_text)
    if at < 0:
        return 0
    head = llama.tokenize(prompt[: at + len(static_text)].encode("utf-8"), add_bos=False, special=True)
    n = len(head)
    if n >= len(tokens) or list(tokens[:n]) != head:
        # The prompt may start with a BOS the head lacks: try once with it.
        if tokens and list(tokens[1 : n + 1]) == head and n + 1 < len(tokens):
            return n + 1
        return 0
    return n
