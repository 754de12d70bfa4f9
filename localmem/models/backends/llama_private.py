"""The private llama-cpp-python paths, in one place: greedy decoding that checks the
grammar only when it must, reuse of evaluated prompt prefixes (snapshots of llama.cpp's
per-sequence state) and the last row of logits. They use the binding's private ``_ctx``,
``_model.vocab`` and raw sampler calls, which change between releases, so :func:`supported`
allows them only on the releases they were tested with (:data:`TESTED`). On any other
release :mod:`.llama_public` gives the same tokens through the public API, slower, and one
warning is logged.

Greedy decoding under a GBNF grammar that checks the grammar only when it must.

llama-cpp-python puts the grammar sampler in front of the greedy one, so at every step
the grammar is matched against the whole vocabulary (152K pieces for Qwen2.5): about
20 ms per token on 2 cores, a quarter of the generation time. llama.cpp's own sampler
does better: it takes the best token first, asks the grammar about that one token, and
constrains the whole vocabulary only when the grammar rejects it. This module does the
same through the C API. The grammar never raises a logit, so the result is exactly the
grammar-constrained argmax: the same tokens as the slow path, only fewer checks.

Prefill that reuses evaluated prompt prefixes, including ones evicted by other prompts.

llama.cpp keeps one evaluated sequence: a call whose prompt starts like the previous one
skips the shared part. The pipeline alternates prompts with different instructions
(extract, then verify, then the next episode's extract), and each switch threw away the
other's instructions: about 500 tokens, 6-7 s on 2 cores, per episode. So the key-value
state of each static prefix (the system message) is snapshotted once, with llama.cpp's
per-sequence state API (~15 MB for 500 tokens of the 1.5B model), and copied back when a
prompt with that prefix finds the cache holding something else.
"""

from __future__ import annotations

import codecs
import ctypes
import hashlib
import logging
import os
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Sequence

import numpy as np

from ...files import private_dir
from .llama_public import Decoded

_TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])


# The releases these paths were tested with (tests/models/test_real_llm.py); pyproject allows a
# range around them, and any other release in it is answered through the public API.
TESTED = ("0.3.36",)
# What the paths call beyond the public API.
_NEEDED = (
    "llama_sampler_init_grammar",
    "llama_sampler_apply",
    "llama_sampler_accept",
    "llama_sampler_free",
    "llama_vocab_is_eog",
    "llama_state_seq_get_size",
    "llama_state_seq_get_data",
    "llama_state_seq_set_data",
    "llama_token_data",
    "llama_token_data_array",
)

log = logging.getLogger("localmem.llm")
_warned = False


def supported(llama_cpp: ModuleType, llama: Any) -> bool:
    """Whether the private paths may run on this binding (``llama_cpp``) and model (``llama``):
    a tested release with everything they call. Otherwise one warning is logged per process."""
    global _warned
    version = str(getattr(llama_cpp, "__version__", "unknown"))
    ctx = getattr(llama, "_ctx", None)
    model = getattr(llama, "_model", None)
    present = (
        all(hasattr(llama_cpp, name) for name in _NEEDED)
        and hasattr(ctx, "get_logits")
        and hasattr(ctx, "kv_cache_seq_rm")
        and hasattr(ctx, "ctx")
        and hasattr(model, "vocab")
    )
    if version in TESTED and present:
        return True
    if not _warned:
        _warned = True
        log.warning(
            "llama-cpp-python %s is not a release localmem's fast decoding was tested with (%s): "
            "using its public API instead, with the same answers, only slower",
            version,
            ", ".join(TESTED),
        )
    return False


def last_logits(llama: Any) -> np.ndarray:
    """The next-token logits after what ``llama`` evaluated last (the binding keeps no copy
    without ``logits_all``: the context's last row is read)."""
    return np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(llama.n_vocab(),))


