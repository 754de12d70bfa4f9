"""The LLM on a model server the user already runs, through its OpenAI-compatible API.

Ollama, LM Studio, llama.cpp's ``llama-server`` and llama-cpp-python's server, and vLLM all
serve ``POST /v1/chat/completions``, but they differ in how a JSON schema is asked for, in
which of OpenAI's fields they know, and in their extensions. Each difference is handled once,
here, and named where it is:

- **Structured output** (:data:`FORMS`): a JSON schema is asked for in OpenAI's
  ``json_schema`` form first. A server that refuses a form (a 4xx or 5xx naming it) is asked in
  the next one, and the form that worked is kept for the rest of the process. Whatever the form,
  the reply is validated and repaired once by :mod:`localmem.models.structured`, because some
  servers accept a schema without enforcing it.
- **Sampling**: greedy (``temperature: 0``), and ``repeat_penalty: 1.0`` because llama-cpp-python's
  server penalises repeats by default (1.1), which bends JSON keys and names; a server that
  refuses the field gets requests without it.
- **The yes/no judge** (fact verification, ``--rerank llm``): P(yes) from the top log
  probabilities of one generated token where the server returns them (llama.cpp's servers,
  vLLM, Ollama); else the token itself decides (LM Studio returns no log probabilities).
- **Token counting** (:data:`TOKENIZERS`): the server's tokenize endpoint where it has one
  (llama.cpp's servers, vLLM); else a local estimate (Ollama and LM Studio have none).
- **The model name**: checked against ``GET /models`` before the first call, because
  llama-cpp-python's server answers with its default model whatever name it is given.

Calls may come from several threads at once (``llm_workers``): the server queues or batches them.
"""

from __future__ import annotations

import json
import math
import threading
import time
from typing import Any, Callable, Sequence

from ...config import DEFAULTS
from ...errors import ModelNotFoundError, ModelServerError
from ..protocols import Completion, Judged, Message
from .http_transport import NotJson, Rejected, Transport

# How a JSON schema is asked for, best first.
FORMS = (
    # OpenAI's form. LM Studio accepts only this one (it refuses "json_object"); Ollama's /v1
    # (0.5 and later), vLLM and llama.cpp's llama-server enforce it. llama-server refuses a
    # request carrying both a schema and a grammar ("Either json_schema or grammar can be
    # specified, but not both"): localmem never sends a grammar, but a chat template that
    # brings its own (tool calling with --jinja) gets that answer, and the next forms follow.
    "json_schema",
    # llama-cpp-python's server: response_format.type may only be "text" or "json_object"
    # (anything else is a 500), and a "schema" beside "json_object" is enforced.
    "json_object+schema",
    # JSON mode without a schema, for servers that know only that: validated and repaired.
    "json_object",
    # Nothing asked of the server: the prompt asks for JSON; validated and repaired.
    "text",
)
# Words in a refusal that mean "this form of structured output", not "this request".
_FORM_WORDS = ("response_format", "json_schema", "json_object", "grammar", "schema")
# The statuses a refused field comes back with: 400 (llama.cpp, vLLM, Ollama, LM Studio),
# 422 (validation in FastAPI servers) and 500 (llama-cpp-python's server reports a validation
# error as an internal one).
_REFUSED = (400, 422, 500)
# Tokenize endpoints, at the server's root (the URL without /v1): the first that answers is kept.
# Each: what it is, its path, its request body, the reply's list of tokens.
TOKENIZERS: tuple[tuple[str, str, Callable[[str, str], dict[str, Any]], str], ...] = (
    (
        "/tokenize (llama.cpp's llama-server)",
        "/tokenize",
        lambda text, model: {"content": text, "add_special": False, "parse_special": False},
        "tokens",
    ),
    (
        "/tokenize (vLLM)",
        "/tokenize",
        lambda text, model: {"model": model, "prompt": text, "add_special_tokens": False},
        "tokens",
    ),
    (
        "/extras/tokenize (llama-cpp-python's server)",
        "/extras/tokenize",
        lambda text, model: {"input": text, "model": model},
        "tokens",
    ),
)
_COUNTS_KEPT = 4096  # token counts remembered per text
JUDGE_TOP = 20  # log probabilities asked for: OpenAI's maximum, and vLLM's default limit
# A schema whose only allowed value is not what the prompt asks for: a reply holding it shows
# that the server enforces the schema (``doctor``'s probe).
_PROBE = (
    [{"role": "user", "content": 'Reply with exactly this JSON: {"answer": "free"}'}],
    {
        "type": "object",
        "properties": {"answer": {"type": "string", "enum": ["bound"]}},
        "required": ["answer"],
        "additionalProperties": False,
    },
)


