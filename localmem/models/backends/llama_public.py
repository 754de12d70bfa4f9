"""Greedy JSON decoding and next-token logits through llama-cpp-python's public API only.

The fallback of :mod:`.llama_private` on a release of the binding localmem was not tested
with: ``Llama.generate`` with the grammar and temperature 0 (the grammar over the whole
vocabulary, then the best token: the tokens the fast path gives, a test compares them), and
the logits read by a logits processor. The binding reuses the prompt prefix it evaluated last;
prefixes evicted by other prompts are evaluated again.
"""

from __future__ import annotations

import codecs
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np


@dataclass
class Decoded:
    tokens: list[int]
    full_checks: int = 0  # steps where the best token was rejected and the whole vocabulary was constrained
    forced: int = 0  # tokens the schema fixed, evaluated in batches rather than generated
    prefilled: int = 0  # prompt tokens evaluated (the rest were reused from the cache)
    prompt_seconds: float = 0.0  # until the first token (the prompt's evaluation, and one step)


def reused(llama: Any, tokens: Sequence[int]) -> int:
    """How many leading ``tokens`` the context already holds (at least one is evaluated again,
    for fresh logits)."""
    keep = 0
    limit = min(llama.n_tokens, len(tokens) - 1)
    while keep < limit and llama.input_ids[keep] == tokens[keep]:
        keep += 1
    return keep


def decode(
    llama: Any,
    grammar: Any,
    tokens: Sequence[int],
    max_tokens: int,
    on_text: Callable[[str], None] | None = None,
    schema: dict[str, Any] | None = None,
) -> Decoded:
    """Greedy tokens under ``grammar`` after the prompt ``tokens``, until a control token
    (end of turn), the end of the JSON value, ``max_tokens`` or a full context. ``schema``:
    the text it fixes is the next tokens, as in the fast path (:mod:`.json_jump`), forced one
    by one through a logits processor instead of evaluated in one batch."""
    import llama_cpp

    from .json_jump import JsonJump

    jump: JsonJump | None = JsonJump(schema) if schema is not None else None
    closes = JsonJump({})  # follows the JSON to stop when it closes, as the fast path does
    utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
    max_tokens = min(max_tokens, llama.n_ctx() - len(tokens))
    prefilled = len(tokens) - reused(llama, tokens)
    out: list[int] = []
    forced: list[int] = []  # the fixed text's tokens still to come
    batch_text = ""  # that text, fed to the tracker once all its tokens are in
    forced_count = 0

    def plan() -> None:
        nonlocal batch_text
        if jump is not None and not forced:
            batch_text = jump.forced()
            if batch_text:
                forced.extend(llama.tokenize(batch_text.encode("utf-8"), add_bos=False, special=False))

    def force(_ids: Any, logits: Any) -> Any:
        if not forced:
            return logits
        # Every other token lowered alike: if the grammar refuses the fixed one, the best
        # token it allows is the one the fast path takes then.
        pushed = np.asarray(logits, dtype=np.float32) - np.float32(1e4)
        pushed[forced[0]] = logits[forced[0]]
        return pushed

    if max_tokens <= 0:
        return Decoded(tokens=out, prefilled=0)
    plan()
    generator = llama.generate(
        list(tokens),
        temp=0.0,
        repeat_penalty=1.0,
        grammar=grammar,
        logits_processor=llama_cpp.LogitsProcessorList([force]),
    )
    started = time.perf_counter()
    prompt_seconds = 0.0
    try:
        for token in generator:
            prompt_seconds = prompt_seconds or time.perf_counter() - started
            piece = llama.detokenize([token])
            if not piece:  # a control token: the end of the turn
                break
            out.append(token)
            text = utf8.decode(piece)
            if text and on_text is not None:
                on_text(text)
            closes.feed(text)
            if forced:
                if token == forced[0]:
                    forced.pop(0)
                    forced_count += 1
                    if not forced and jump is not None:
                        jump.feed(batch_text)
                else:  # the grammar disagrees: back to token by token
                    forced.clear()
                    jump = None
            elif jump is not None:
                jump.feed(text)
            if closes.complete or len(out) >= max_tokens:
                break
            plan()
    finally:
        generator.close()
    return Decoded(tokens=out, forced=forced_count, prefilled=prefilled, prompt_seconds=prompt_seconds)


def last_logits(llama: Any, tokens: Sequence[int]) -> np.ndarray:
    """The next-token logits after ``tokens`` (their shared prefix with the context reused)."""
    caught: list[np.ndarray] = []

    def catch(_ids: Any, logits: Any) -> Any:
        caught.append(np.array(logits, dtype=np.float32))
        return logits

    import llama_cpp

    generator = llama.generate(
        list(tokens), temp=0.0, top_k=1, repeat_penalty=1.0, logits_processor=llama_cpp.LogitsProcessorList([catch])
    )
    next(generator)
    generator.close()
    return caught[0]
