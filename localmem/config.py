"""Configuration: a frozen dataclass with named defaults.

The environment and the config file are read only by :meth:`Config.load`, which
the CLI calls at start-up; importing this module reads nothing.
Precedence for every setting: explicit argument (CLI flag) > ``LOCALMEM_*``
environment variable > config file (``config.toml`` in the user config dir) >
default.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import sys
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping

from .errors import ConfigError

APP_NAME = "localmem"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DEFAULT_NAMESPACE = "default"
DEFAULT_CONVERSATION = "default"  # of a message added without one

# -- every list of choices, once (the CLI's choices, the API's checks and the docs read these) --
EXTRACT_MODES = ("none", "llm")  # "none": raw messages only; "llm": episodes, facts, entities
# Stage 6 (predict–calibrate knowledge): "off", "fast" (one call per episode) or "full" (two).
CONSOLIDATE_MODES = ("off", "fast", "full")
ASK_MODES = ("fast", "agentic")
RERANK_MODES = ("auto", "none", "llm")  # auto: the configured cross-encoder, if any
# Input formats (localmem.importers.formats detects them; --format forces one). "slack" reads an
# export folder or .zip; a folder or .zip of anything else is read file by file.
FORMATS = ("locomo", "jsonl", "chat", "text", "chatgpt", "claude", "whatsapp", "slack", "discord", "notes")
# How a WhatsApp export's "01/02/2024" is read: decided per file from the values when "auto".
DATE_ORDERS = ("auto", "day-first", "month-first")
EVAL_SYSTEMS = ("localmem", "raw-hybrid", "full-context")  # localmem.benchmarks.baselines
# Search channels: the default set, and every one. Temporal fires only when the query names a
# time; with it no LoCoMo conv-26 category recalls less than raw-turn hybrid at k = 5, 10 or 20
# (without it, temporal R@20 did).
CHANNELS = ("vector", "bm25", "temporal")
ALL_CHANNELS = ("vector", "bm25", "graph", "temporal", "entity")

# -- defaults of the commands' own options ---------------------------------------------------
DEFAULT_K = 10  # search hits
DEFAULT_SEARCH_MAX_TOKENS = 2048  # search: whole hits kept in rank order while their text fits
DEFAULT_AGENT_STEPS = 4  # agentic ask: at most this many tool calls
MAX_AGENT_STEPS = 10
DEFAULT_LIST_LIMIT = 1000  # episodes, facts, entities: rows listed
DEFAULT_RECENT = 20  # Memory.recent and the MCP tool: the latest messages returned
# Below this many vectors of a kind a search scans them all exactly; above it, it first ranks
# binary codes (localmem.retrieval.vector_index), and `stats` reports which.
EXACT_BELOW = 20_000

# -- `localmem mcp` (localmem.mcp_server) ----------------------------------------------------
MCP_SERVER_NAME = "localmem"
DEFAULT_MCP_SPEAKER = "user"  # who said a message `remember` stores without a speaker
MAX_MCP_K = 50  # the most hits `search` returns to a model in one call
MAX_MCP_RECENT = 200  # the most messages `recent` returns in one call
# `ask` sends a progress notification at least this often (seconds) while the model works, so a
# client that resets its request timeout on progress does not give up during a first model load.
MCP_HEARTBEAT_SECONDS = 2.0
# ...and streams the answer text in progress messages at most this often.
MCP_TEXT_EVERY_SECONDS = 0.25
DEFAULT_CHANNEL_BUDGET = 50
# Reciprocal rank fusion's k. The usual 60 flattens ranks in lists of 50: a message 24th in
# both channels (1/84 + 1/88) beat the one BM25 ranked first (1/61), and the evidence budget
# then read the weak pair. With 2, a channel's first few hits lead and agreement still counts.
# LoCoMo dev split (385 answerable questions, no LLM): a gold message read for 70.9% of them
# at 60, 73.2% at 10, 75.1% at 2; the assistant dev half: 80.7% → 82.6%. Answered by the 1.5B
# model: LoCoMo dev F1 45.5 → 46.3 (conv-26/30/41: 44.0/49.1/45.0 → 47.1/48.8/44.2); the
# assistant dev half 23 → 25 of 51.
RRF_K = 2
DEFAULT_EMBED_BATCH = 32
DEFAULT_EMBED_MAX_TOKENS = 256
DEFAULT_INGEST_BATCH = 256
DEFAULT_BUSY_TIMEOUT_MS = 5000
MAX_MESSAGE_CHARS = 100_000
# An input file is read whole: a larger one is refused before it fills memory (chat exports
# are megabytes; parsing JSON takes several times the file's size in memory).
MAX_INPUT_BYTES = 512 * 2**20
# How deep an input's JSON may nest: exports nest under 10 levels; Python's parser fails near
# 1,000 (RecursionError), and the stored record is serialised again later.
MAX_JSON_DEPTH = 100
DEFAULT_N_CTX = 4096
# Extracted events the model itself gives P(yes) < this against their messages are dropped
# (0 turns the check off). 0.6 dropped only wrong facts on conv-26's 47 (see prompts/verify.py).
DEFAULT_VERIFY_FACTS = 0.6
# ask: candidates searched, and the evidence tokens given to the model. Prefill of what is
# not the cached prefix is most of an answer's time (~78 tokens/s for the 1.5B model on 2
# cores): 400 tokens gave a p50 of 9.5 s on conv-26. On the LoCoMo dev quarter, 200 tokens with
# long messages excerpted above 40 tokens answered in a p50 of 6.8 s against 9.9 s for 320 and
# 80, with F1 44.4 against 45.5: a message's matching sentences carry most of what it adds.
DEFAULT_ASK_CANDIDATES = 30
DEFAULT_ASK_MAX_TOKENS = 200
# What fast-mode answers read: "messages" shows each gist or fact as the messages it rests
# on (the model answers in the speakers' own words), "units" shows the units' text.
DEFAULT_ASK_EVIDENCE = "messages"
ASK_EVIDENCE = ("messages", "units")  # the choices
# A question about one speaker is answered from what they said and what is said about them
# (answer.focus); off gives the model everything the search found.
DEFAULT_ASK_FOCUS = True
# A question about one speaker that only someone else's messages answer, and an answer about
# one speaker whose words come from someone else's messages, are refused
# (answer.asks_about_someone_else, answer.about_someone_else); off keeps the model's answer.
DEFAULT_ASK_CHECK = True
# A relative time in a message the model reads is followed by what it means on the message's
# date: "yesterday [7 May 2023]", "last week [the week before 9 June 2023]" (times.with_dates).
# The 1.5B model mostly answered with the message's own date instead of counting back.
DEFAULT_ASK_DATES = True
# A message longer than this (the model's tokens) is given to the model as its sentences that
# match the question, with their neighbours (answer.excerpts); 0 shows every message whole.
DEFAULT_ASK_LONG_TOKENS = 40
# Before a fast-mode answer is returned, the model's P(yes) that the cited evidence states it
# (a yes/no judge, nothing generated); under this, other evidence items are tried as its
# support, and without one that passes the answer is refused. 0 turns the check off.
# Off by default: asked as the next turn of the answer's conversation (check-v1), the 1.5B model
# gave its own answers P(yes) 0.58-0.72 whether they were right or wrong (LoCoMo dev quarter,
# 97 answers: median 0.67 right, 0.66 wrong; assistant dev: 0.65 and 0.66), so no threshold
# separated them, and it cost ~1.0 s an answer.
DEFAULT_ASK_VERIFY = 0.0
# A question about the present ("now", "currently", "these days", "where do I work?") gets the
# newest of its this-many best hits first (search and ask); 0 keeps the ranking as it is.
DEFAULT_PRESENT_FIRST = 5
DEFAULT_CONSOLIDATE = "off"
DEFAULT_EXTRACT = "none"
# Import: a time that names its zone (epoch seconds in ChatGPT and Slack exports, "Z" in Claude's,
# offsets in Discord's) is stored in this zone, as the wall-clock time the user lived it, so that
# "on Friday" means their Friday; "local" is this machine's zone. Times without a zone (WhatsApp,
# notes, transcripts) are already someone's wall-clock time and are stored as written.
DEFAULT_TIMEZONE = "local"
DEFAULT_NOTES_AUTHOR = "me"  # the speaker of a note whose front matter names no author
DEFAULT_DATE_ORDER = "auto"
# A note longer than this is split at its headings: the embedder reads embed_max_tokens (256)
# tokens, and English prose measured 3.4-3.7 characters per token (README, sample chat), so
# about 900 characters is what one vector still covers.
NOTE_SPLIT_CHARS = 900
# The backend of each model role (see localmem.models.factory): "auto" is an OpenAI-compatible
# model server when llm_url is set, else llama.cpp in-process; onnxruntime for the embedder and a
# user-supplied cross-encoder.
DEFAULT_LLM_BACKEND = "auto"
LLM_BACKENDS_AUTO = ("openai", "llama")  # what "auto" becomes: with llm_url, without
# A model server (llm_url): how long one call may take. Generous, because a CPU server's
# extraction call takes over a minute (75 s for the 1.5B model on 2 cores) and calls from other
# workers queue before it; a server that is down is found at once (connection refused).
DEFAULT_LLM_TIMEOUT = 600.0
# Episodes whose model calls (extraction and its fact check) run at once against a server;
# the in-process model always takes one call at a time.
DEFAULT_LLM_WORKERS = 1
DEFAULT_EMBED_BACKEND = "onnx"
DEFAULT_RERANK_BACKEND = "onnx"


def user_data_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def user_config_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False))


def user_cache_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False))


def home_dir() -> Path | None:
    """``LOCALMEM_HOME`` overrides every platformdirs location (tests, portable installs)."""
    home = os.environ.get("LOCALMEM_HOME")
    return Path(home) if home else None


def default_db_path() -> Path:
    home = home_dir()
    return (home if home else user_data_dir()) / "memory.db"


def config_file_path() -> Path:
    home = home_dir()
    return (home if home else user_config_dir()) / "config.toml"


@dataclass(frozen=True)
class Config:
    """Every tunable of a :class:`~localmem.memory.Memory`.

    ``embed_model``/``embed_tokenizer`` name a user-supplied ONNX embedder; when
    both are ``None`` the packaged default (all-MiniLM-L6-v2 int8) is used.
    """

    db_path: Path | None = None
    namespace: str = DEFAULT_NAMESPACE
    embed_model: Path | None = None
    embed_tokenizer: Path | None = None
    embed_batch: int = DEFAULT_EMBED_BATCH
    embed_max_tokens: int = DEFAULT_EMBED_MAX_TOKENS
    ingest_batch: int = DEFAULT_INGEST_BATCH
    busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS
    max_message_chars: int = MAX_MESSAGE_CHARS
    max_input_bytes: int = MAX_INPUT_BYTES
    rrf_k: int = RRF_K
    channel_budget: int = DEFAULT_CHANNEL_BUDGET
    onnx_threads: int = 0  # 0: let onnxruntime decide
    extract: str = DEFAULT_EXTRACT  # one of EXTRACT_MODES
    llm_model: str | None = None  # a GGUF path or a model manifest id; None: installed default
    chat_format: str | None = None  # None: from the model manifest or the GGUF metadata
    n_ctx: int = DEFAULT_N_CTX
    n_threads: int = 0  # 0: all cores
    n_gpu_layers: int = 0  # -1 offloads every layer when llama.cpp was built with a GPU backend
    # llama.cpp's fused attention: ~7% faster prefill on 2 CPU cores (1.5B), but greedy output
    # then depends on how the prompt was split (a cached prefix or not): off, for repeatable answers.
    flash_attn: bool = False
    ask_candidates: int = DEFAULT_ASK_CANDIDATES
    ask_max_tokens: int = DEFAULT_ASK_MAX_TOKENS
    ask_evidence: str = DEFAULT_ASK_EVIDENCE
    ask_focus: bool = DEFAULT_ASK_FOCUS
    ask_check: bool = DEFAULT_ASK_CHECK
    ask_dates: bool = DEFAULT_ASK_DATES
    ask_long_tokens: int = DEFAULT_ASK_LONG_TOKENS
    ask_verify: float = DEFAULT_ASK_VERIFY
    present_first: int = DEFAULT_PRESENT_FIRST
    # The user's name in a user–assistant chat: evidence and answers say it instead of "user",
    # and the user goes by it in questions ("Where does Sam work?" as well as "Where do I work?").
    user_name: str | None = None
    consolidate: str = DEFAULT_CONSOLIDATE
    verify_facts: float = DEFAULT_VERIFY_FACTS  # yes/no check of each fact; 0: off
    rerank_model: Path | None = None  # a cross-encoder ONNX file; None: no reranking
    rerank_tokenizer: Path | None = None  # its tokenizer.json
    llm_backend: str = DEFAULT_LLM_BACKEND  # "auto", "llama", "openai" or a registered one
    llm_url: str | None = None  # an OpenAI-compatible server, e.g. http://127.0.0.1:11434/v1
    llm_name: str | None = None  # the model the server is asked for; None: the one it serves
    llm_api_key_env: str | None = None  # the environment variable holding the server's API key
    llm_timeout: float = DEFAULT_LLM_TIMEOUT
    llm_workers: int = DEFAULT_LLM_WORKERS
    embed_backend: str = DEFAULT_EMBED_BACKEND
    rerank_backend: str = DEFAULT_RERANK_BACKEND
    timezone: str = DEFAULT_TIMEZONE  # "local", "UTC" or an IANA name
    notes_author: str = DEFAULT_NOTES_AUTHOR
    date_order: str = DEFAULT_DATE_ORDER  # one of DATE_ORDERS
    # The name of the environment variable holding the store's passphrase (never the passphrase:
    # a command-line argument shows in the process list, a config file is read by anyone who can
    # read it). None: the store is not encrypted.
    key_env: str | None = None

    # Where each model setting came from ("flag", "env", "config", "default"), for `doctor`.
    origins: tuple[tuple[str, str], ...] = ()

    def origin(self, name: str) -> str:
        return dict(self.origins).get(name, "default")

    @classmethod
    def load(
        cls,
        overrides: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
        config_file: Path | None = None,
    ) -> "Config":
        """Build a config from flags (``overrides``), ``LOCALMEM_*`` env vars and the config file."""
        env = os.environ if env is None else env
        path = config_file if config_file is not None else config_file_path()
        file_values = _read_config_file(path)
        known = {f.name: f for f in fields(cls) if f.name != "origins"}
        values: dict[str, Any] = {}
        origins: dict[str, str] = {}
        for name in known:
            if overrides and overrides.get(name) is not None:
                values[name], origins[name] = overrides[name], "flag"
            elif f"LOCALMEM_{name.upper()}" in env and env[f"LOCALMEM_{name.upper()}"] != "":
                values[name], origins[name] = env[f"LOCALMEM_{name.upper()}"], "env"
            elif name in file_values:
                values[name], origins[name] = file_values[name], f"config ({path})"
        unknown = set(file_values) - set(known)
        if unknown:
            raise ConfigError(f"{path}: unknown setting(s) {', '.join(sorted(unknown))}")
        cfg = cls()
        coerced = {name: _coerce(name, getattr(cfg, name), value) for name, value in values.items()}
        return replace(cfg, **coerced, origins=tuple(sorted(origins.items())))

    def resolved_db_path(self) -> Path:
        return Path(self.db_path) if self.db_path else default_db_path()

    def key(self, env: Mapping[str, str] | None = None) -> "Key | None":
        """The passphrase in the environment variable ``key_env`` names (``None`` without one)."""
        return read_key(self.key_env, env) if self.key_env else None


@dataclass(frozen=True)
class Key:
    """A store's passphrase and where it came from (``source``, said in errors). Its repr and
    str never show the passphrase, so a traceback, a log line or a printed object cannot leak it."""

    secret: str = field(repr=False)
    source: str = "the key given to Memory"

    def __post_init__(self) -> None:
        if not isinstance(self.secret, str) or not self.secret:
            raise ConfigError(f"{self.source} is empty; a store's passphrase must be a non-empty string")

    def __str__(self) -> str:
        return f"<passphrase: {self.source}>"


def read_key(var: str, env: Mapping[str, str] | None = None) -> Key:
    """The passphrase in the environment variable ``var``; a :class:`ConfigError` (naming the
    variable, never a value) if it is unset or empty."""
    _check_var_name(var)
    value = (os.environ if env is None else env).get(var)
    if not value:
        said = "is empty" if value == "" else "is not set"
        raise ConfigError(
            f"the key environment variable {var} {said}; export {var} with the store's "
            "passphrase (--key-env and LOCALMEM_KEY_ENV name the variable, never the passphrase)"
        )
    return Key(value, f"the passphrase in ${var}")


def _check_var_name(var: str) -> None:
    # Not echoed: a passphrase given by mistake where the variable's name goes must not be printed.
    if not isinstance(var, str) or not _ENV_NAME.fullmatch(var):
        raise ConfigError(
            "key_env must be the name of an environment variable (letters, digits and _), not the passphrase itself"
        )


def as_key(key: "str | Key | None") -> Key | None:
    """A passphrase given to the API (a string or a :class:`Key`) as a :class:`Key`."""
    return key if key is None or isinstance(key, Key) else Key(key)


def _read_config_file(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc}") from exc
    return data


def _coerce(name: str, default: Any, value: Any) -> Any:
    if name in ("db_path", "embed_model", "embed_tokenizer", "rerank_model", "rerank_tokenizer"):
        return Path(os.path.expanduser(str(value)))
    if name == "key_env":
        _check_var_name(str(value))
        return str(value)
    if name == "llm_model":
        return os.path.expanduser(str(value))
    if name == "consolidate" and str(value) not in CONSOLIDATE_MODES:
        raise ConfigError(f"setting consolidate must be one of {', '.join(CONSOLIDATE_MODES)}, got {value!r}")
    if name == "ask_evidence" and str(value) not in ASK_EVIDENCE:
        raise ConfigError(f"setting ask_evidence must be one of {', '.join(ASK_EVIDENCE)}, got {value!r}")
    if name == "date_order" and str(value) not in DATE_ORDERS:
        raise ConfigError(f"setting date_order must be one of {', '.join(DATE_ORDERS)}, got {value!r}")
    if name == "timezone":
        try:
            zone(str(value))
        except ValueError as exc:
            raise ConfigError(f"setting timezone: {exc}") from exc
    if name == "llm_url":
        url = str(value).strip().rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise ConfigError(
                f"setting llm_url must be an http:// or https:// URL (the server's "
                f"OpenAI-compatible base, e.g. http://127.0.0.1:11434/v1), got {value!r}"
            )
        return url
    if name == "llm_workers" and _coerce("n", 0, value) < 1:
        raise ConfigError(f"setting llm_workers must be at least 1, got {value!r}")
    if name == "llm_timeout" and _coerce("n", 0.0, value) <= 0:
        raise ConfigError(f"setting llm_timeout must be a positive number of seconds, got {value!r}")
    if name == "extract" and str(value) not in EXTRACT_MODES:
        raise ConfigError(f"setting extract must be one of {', '.join(EXTRACT_MODES)}, got {value!r}")
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        said = str(value).strip().lower()
        if said not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
            raise ConfigError(f"setting {name} must be true or false, got {value!r}")
        return said in ("1", "true", "yes", "on")
    if isinstance(default, int) and not isinstance(default, bool):
        try:
            return int(value)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"setting {name} must be an integer, got {value!r}") from exc
    if isinstance(default, float):
        try:
            return float(value)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"setting {name} must be a number, got {value!r}") from exc
    return str(value) if isinstance(default, str) or default is None else value


def zone(name: str) -> dt.tzinfo | None:
    """The time zone a setting names: ``"local"`` (this machine's, ``None``), ``"UTC"`` or an
    IANA name such as ``"Europe/Berlin"``; raises ``ValueError`` for an unknown name."""
    if name.lower() == "local":
        return None
    if name.upper() in ("UTC", "Z"):
        return dt.timezone.utc
    import zoneinfo

    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {name!r} (use 'local', 'UTC' or a name such as 'Europe/Berlin')") from exc