def decode(
    llama: Any,
    grammar: Any,
    max_tokens: int,
    on_text: Callable[[str], None] | None = None,
    schema: dict[str, Any] | None = None,
) -> Decoded:
    """Greedy tokens under ``grammar`` (a ``LlamaGrammar``) after the prompt ``llama`` has
    just evaluated, until an end-of-generation token, ``max_tokens`` or a full context.
    ``on_text`` receives the text as it is generated (UTF-8 split across tokens is held back).
    ``schema``: the JSON schema the grammar came from; the text it fixes is evaluated in
    batches instead of generated (:mod:`.json_jump`), and decoding ends when the JSON closes."""
    import llama_cpp

    from .json_jump import JsonJump

    jump = JsonJump(schema) if schema is not None else None

    utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace") if on_text else None

    max_tokens = min(max_tokens, llama.n_ctx() - llama.n_tokens)

    vocab = llama._model.vocab
    n_vocab = llama.n_vocab()
    sampler = llama_cpp.llama_sampler_init_grammar(
        vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
    )
    if not sampler:
        raise ValueError("llama.cpp could not parse the grammar for this JSON schema")
    one = (llama_cpp.llama_token_data * 1)()
    one_array = llama_cpp.llama_token_data_array(data=one, size=1, selected=-1, sorted=False)
    full = np.zeros(n_vocab, dtype=_TOKEN_DATA)
    full["id"] = np.arange(n_vocab, dtype=np.int32)
    full_array = llama_cpp.llama_token_data_array(
        data=full.ctypes.data_as(ctypes.POINTER(llama_cpp.llama_token_data)), size=n_vocab, selected=-1, sorted=False
    )
    out: list[int] = []
    full_checks = 0
    forced_count = 0

    def emit(token: int) -> None:
        out.append(token)
        if utf8 is not None and on_text is not None:
            piece = utf8.decode(llama.detokenize([token]))
            if piece:
                on_text(piece)

    def choose(logits: np.ndarray) -> int | None:
        """The greedy token the grammar allows after ``logits``; None when it allows none."""
        nonlocal full_checks
        token = int(np.argmax(logits))
        one[0].id, one[0].logit, one[0].p = token, float(logits[token]), 0.0
        one_array.size = 1
        llama_cpp.llama_sampler_apply(sampler, ctypes.byref(one_array))  # pyright: ignore[reportArgumentType] (ctypes passes byref as the pointer the C function takes)
        if np.isfinite(one[0].logit):
            return token
        full_checks += 1
        full["logit"] = logits
        full_array.size = n_vocab
        llama_cpp.llama_sampler_apply(sampler, ctypes.byref(full_array))  # pyright: ignore[reportArgumentType] (as above)
        token = int(np.argmax(full["logit"]))
        return token if np.isfinite(full["logit"][token]) else None

    def take(token: int) -> bool:
        """Keep a generated token; whether the JSON is now whole."""
        llama_cpp.llama_sampler_accept(sampler, token)
        emit(token)
        if jump is None:
            return False
        jump.feed(llama.detokenize([token]).decode("utf-8", errors="replace"))
        return jump.complete

    def accepts(token: int) -> bool:
        one[0].id, one[0].logit, one[0].p = token, 0.0, 0.0
        one_array.size = 1
        llama_cpp.llama_sampler_apply(sampler, ctypes.byref(one_array))  # pyright: ignore[reportArgumentType] (ctypes passes byref as the pointer the C function takes)
        return bool(np.isfinite(one[0].logit))

    try:
        while len(out) < max_tokens:
            text = jump.forced() if jump is not None else ""
            if text:
                batch: list[int] = []
                for token in llama.tokenize(text.encode("utf-8"), add_bos=False, special=False):
                    if len(out) >= max_tokens or not accepts(token):
                        jump = None  # the grammar disagrees: back to token-by-token
                        break
                    llama_cpp.llama_sampler_accept(sampler, token)
                    emit(token)
                    batch.append(token)
                if jump is not None:
                    jump.feed(text)
                    forced_count += len(batch)
                if batch:
                    llama.eval(batch)
                if jump is not None and jump.complete:
                    break
                continue
            logits = np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(n_vocab,))
            token = choose(logits)
            if token is None or llama_cpp.llama_vocab_is_eog(vocab, token):
                break  # nothing is allowed (the grammar is exhausted), or the model ended
            if take(token):
                break  # the JSON is whole: nothing the grammar allows after it matters
            llama.eval([token])
    finally:
        llama_cpp.llama_sampler_free(sampler)
    return Decoded(tokens=out, full_checks=full_checks, forced=forced_count)


@dataclass
class _Snapshot:
    tokens: list[int]
    data: Any  # ctypes uint8 array from llama_state_seq_get_data
    size: int