class ServerLLM:
    """An :class:`~localmem.models.protocols.LLM` (and :class:`Judge`, :class:`TokenCounter`)
    served over HTTP. :meth:`connect` checks the server and the model name before any call."""

    def __init__(
        self,
        url: str,
        name: str | None = None,
        *,
        api_key: str | None = None,
        key_env: str | None = None,
        timeout: float = DEFAULTS.llm_timeout,
        estimate: Callable[[str], int] = lambda text: len(text) // 4 + 1,
    ) -> None:
        self.transport = Transport(url, api_key=api_key, timeout=timeout, key_env=key_env)
        self.url = self.transport.url
        self.name = name
        self.key_env = key_env if api_key else None
        self.served: list[str] = []
        self.estimate = estimate  # token counts where the server has no tokenize endpoint
        self._lock = threading.Lock()
        self._form = 0  # index into FORMS: the best form not refused yet
        self._sampling: dict[str, Any] = {"repeat_penalty": 1.0}
        self._stream_usage = True  # ask streams for their token usage (OpenAI's stream_options)
        self._logprobs: bool | None = None  # does the server give top log probabilities? None: not asked yet
        self._tokenizer: tuple[str, str, Callable[[str, str], dict[str, Any]], str] | None = None
        self._token_offset = 0  # tokens the endpoint adds to any text (a BOS)
        self._tokenizer_probed = False
        self._counted: dict[str, int] = {}

    @property
    def model_id(self) -> str:
        return f"openai:{self.name}"

    def thread_safe(self) -> bool:
        return True

    def close(self) -> None:
        self.transport.close()

    # -- the model ---------------------------------------------------------------------------
    def connect(self) -> "ServerLLM":
        """Check that the server answers and serves the model; without a name, take the one it
        serves (several: the user must choose)."""
        try:
            listed = self.transport.get("/models")
        except Rejected as exc:
            if exc.status != 404 or not self.url.endswith("/v1"):
                raise  # a 404 below a URL without /v1 says to try /v1
            if self.name is None:
                raise ModelNotFoundError(
                    f"the model server at {self.url} does not list its models (no /models); "
                    "name the model with --llm-name (LOCALMEM_LLM_NAME)"
                ) from None
            return self  # a server without /models: the name is checked by the first call
        data = listed.get("data") if isinstance(listed, dict) else None
        self.served = [str(m.get("id")) for m in data or [] if isinstance(m, dict)]
        if self.name is None:
            if len(self.served) == 1:
                self.name = self.served[0]
                return self
            if self.served:
                raise ModelNotFoundError(
                    f"the model server at {self.url} serves several models ({_names(self.served)})",
                    "choose one with --llm-name (LOCALMEM_LLM_NAME)",
                )
            raise ModelNotFoundError(
                f"the model server at {self.url} serves no model; load one in the server, then re-run"
            )
        if self.name in self.served:
            return self
        if f"{self.name}:latest" in self.served:  # Ollama: a name without a tag means ":latest"
            self.name = f"{self.name}:latest"
            return self
        raise ModelNotFoundError(
            f"the model server at {self.url} has no model named {self.name!r}; it serves: "
            f"{_names(self.served) or 'nothing'}",
            "pass one of those with --llm-name (LOCALMEM_LLM_NAME)",
        )

    def complete_json(
        self,
        messages: Sequence[Message],
        schema: dict[str, Any],
        max_tokens: int,
        on_text: Callable[[str], None] | None = None,
    ) -> Completion:
        """One greedy chat completion, with the schema asked for in the best form the server
        accepts; ``on_text`` receives the reply as it streams."""
        started = time.perf_counter()
        while True:
            form = self._form
            body = {
                "model": self.name,
                "messages": [dict(m) for m in messages],
                "max_tokens": max_tokens,
                "temperature": 0,
                **self._sampling,
                **_response_format(FORMS[form], schema),
            }
            try:
                if on_text is None:
                    text, usage = _content(self.url, self.transport.post("/chat/completions", body))
                else:
                    text, usage = self._stream(body, on_text)
            except Rejected as exc:
                if self._give_up(exc, form):
                    raise
                continue
            if FORMS[form] in ("json_object", "text"):
                text = _unfenced(text)
            return Completion(
                text=text,
                prompt_tokens=int(usage.get("prompt_tokens") or 0),
                completion_tokens=int(usage.get("completion_tokens") or 0),
                seconds=time.perf_counter() - started,
            )

    def _stream(self, body: dict[str, Any], on_text: Callable[[str], None]) -> tuple[str, dict[str, Any]]:
        body = {**body, "stream": True}
        if self._stream_usage:
            body["stream_options"] = {"include_usage": True}
        pieces: list[str] = []
        usage: dict[str, Any] = {}
        for event in self.transport.events("/chat/completions", body):
            if not isinstance(event, dict):
                continue
            usage = event.get("usage") or usage
            for choice in event.get("choices") or []:
                piece = (choice.get("delta") or {}).get("content")
                if piece:
                    pieces.append(piece)
                    on_text(piece)
        if not usage:  # llama-cpp-python's server streams no usage: each piece is one token
            prompt = sum(self.count_tokens(m["content"]) for m in body["messages"])
            usage = {"prompt_tokens": prompt, "completion_tokens": len(pieces)}
        return "".join(pieces), usage

    def _give_up(self, exc: Rejected, form: int) -> bool:
        """Whether a refusal is final; else the refused part is dropped for good and the call
        is made again without it."""
        said = exc.detail.lower()
        if exc.status not in _REFUSED:
            return True
        with self._lock:
            if "repeat_penalty" in said and self._sampling:
                self._sampling = {}
                return False
            if "stream_options" in said and self._stream_usage:
                self._stream_usage = False
                return False
            if any(word in said for word in _FORM_WORDS) and form < len(FORMS) - 1:
                self._form = max(self._form, form + 1)
                return False
        return True

    @property
    def structured_output(self) -> str:
        """How a schema is asked for now (the form the server accepted last)."""
        return FORMS[self._form]

    # -- yes/no questions -------------------------------------------------------------------------
    def judge(self, prompts: Sequence[Sequence[Message]]) -> Judged:
        """P(yes) for each prompt: from the top log probabilities of the first reply token
        (the same ratio the in-process backend reads from its logits), else from the token."""
        out = Judged(p_yes=[])
        for messages in prompts:
            p_yes, prompt_tokens, cached = self._judge_one(messages)
            out.p_yes.append(p_yes)
            out.prompt_tokens += prompt_tokens
            out.prefilled += prompt_tokens - cached
        return out

    @property
    def judge_path(self) -> str:
        if self._logprobs is None:
            return "top log probabilities where the server returns them (not asked yet)"
        return "top log probabilities" if self._logprobs else "one generated token"

    def _judge_one(self, messages: Sequence[Message]) -> tuple[float, int, int]:
        while True:
            body = {
                "model": self.name,
                "messages": [dict(m) for m in messages],
                "max_tokens": 1,
                "temperature": 0,
                **self._sampling,
            }
            if self._logprobs is not False:
                body.update(logprobs=True, top_logprobs=JUDGE_TOP)
            try:
                reply = self.transport.post("/chat/completions", body)
            except Rejected as exc:
                said = exc.detail.lower()
                if exc.status in _REFUSED and "logprobs" in said and self._logprobs is not False:
                    self._logprobs = False
                    continue
                if exc.status in _REFUSED and "repeat_penalty" in said and self._sampling:
                    self._sampling = {}
                    continue
                raise
            break
        text, usage = _content(self.url, reply)
        choice = reply["choices"][0]
        content = ((choice.get("logprobs") or {}).get("content") or [{}])[0] or {}
        top = content.get("top_logprobs") or []
        if self._logprobs is None:
            self._logprobs = bool(top)  # LM Studio accepts the field and returns nothing
        yes = sum(math.exp(t["logprob"]) for t in top if _word(t) == "yes")
        no = sum(math.exp(t["logprob"]) for t in top if _word(t) == "no")
        if yes + no > 0:
            p_yes = yes / (yes + no)
        else:
            said = text.strip().lower()
            p_yes = 1.0 if said.startswith("yes") else 0.0 if said.startswith("no") else 0.5
        cached = int(((usage.get("prompt_tokens_details") or {}).get("cached_tokens")) or 0)
        return p_yes, int(usage.get("prompt_tokens") or 0), cached

    # -- tokens -----------------------------------------------------------------------------------
    def count_tokens(self, text: str) -> int:
        """The server's own count where it has a tokenize endpoint, else the local estimate.
        Counts are kept: an answer's budget counts the same evidence lines again and again."""
        tokenizer = self._find_tokenizer()
        if tokenizer is None:
            return self.estimate(text)
        known = self._counted.get(text)
        if known is None:
            _what, path, body, key = tokenizer
            known = max(
                0, len(self.transport.post(path, body(text, self.name or ""), root=True)[key]) - self._token_offset
            )
            if len(self._counted) >= _COUNTS_KEPT:
                self._counted.clear()
            self._counted[text] = known
        return known

    @property
    def token_counting(self) -> str:
        if not self._tokenizer_probed:
            return "not probed yet"
        if self._tokenizer is None:
            return "local estimate (about 4 characters a token): the server has no tokenize endpoint"
        return self._tokenizer[0]

    def _find_tokenizer(self) -> tuple[str, str, Callable[[str, str], dict[str, Any]], str] | None:
        with self._lock:
            if self._tokenizer_probed:
                return self._tokenizer
            for candidate in TOKENIZERS:
                _what, path, body, key = candidate
                try:
                    found = self.transport.post(path, body("hello world", self.name or ""), root=True)
                    empty = self.transport.post(path, body("", self.name or ""), root=True)
                except (Rejected, NotJson):
                    continue
                if (
                    isinstance(found, dict)
                    and isinstance(found.get(key), list)
                    and found[key]
                    and isinstance(empty, dict)
                    and isinstance(empty.get(key), list)
                ):
                    self._tokenizer, self._token_offset = candidate, len(empty[key])
                    break
            self._tokenizer_probed = True
            return self._tokenizer

    # -- doctor -----------------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        """Probe the server once, cheaply (a 16-token schema call, a one-token judge call and a
        tokenize call), and say which path each capability takes."""
        report: dict[str, Any] = {
            "url": self.url,
            "model": self.name,
            "served": _names(self.served) or "not listed",
            "api key": f"from ${self.key_env}" if self.key_env else "none",
        }
        try:
            done = self.complete_json(*_PROBE, max_tokens=16)
            try:
                enforced = json.loads(done.text) == {"answer": "bound"}
            except json.JSONDecodeError:
                enforced = False
            form = self.structured_output
            report["structured output"] = (
                f"response_format {form}, "
                + (
                    "enforced by the server"
                    if enforced
                    else "not enforced by the server: replies are validated and repaired"
                )
                if form != "text"
                else "none accepted: the prompt asks for JSON, replies are validated and repaired"
            )
            self.judge([[{"role": "user", "content": "Is water wet? Answer yes or no."}]])
            report["judge"] = self.judge_path
            self.count_tokens("hello world")
            report["token counting"] = self.token_counting
            report["status"] = "ok"
        except ModelServerError as exc:
            report["status"] = f"error: {exc}"
        return report


def _response_format(form: str, schema: dict[str, Any]) -> dict[str, Any]:
    if form == "json_schema":
        return {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "reply", "schema": schema, "strict": True},
            }
        }
    if form == "json_object+schema":
        return {"response_format": {"type": "json_object", "schema": schema}}
    if form == "json_object":
        return {"response_format": {"type": "json_object"}}
    return {}


def _content(url: str, reply: Any) -> tuple[str, dict[str, Any]]:
    """The reply's text and usage, or a one-line error when it is not a chat completion."""
    try:
        message = reply["choices"][0]["message"]
        text = message.get("content") or ""
    except (KeyError, IndexError, TypeError, AttributeError):
        raise ModelServerError(
            f"the model server at {url} sent something that is not a chat completion "
            f"({json.dumps(reply)[:200]!r}); is llm_url its OpenAI-compatible base URL?"
        ) from None
    return str(text), (reply.get("usage") or {}) if isinstance(reply, dict) else {}


def _unfenced(text: str) -> str:
    """JSON a model wrapped in a Markdown code fence, unwrapped (unconstrained replies only)."""
    stripped = text.strip()
    if stripped.startswith("```") and stripped.endswith("```"):
        inner = stripped[3:-3]
        return inner[inner.index("\n") + 1 :] if "\n" in inner else inner
    return text


def _word(entry: Any) -> str:
    return str(entry.get("token", "")).strip().lower() if isinstance(entry, dict) else ""


def _names(names: Sequence[str], shown: int = 8) -> str:
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")
