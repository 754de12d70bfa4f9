"""The local LLM through llama-cpp-python: JSON-schema constrained chat completions.

The model loads once, on first use. Calls whose prompts share a prefix (static
instructions first) reuse llama.cpp's evaluated prefix instead of prefilling it again.
The fast decoding and prefix snapshots use the binding's private API (:mod:`.llama_private`)
on the releases they were tested with; any other release is answered through its public
API (:mod:`.llama_public`), with the same tokens.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ... import progress
from ...config import DEFAULTS
from ...errors import MissingDependencyError, ModelNotFoundError
from ...files import private_dir
from ..protocols import Completion, Judged, Message
from . import library, llama_private, llama_public
from .llama_private import PrefixCache


@contextlib.contextmanager
def machine_turn(lock: Path | None) -> Iterator[None]:
    """Hold the machine-wide LLM lock file ``lock`` for one call (nothing when ``None`` or
    where ``fcntl`` is missing).

    Two processes running llama.cpp on the same cores do not share them, they stall: each
    one's threads spin-wait for the others (an extraction call took 563 s instead of 75 s
    next to a running eval on 2 cores). Taking turns call by call costs nothing of that.
    """
    if lock is None:
        yield
        return
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    try:
        private_dir(lock.parent)
        fh = open(lock, "a+")
    except OSError:  # an unwritable cache dir must not stop answering
        yield
        return
    with fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


class LlamaLLM:
    """An :class:`~localmem.llm.LLM` backed by a GGUF file.

    Safe to share between threads (an MCP server answers on one thread while its background
    worker extracts on another): a llama.cpp context is not, so one call at a time holds it,
    and the model loads once. Counting tokens reads only the vocabulary and needs no turn, so
    a search never waits behind a long extraction call.
    """

    def __init__(
        self,
        path: Path,
        model_id: str,
        *,
        n_ctx: int = DEFAULTS.n_ctx,
        n_threads: int = DEFAULTS.n_threads,
        n_gpu_layers: int = DEFAULTS.n_gpu_layers,
        chat_format: str | None = None,
        seed: int = 0,
        flash_attn: bool = False,
        jump_forward: bool = True,
        lock: Path | None = None,
        fast: bool | None = None,
        state_dir: Path | None = None,
    ) -> None:
        self.path = Path(path)
        self.model_id = model_id
        self.n_ctx = n_ctx
        self.n_threads = n_threads or (os.cpu_count() or 2)
        self.n_gpu_layers = n_gpu_layers
        self.flash_attn = flash_attn
        self.jump_forward = jump_forward  # evaluate the text a JSON schema fixes in batches
        self.lock = lock  # a lock file shared by every localmem process on the machine (machine_turn)
        self.chat_format = chat_format
        self.seed = seed
        self._llama: Any = None
        self.fast = fast  # the private fast paths; None: when the binding is a tested release
        self._formatter: Any = None
        self._grammars: dict[str, Any] = {}
        # state_dir: evaluated instruction prefixes kept on disk for the next process
        self._prefixes = PrefixCache(directory=state_dir)
        self.prefilled = 0  # prompt tokens evaluated so far (the rest came from reused prefixes)
        self.load_seconds: float | None = None  # how long loading the model took (None: not loaded)
        self._turn = threading.RLock()  # one call at a time in this process (machine_turn: across them)

    def _model(self) -> Any:
        if self._llama is not None:
            return self._llama
        progress.stage(progress.LOAD)  # said before the turn: serve's preload may be loading it
        with self._turn:
            return self._load()

    def _load(self) -> Any:
        if self._llama is None:
            try:
                llama_cpp = library("llama_cpp")
            except ImportError as exc:
                raise MissingDependencyError("llama-cpp-python", "llm") from exc
            gpu_layers = self.n_gpu_layers if llama_cpp.llama_supports_gpu_offload() else 0
            loading = time.perf_counter()
            try:
                self._llama = llama_cpp.Llama(
                    model_path=str(self.path),
                    n_ctx=self.n_ctx,
                    n_threads=self.n_threads,
                    n_gpu_layers=gpu_layers,
                    chat_format=self.chat_format,
                    seed=self.seed,
                    flash_attn=self.flash_attn,
                    verbose=False,
                )
            except (ValueError, RuntimeError) as exc:
                raise ModelNotFoundError(f"cannot load the GGUF model {self.path}: {exc}") from exc
            if self.fast is None or self.fast:
                self.fast = llama_private.supported(llama_cpp, self._llama)
            self.load_seconds = time.perf_counter() - loading
            # What a saved prefix state depends on besides its tokens. The build's instruction sets
            # too: a state another build evaluated rounds differently, and greedy answers can flip.
            build = llama_cpp.llama_print_system_info().decode("utf-8", errors="replace")
            self._prefixes.identity = "|".join(
                map(
                    str,
                    (
                        self.model_id,
                        self.path.stat().st_size,
                        llama_cpp.__version__,
                        self.flash_attn,
                        gpu_layers,
                        build,
                    ),
                )
            )
        return self._llama

    def complete_json(
        self,
        messages: Sequence[Message],
        schema: dict[str, Any],
        max_tokens: int,
        on_text: Callable[[str], None] | None = None,
    ) -> Completion:
        """Greedy completion under the schema's grammar (see :mod:`.llama_private`)."""
        llama = self._model()
        started = time.perf_counter()
        with self._turn, machine_turn(self.lock):
            if self.fast:
                before, prefill_started = self.prefilled, time.perf_counter()
                tokens = self._prefill(messages)
                prompt_seconds = time.perf_counter() - prefill_started
                evaluated = self.prefilled - before
                done = llama_private.decode(
                    llama,
                    self._grammar(schema),
                    max_tokens,
                    on_text,
                    schema if self.jump_forward else None,
                )
            else:
                tokens = self._prompt_tokens(messages)
                done = llama_public.decode(
                    llama, self._grammar(schema), tokens, max_tokens, on_text, schema if self.jump_forward else None
                )
                self.prefilled += done.prefilled
                evaluated, prompt_seconds = done.prefilled, done.prompt_seconds
        text = llama.detokenize(done.tokens).decode("utf-8", errors="replace")
        return Completion(
            text=text,
            prompt_tokens=len(tokens),
            completion_tokens=len(done.tokens),
            seconds=time.perf_counter() - started,
            reused=len(tokens) - evaluated,
            prompt_seconds=prompt_seconds,
        )

    def warm(self, messages: Sequence[Message]) -> float:
        """Load the model and evaluate (or restore from the state directory) the system message
        of ``messages``, the prefix the next call with that system message reuses."""
        started = time.perf_counter()
        self._model()
        if self.fast:
            with self._turn, machine_turn(self.lock):
                self._prefill(messages)
        return time.perf_counter() - started

    def _prefill(self, messages: Sequence[Message]) -> list[int]:
        """Evaluate the chat prompt of ``messages`` (the system message is the reusable
        prefix); returns its tokens. Raises ``ValueError`` when it does not fit the context."""
        llama = self._model()
        prompt, tokens = self._prompt(messages)
        system = messages[0]["content"] if messages and messages[0]["role"] == "system" else None
        self.prefilled += self._prefixes.prefill(
            llama, tokens, llama_private.static_length(llama, prompt, tokens, system)
        )
        return tokens

    def _prompt_tokens(self, messages: Sequence[Message]) -> list[int]:
        return self._prompt(messages)[1]

    def _prompt(self, messages: Sequence[Message]) -> tuple[str, list[int]]:
        """The chat prompt of ``messages`` and its tokens; ``ValueError`` when it does not fit."""
        llama = self._model()
        prompt, templated = self._chat_prompt(list(messages))
        tokens = self._tokenize_chat(prompt, messages, templated)
        if len(tokens) >= llama.n_ctx():
            raise ValueError(f"the prompt has {len(tokens)} tokens; the context window holds {llama.n_ctx()}")
        return prompt, tokens

    def _tokenize_chat(self, prompt: str, messages: Sequence[Message], templated: bool) -> list[int]:
        """The tokens of ``prompt``, the chat template filled with ``messages``: special tokens
        (``<|im_start|>``, ``<|im_end|>``...) are read in the template's own text only. Each
        message's content is tokenized as plain text, so a stored message that spells
        ``<|im_end|><|im_start|>assistant`` stays text and cannot close its turn or open one.

        For prompts without such text the tokens are those of the whole string (the template
        puts a special token or a line break at every boundary; a test compares both)."""
        llama = self._model()
        pieces: list[tuple[str, bool]] = []  # (text, whether special tokens are read in it)
        at = 0
        for message in messages:
            content = message["content"]
            found = prompt.find(content, at) if content else -1
            if found < 0 and content.strip():  # a template that trims the content
                content = content.strip()
                found = prompt.find(content, at)
            if found >= 0:
                pieces += [(prompt[at:found], True), (content, False)]
                at = found + len(content)
        pieces.append((prompt[at:], True))
        tokens: list[int] = []
        for text, special in pieces:
            if text:
                tokens += llama.tokenize(text.encode("utf-8"), add_bos=not templated and not tokens, special=special)
        return tokens

    def _grammar(self, schema: dict[str, Any]) -> Any:
        from llama_cpp.llama_grammar import LlamaGrammar

        key = json.dumps(schema, sort_keys=True)
        if key not in self._grammars:
            self._grammars[key] = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
        return self._grammars[key]

    def measure_speed(self, prompt_tokens: int = 512, gen_tokens: int = 128, repeats: int = 2) -> dict[str, Any]:
        """Prefill and generation speed on this machine (tokens/s), best of ``repeats``.

        Prefill: ``prompt_tokens`` fresh tokens evaluated with the cache cleared. Generation:
        ``gen_tokens`` greedy tokens after that prompt (end-of-text banned so the count is exact),
        timed as the whole call minus the measured prefill.
        """
        with self._turn:
            return self._measure_speed(prompt_tokens, gen_tokens, repeats)

    def plain_call(self, prompt_tokens: int, gen_tokens: int) -> float:
        """Seconds of one plain ``create_completion`` (cache cleared, greedy, no grammar) with
        ``prompt_tokens`` fresh prompt tokens and exactly ``gen_tokens`` generated."""
        with self._turn, machine_turn(self.lock):
            llama = self._model()
            tokens = self._filler(prompt_tokens)
            llama.reset()
            started = time.perf_counter()
            llama.create_completion(
                prompt=tokens,
                max_tokens=max(1, gen_tokens),
                temperature=0.0,
                logit_bias={int(llama.token_eos()): -100.0},
            )
            seconds = time.perf_counter() - started
            llama.reset()  # the next call restores its prefix from the snapshot, as after any other prompt
            return seconds

    def _filler(self, n: int) -> list[int]:
        """``n`` tokens of ordinary chat-like text (a BOS first)."""
        llama = self._model()
        text = (
            "Caroline told Melanie about the support group she went to on Friday, and Melanie "
            "talked about painting a sunrise with her kids at the lake last summer. "
        ) * (n // 20 + 2)
        return llama.tokenize(text.encode("utf-8"), add_bos=True)[:n]

    def _measure_speed(self, prompt_tokens: int, gen_tokens: int, repeats: int) -> dict[str, Any]:
        llama = self._model()
        tokens = self._filler(prompt_tokens)
        no_eos = {int(llama.token_eos()): -100.0}
        prefill: list[float] = []
        generate: list[float] = []
        for _ in range(repeats):
            llama.reset()
            started = time.perf_counter()
            llama.create_completion(prompt=tokens, max_tokens=1, temperature=0.0)
            prefill_s = time.perf_counter() - started
            llama.reset()
            started = time.perf_counter()
            out = llama.create_completion(prompt=tokens, max_tokens=gen_tokens, temperature=0.0, logit_bias=no_eos)
            total = time.perf_counter() - started
            made = int((out.get("usage") or {}).get("completion_tokens", gen_tokens))
            prefill.append(len(tokens) / prefill_s)
            generate.append((made - 1) / max(total - prefill_s, 1e-9))
        llama.reset()
        return {
            "model": self.model_id,
            "n_threads": self.n_threads,
            "prompt_tokens": len(tokens),
            "gen_tokens": gen_tokens,
            "prompt_tok_s": round(max(prefill), 1),
            "gen_tok_s": round(max(generate), 1),
        }

    def count_tokens(self, text: str) -> int:
        return len(self._model().tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def judge(self, prompts: Sequence[Sequence[Message]]) -> Judged:
        """P(yes) for each prompt: the next-token logits of "yes" against "no" after it.

        Each prompt is prefilled only past the prefix it shares with the previous one.
        """
        with self._turn:
            return self._judge(prompts)

    def _judge(self, prompts: Sequence[Sequence[Message]]) -> Judged:
        llama = self._model()
        yes, no = self._answer_tokens()
        out = Judged(p_yes=[])
        for messages in prompts:
            before = self.prefilled
            tokens, logits = self._next_logits(llama, messages)
            out.prompt_tokens += len(tokens)
            out.prefilled += self.prefilled - before
            margin = np.logaddexp.reduce(logits[yes]) - np.logaddexp.reduce(logits[no])
            out.p_yes.append(float(1.0 / (1.0 + np.exp(-float(margin)))))
        return out

    def _next_logits(self, llama: Any, messages: Sequence[Message]) -> tuple[list[int], Any]:
        """Prefill ``messages`` (past what the context already holds) and read the logits of
        the token after them: the prompt's tokens, and those logits."""
        with machine_turn(self.lock):
            if self.fast:
                tokens = self._prefill(messages)
                return tokens, llama_private.last_logits(llama)
            tokens = self._prompt_tokens(messages)
            self.prefilled += len(tokens) - llama_public.reused(llama, tokens)
            return tokens, llama_public.last_logits(llama, tokens)

    def _answer_tokens(self) -> tuple[list[int], list[int]]:
        llama = self._model()

        def first(words: Sequence[str]) -> list[int]:
            return sorted({llama.tokenize(w.encode("utf-8"), add_bos=False, special=False)[0] for w in words})

        return first(["yes", "Yes", " yes", " Yes"]), first(["no", "No", " no", " No"])

    def _chat_prompt(self, messages: list[dict[str, str]]) -> tuple[str, bool]:
        """The prompt text in the model's own chat template (from the GGUF), else a plain
        transcript; and whether the template supplied the special tokens itself."""
        if self._formatter is None:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            llama = self._model()
            template = llama.metadata.get("tokenizer.chat_template")
            if template:
                eos = llama.detokenize([llama.token_eos()]).decode("utf-8", "ignore")
                bos = llama.detokenize([llama.token_bos()]).decode("utf-8", "ignore")
                self._formatter = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos)
            else:
                self._formatter = False
        if self._formatter:
            return self._formatter(messages=messages).prompt, True
        return "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant:", False


class LlamaTokenCounter:
    """The GGUF model's tokenizer alone (``vocab_only``: no weights are loaded)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._llama: Any = None

    def count_tokens(self, text: str) -> int:
        if self._llama is None:
            try:
                llama_cpp = library("llama_cpp")
            except ImportError as exc:
                raise MissingDependencyError("llama-cpp-python", "llm") from exc
            with _quiet_stderr():  # llama.cpp warns about the context size of a vocab-only load
                self._llama = llama_cpp.Llama(model_path=str(self.path), vocab_only=True, verbose=False)
        return len(self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Silence stderr for the duration: C-level writes to file descriptor 2, and the Python
    ``sys.stderr`` that llama-cpp-python's log callback writes to."""
    with contextlib.redirect_stderr(io.StringIO()):
        try:
            saved = os.dup(2)
        except OSError:  # pragma: no cover - no stderr at all
            yield
            return
        try:
            with open(os.devnull, "w") as devnull:
                os.dup2(devnull.fileno(), 2)
                yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