class PrefixCache:
    """Snapshots of evaluated static prefixes, least recently used dropped first.

    ``directory``: snapshots are also written there, one file a prefix, and read by the next
    process instead of evaluating the prefix again (a new ``localmem ask`` evaluated the
    answer prompt's ~530 instruction tokens before its question). ``identity`` names what the
    state depends on besides the tokens (the model file, the binding's release, the context
    settings): a file is used only under the same identity and tokens."""

    def __init__(self, max_entries: int = 8, directory: Path | None = None, identity: str = "") -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[int, ...], _Snapshot] = OrderedDict()
        self.restored = 0  # how many times a snapshot saved a re-prefill
        self.loaded = 0  # of those, from a file another process wrote
        self.directory = directory
        self.identity = identity

    def _file(self, key: tuple[int, ...]) -> Path | None:
        if self.directory is None:
            return None
        digest = hashlib.sha256(f"{self.identity}\n{','.join(map(str, key))}".encode()).hexdigest()[:32]
        return self.directory / f"prefix-{digest}.state"

    def _read(self, key: tuple[int, ...]) -> _Snapshot | None:
        path = self._file(key)
        try:
            blob = path.read_bytes() if path is not None else b""
        except OSError:
            return None
        if not blob:
            return None
        return _Snapshot(list(key), (ctypes.c_uint8 * len(blob)).from_buffer_copy(blob), len(blob))

    def _write(self, key: tuple[int, ...], snap: _Snapshot) -> None:
        path = self._file(key)
        if path is None or path.exists():
            return
        try:
            private_dir(path.parent)
            partial = path.with_suffix(f".{os.getpid()}.part")
            with open(partial, "wb") as fh:  # written whole, then renamed: a reader never sees half
                os.chmod(partial, 0o600)
                fh.write(bytes(memoryview(snap.data)[: snap.size]))
            os.replace(partial, path)
        except OSError:  # a cache that cannot be written only costs the next process time
            return

    def prefill(self, llama: Any, tokens: Sequence[int], n_static: int = 0) -> int:
        """Evaluate ``tokens`` so that the next-token logits are ready; ``n_static`` leading
        tokens are the reusable part. Returns how many tokens were actually evaluated."""
        import llama_cpp

        tokens = list(tokens)
        keep = spent = 0  # spent: tokens evaluated for a new snapshot
        limit = min(llama.n_tokens, len(tokens) - 1)  # evaluate at least one token: fresh logits
        while keep < limit and llama.input_ids[keep] == tokens[keep]:
            keep += 1
        static = n_static if 0 < n_static < len(tokens) else 0
        key = tuple(tokens[:static])
        snap = self._entries.get(key) if static else None
        if snap is None and static and keep < static:
            snap = self._read(key)
            if snap is not None:
                self.loaded += 1
                self._entries[key] = snap
        if snap is not None:
            self._entries.move_to_end(key)
            if keep < static:
                llama._ctx.kv_cache_seq_rm(0, 0, -1)
                if llama_cpp.llama_state_seq_set_data(llama._ctx.ctx, snap.data, snap.size, 0):  # pyright: ignore[reportArgumentType] (ctypes converts the int seq id)
                    llama.input_ids[:static] = snap.tokens
                    keep = static
                    self.restored += 1
                else:  # a state llama.cpp does not accept (a damaged file): evaluated again
                    del self._entries[key]
                    path = self._file(key)
                    if path is not None:
                        path.unlink(missing_ok=True)
                    keep = 0
        elif static:
            if keep > static:
                keep = static
            spent = static - keep
            llama.n_tokens = keep
            llama.eval(tokens[keep:static])  # eval() first drops the cache beyond n_tokens
            llama._ctx.kv_cache_seq_rm(0, static, -1)
            keep = static
            self._save(llama, key)
        evaluated = spent + len(tokens) - keep
        llama.n_tokens = keep
        llama.eval(tokens[keep:])
        return evaluated

    def _save(self, llama: Any, key: tuple[int, ...]) -> None:
        import llama_cpp

        size = llama_cpp.llama_state_seq_get_size(llama._ctx.ctx, 0)  # pyright: ignore[reportArgumentType] (ctypes converts the int seq id)
        data = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_seq_get_data(llama._ctx.ctx, data, size, 0)  # pyright: ignore[reportArgumentType] (ctypes converts the int seq id)
        if not written:  # pragma: no cover
            return
        self._entries[key] = _Snapshot(list(key), data, written)
        self._write(key, self._entries[key])
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
