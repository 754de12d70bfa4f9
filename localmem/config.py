"""Configuration: every setting declared once, as a field of the frozen :class:`Config`.

A field made with :func:`setting` is a setting: its name, type and default are the field's,
and the declaration adds its help text, choices, CLI flag and validator. Parsing (flags,
``LOCALMEM_*`` environment variables, ``config.toml``), the CLI's help and
docs/configuration.md are all read from :func:`settings`. Why a default is what it is, with
the measurement behind it: docs/decisions.md.

The environment and the config file are read only by :meth:`Config.load`, which
the CLI calls at start-up; importing this module reads nothing.
Precedence for every setting: explicit argument (CLI flag) > ``LOCALMEM_*``
environment variable > config file (``config.toml`` in the user config dir) >
default.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import re
import sys
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping, Union

from .errors import ConfigError, LocalmemError
from .redact import redact

APP_NAME = "localmem"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DEFAULT_CONVERSATION = "default"  # of a message added without one
# The longest namespace name: a name, kept in every row and in the indexes beside other names (a
# PostgreSQL index entry holds at most 2,704 bytes: a 2.7 KB name failed there as a server fault).
MAX_NAMESPACE_CHARS = 200

# -- every list of choices, once (the CLI's choices, the API's checks and the docs read these) --
EXTRACT_MODES = ("none", "llm")  # "none": raw messages only; "llm": episodes, facts, entities
# Stage 6 (predict–calibrate knowledge): "off", "fast" (one call per episode) or "full" (two).
CONSOLIDATE_MODES = ("off", "fast", "full")
ASK_MODES = ("fast", "agentic")
# The kinds of question localmem.answer.tally works out (localmem.answer.question.KINDS).
TALLY_KINDS = ("count", "sum", "current", "before", "at")
ASK_EVIDENCE = ("messages", "units")  # what fast-mode answers read (setting ask_evidence)
# The rules of the answer stage, in the order they run (localmem.answer.rules; docs/answering.md):
# any of them can be turned off by name (setting ask_rules_off).
ANSWER_RULES = (
    "asks_about_someone_else",
    "refusal_phrases",
    "absolute_dates",
    "someone_else",
    "image_description",
    "no_citation",
    "date_arithmetic",
    "cite_statement",
)
RERANK_MODES = ("auto", "none", "llm")  # auto: the configured cross-encoder, if any
# Input formats (localmem.importers.formats detects them; --format forces one). "slack" reads an
# export folder or .zip; a folder or .zip of anything else is read file by file.
FORMATS = ("locomo", "jsonl", "chat", "text", "chatgpt", "claude", "whatsapp", "slack", "discord", "notes")
# How a WhatsApp export's "01/02/2024" is read: decided per file from the values when "auto".
DATE_ORDERS = ("auto", "day-first", "month-first")
# Which messages get a context part (the message embedded after the turn before it in its
# session): every one that has such a turn, only replies to a turn asking something (a "?"), or
# none. Why "questions" is the default: docs/decisions.md#context-parts.
CONTEXT_PARTS = ("all", "questions", "none")
EVAL_SYSTEMS = ("localmem", "raw-hybrid", "full-context")  # localmem_bench.baselines
# Search channels: the default set, and every one. Temporal fires only when the query names a
# time (why it is in the default set: docs/decisions.md#temporal-channel).
CHANNELS = ("vector", "bm25", "temporal")
ALL_CHANNELS = ("vector", "bm25", "graph", "temporal", "entity")
# Context fusion (retrieval.search.context_fusion): a message gains this × its session's score
# (the sum of the session's best 3 fused scores): docs/decisions.md#session-weight. The turns
# next to a message add nothing by default: docs/decisions.md#neighbours-off.
SESSION_DEFAULT = 0.1
# A question naming one speaker: their messages' scores × (1 + this); it changes search only, not
# ask's prompt (docs/decisions.md#speaker-weight).
SPEAKER_WEIGHT = 0.5
# A question naming a time ("on 25 May 2022", "in July"): the messages said then have their
# fused scores × (1 + this): on by default (retrieval.search.time_fusion;
# docs/decisions.md#session-weight).
RANGE_WEIGHT = 1.0
# On by default (retrieval.search.question_handoff; docs/decisions.md#question-handoff): a message hands this share of
# its fused score, × the share of it that asks, to the turn after it. 1.0: a question keeps only
# what it says besides asking; its answer gains the rest.
QUESTION_HANDOFF = 1.0
# A question asking when: the messages that say a time ("last Friday", "in 2019") count double
# (× 1 + this; retrieval.search.saying_when).
WHEN_WEIGHT = 1.0
LLM_BACKENDS_AUTO = ("openai", "llama")  # what llm_backend "auto" becomes: with llm_url, without


def check_choice(what: str, value: str, choices: tuple[str, ...]) -> str:
    """``value`` when it is one of ``choices``; else a :class:`~localmem.errors.LocalmemError`
    naming ``what`` (the option, e.g. ``--extract``) and the choices."""
    if value not in choices:
        raise LocalmemError(f"{what} {value} is unknown", f"use one of: {', '.join(choices)}")
    return value


# -- defaults of the commands' own options (not settings) -------------------------------------
DEFAULT_K = 10  # search hits
DEFAULT_SEARCH_MAX_TOKENS = 2048  # search: whole hits kept in rank order while their text fits
DEFAULT_AGENT_STEPS = 4  # agentic ask: at most this many tool calls
MAX_AGENT_STEPS = 10
DEFAULT_LIST_LIMIT = 1000  # episodes, facts, entities: rows listed
DEFAULT_RECENT = 20  # Memory.recent and the MCP tool: the latest messages returned
# Below this many vectors of a kind a search scans them all exactly; above it, it first ranks
# binary codes (localmem.retrieval.vector_index), and `stats` reports which.
EXACT_BELOW = 20_000
# How deep an input's JSON may nest: exports nest under 10 levels; Python's parser fails near
# 1,000 (RecursionError), and the stored record is serialised again later.
MAX_JSON_DEPTH = 100
# A note longer than this is split at its headings: about what one vector covers (docs/decisions.md#note-split).
NOTE_SPLIT_CHARS = 900

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


def user_data_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def user_config_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False))


def user_cache_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False))


def runtime_dir() -> Path:
    """Where a running ``localmem serve`` leaves its discovery file: ``$LOCALMEM_HOME/run``,
    ``$XDG_RUNTIME_DIR/localmem`` (memory-backed, private to the user), else ``run`` in the
    user cache dir; never a shared temporary dir, where another user could create it first."""
    home = home_dir()
    if home:
        return home / "run"
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / APP_NAME
    return user_cache_dir() / "run"


def home_dir() -> Path | None:
    """``LOCALMEM_HOME`` overrides every platformdirs location (tests, portable installs)."""
    home = os.environ.get("LOCALMEM_HOME")
    return Path(home) if home else None


# -- where a store lives: a file path (SQLite) or a postgresql:// URL (PostgreSQL) --------------
_URL_SCHEMES = ("postgresql://", "postgres://")


@dataclass(frozen=True)
class StoreURL:
    """A server store's connection URL (libpq's URI syntax: ``postgresql://`` or ``postgres://``).

    A store's location is this or a :class:`~pathlib.Path` (:data:`StoreLocation`); ``str()`` of
    it is the URL as given (password included: for connecting, never for showing; :meth:`redacted`
    is for showing)."""

    url: str

    def __str__(self) -> str:
        return self.url

    @property
    def name(self) -> str:
        """The database's name (the URL's last path segment)."""
        return self.url.rsplit("/", 1)[-1].split("?", 1)[0] or "postgres"

    def describe(self) -> str:
        """What kind of store this is, in words."""
        return "PostgreSQL database"

    def exists(self) -> bool:
        """A server is asked when the store opens; as a location it always 'exists'."""
        return True

    def redacted(self) -> str:
        """The URL without its password, for messages and listings (:func:`~localmem.redact.redact`)."""
        return redact(self.url)

    def identity(self) -> tuple[str, int, int]:
        """The store as messages name it, 0, and a number made from the URL without its password
        (one database, named by one URL): what a file's path, device and inode are to a file."""
        import hashlib

        from .redact import HIDDEN

        shown = self.redacted()
        # Keyed as before redact() said "user:***@": the same database with or without a
        # password in its URL is one store.
        key = shown.replace(f":{HIDDEN}@", "@", 1)
        return shown, 0, int(hashlib.sha256(key.encode()).hexdigest()[:15], 16)


StoreLocation = Union[Path, StoreURL]
"""Where a store is: its file, or its server's URL."""


def as_location(target: "str | Path | StoreURL") -> StoreLocation:
    """``target`` as a store location: a :class:`StoreURL` for a URL given as text, else a path."""
    if isinstance(target, (StoreURL, Path)):
        return target
    return StoreURL(target) if target.startswith(_URL_SCHEMES) else Path(target)


def describe(location: StoreLocation | str) -> str:
    """What kind of store ``location`` (or its text, as a report shows it) names: "file" or the URL's kind."""
    found = as_location(location)
    return found.describe() if isinstance(found, StoreURL) else "file"


def default_db_path() -> Path:
    home = home_dir()
    return (home if home else user_data_dir()) / "memory.db"


def config_file_path() -> Path:
    home = home_dir()
    return (home if home else user_config_dir()) / "config.toml"


# -- declaring a setting ------------------------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """One setting, as :func:`settings` reads it from its :class:`Config` field.

    ``kind`` is the field's type without ``None`` (``optional`` says whether ``None`` is a
    value); ``flags`` the CLI option that sets it (``everywhere``: a global option, accepted
    before or after any command, else an option of the commands that use it); ``check`` a
    validator run on the parsed value, which returns the value to keep and raises
    ``ValueError`` ("must be …", or what is wrong) or :class:`ConfigError` (said as it is);
    ``shown`` how the default is said when not as its value."""

    name: str
    default: Any
    kind: type
    optional: bool
    help: str
    choices: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    everywhere: bool = False
    metavar: str | None = None
    check: Callable[[Any], Any] | None = None
    shown: str | None = None
    env_var: str | None = None  # the variable's name when not LOCALMEM_<NAME>
    env_aliases: tuple[str, ...] = ()  # older names of the variable, still read

    @property
    def env(self) -> str:
        """The environment variable that sets it."""
        return self.env_var or f"LOCALMEM_{self.name.upper()}"

    def env_said(self, quote: str = "") -> str:
        """Its variable as help and docs name it, with its older names."""
        older = " or ".join(f"{quote}{a}{quote}" for a in self.env_aliases)
        return f"{quote}{self.env}{quote}" + (f" (or {older})" if older else "")

    def from_env(self, env: Mapping[str, str]) -> str | None:
        """Its value in ``env`` (an empty variable is unset), under its name or an older one;
        a :class:`ConfigError` when two of them are set to different values."""
        given = {var: env[var] for var in (self.env, *self.env_aliases) if env.get(var, "") != ""}
        if not given:
            return None
        if len({self.parse(raw) for raw in given.values()}) > 1:
            # The values are not echoed: a store's URL may hold a password.
            raise ConfigError(
                f"{' and '.join(given)} are both set, to different values; unset one "
                f"({', '.join(self.env_aliases)} is the older name of {self.env})"
            )
        return next(iter(given.values()))

    def shown_default(self) -> str:
        """The default as docs and help say it."""
        if self.shown is not None:
            return self.shown
        if self.default is None:
            return "none"
        return str(self.default).lower() if isinstance(self.default, bool) else str(self.default)

    def parse(self, value: Any) -> Any:
        """``value`` (a flag's, an environment variable's string or a TOML value) as this
        setting's type, checked; a :class:`ConfigError` that names the setting otherwise."""
        try:
            parsed = self._as_kind(value)
            if self.choices and parsed not in self.choices:
                raise ValueError(f"must be one of {', '.join(self.choices)}")
            return self.check(parsed) if self.check else parsed
        except ConfigError:
            raise
        except (TypeError, ValueError) as exc:
            reason = str(exc)
            said = f" {reason}, got {value!r}" if reason.startswith("must") else f": {reason}"
            raise ConfigError(f"setting {self.name}{said}") from None

    def _as_kind(self, value: Any) -> Any:
        if self.kind is Path:
            found = as_location(value if isinstance(value, (Path, StoreURL)) else str(value))
            if isinstance(found, StoreURL):  # a store's URL (only db_path takes one; see Memory)
                return found
            return Path(os.path.expanduser(str(value)))
        if self.kind is bool:
            if isinstance(value, bool):
                return value
            said = str(value).strip().lower()
            if said not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                raise ValueError("must be true or false")
            return said in ("1", "true", "yes", "on")
        if self.kind is int:
            try:
                return int(value)
            except (TypeError, ValueError):
                raise ValueError("must be an integer") from None
        if self.kind is float:
            try:
                return float(value)
            except (TypeError, ValueError):
                raise ValueError("must be a number") from None
        return str(value)


def setting(
    default: Any,
    help: str,
    *,
    choices: tuple[str, ...] = (),
    flags: tuple[str, ...] = (),
    everywhere: bool = False,
    metavar: str | None = None,
    check: Callable[[Any], Any] | None = None,
    shown: str | None = None,
    env_var: str | None = None,
    env_aliases: tuple[str, ...] = (),
) -> Any:
    """Declare a :class:`Config` field as a setting (see :class:`Setting` for the arguments)."""
    spec = {
        "help": help,
        "choices": choices,
        "flags": flags,
        "everywhere": everywhere,
        "metavar": metavar,
        "check": check,
        "shown": shown,
        "env_var": env_var,
        "env_aliases": env_aliases,
    }
    return field(default=default, metadata={"setting": spec})


# -- validators ----------------------------------------------------------------------------------


def _at_least(low: int) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if value < low:
            raise ValueError(f"must be at least {low}")
        return value

    return check


def _between(low: int, high: int) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if not low <= value <= high:
            raise ValueError(f"must be between {low} and {high}")
        return value

    return check


def _positive_seconds(value: float) -> float:
    if value <= 0:
        raise ValueError("must be a positive number of seconds")
    return value


def _home(value: str) -> str:  # a GGUF path may start with ~ (a model id passes unchanged)
    return os.path.expanduser(value)


def _server_url(value: str) -> str:
    url = value.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ValueError(
            "must be an http:// or https:// URL (the server's OpenAI-compatible base, e.g. http://127.0.0.1:11434/v1)"
        )
    return url


def _kind_names(value: str) -> str:  # kinds separated by commas, each one of TALLY_KINDS, or "none"
    unknown = [n for n in _names_in(value) if n not in (*TALLY_KINDS, "none")]
    if unknown:
        raise ValueError(f"no question kind {', '.join(unknown)}; the kinds: {', '.join(TALLY_KINDS)}, or none")
    return value


def _rule_names(value: str) -> str:  # names separated by commas, each one of ANSWER_RULES
    unknown = [n for n in _names_in(value) if n not in ANSWER_RULES]
    if unknown:
        raise ValueError(f"no rule named {', '.join(unknown)}; the rules: {', '.join(ANSWER_RULES)}")
    return value


def _names_in(value: str) -> list[str]:
    return [n.strip() for n in value.split(",") if n.strip()]


def _var_name(value: str) -> str:
    _check_var_name(value)
    return value


def _token_var_name(value: str) -> str:
    # Not echoed, as for key_env: a token given by mistake where the variable's name goes.
    if not isinstance(value, str) or not _ENV_NAME.fullmatch(value):
        raise ConfigError(
            "setting serve_token_env must be the name of an environment variable (letters, digits and _), "
            "not the token itself"
        )
    return value


def _zone_name(value: str) -> str:
    zone(value)
    return value


# -- the settings ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    """Every tunable of a :class:`~localmem.memory.Memory`: each field but ``origins`` is a
    setting (see :func:`settings`; docs/configuration.md lists them)."""

    # LOCALMEM_DB, as the store is named (a file or a URL); LOCALMEM_DB_PATH, the setting's
    # first variable, still works.
    db_path: StoreLocation | None = setting(
        None,
        "The store: a file, or a postgresql:// URL (docs/postgres.md).",
        flags=("--db",),
        everywhere=True,
        shown="memory.db in the user data dir",
        env_var="LOCALMEM_DB",
        env_aliases=("LOCALMEM_DB_PATH",),
    )
    namespace: str = setting("default", "The namespace commands work in.", flags=("--namespace", "-n"), everywhere=True)
    embed_model: Path | None = setting(
        None,
        "A custom ONNX embedder (with embed_tokenizer); none: the packaged all-MiniLM-L6-v2 int8.",
        flags=("--embed-model",),
        everywhere=True,
    )
    embed_tokenizer: Path | None = setting(
        None, "The tokenizer.json of the custom embedder.", flags=("--embed-tokenizer",), everywhere=True
    )
    embed_batch: int = setting(32, "Texts embedded per batch.")
    embed_max_tokens: int = setting(256, "Tokens an embedded text is cut to.")
    ingest_batch: int = setting(256, "Messages written per transaction on ingest.")
    # questions: a reply to a question is what means little without the turn before ("Scout!"),
    # and it is a third of the extra embedding that "all" costs for the same recall (docs/recall.md).
    context_parts: str = setting(
        "questions",
        "Which messages are also embedded after the turn before them: all, questions (only replies "
        "to a question: less embedding on ingest) or none; a change applies to what is stored next "
        "(reembed: to everything).",
        choices=CONTEXT_PARTS,
    )
    busy_timeout_ms: int = setting(5000, "How long (ms) a writer waits for another one.")
    max_message_chars: int = setting(100_000, "The longest message accepted.")
    max_input_bytes: int = setting(
        512 * 2**20, "The largest input file read (512 MiB); a FIFO, a device or a socket is refused."
    )
    rrf_k: int = setting(2, "Reciprocal rank fusion's k.")  # not 60: a channel's first hits lead (docs/decisions.md)
    channel_budget: int = setting(50, "Candidates each search channel produces.", flags=("--budget",))
    onnx_threads: int = setting(0, "onnxruntime threads (0: its choice).")
    extract: str = setting(
        "none",
        "'none' stores and indexes raw messages only; 'llm' also builds episodes, facts and entities "
        "with the local LLM.",
        choices=EXTRACT_MODES,
        flags=("--extract",),
    )
    llm_model: str | None = setting(
        None,
        "A GGUF file or model id for extraction and answers; none: the installed default.",
        flags=("--llm-model",),
        everywhere=True,
        check=_home,
    )
    chat_format: str | None = setting(None, "llama.cpp's chat format; none: from the model manifest or the GGUF.")
    n_ctx: int = setting(4096, "The LLM's context window (tokens).")
    n_threads: int = setting(0, "llama.cpp threads (0: all cores).")
    n_gpu_layers: int = setting(0, "Layers offloaded with a CUDA/Metal/Vulkan build of llama-cpp-python (-1: all).")
    # Off for repeatable answers (docs/decisions.md).
    flash_attn: bool = setting(
        False,
        "llama.cpp's fused attention: faster prefill on CPU, but greedy answers then depend on "
        "what the prompt cache held.",
    )
    # The evidence budget is most of an answer's time (prefill); measured in docs/decisions.md.
    ask_candidates: int = setting(30, "Hits an answer's search returns before the evidence budget is applied.")
    ask_max_tokens: int = setting(200, "Evidence tokens given to the model.", flags=("--max-tokens",))
    ask_evidence: str = setting(
        "messages",
        "'messages': a gist or fact is shown to the model as the messages it rests on (it answers in "
        "the speakers' own words); 'units': as itself.",
        choices=ASK_EVIDENCE,
    )
    ask_focus: bool = setting(
        True, "A question about one speaker is answered from what they said and what is said of them."
    )
    ask_dates: bool = setting(
        True,
        "A relative time in a message the model reads is followed by the date it means ('yesterday [7 May 2023]').",
    )
    # 25, not 40: a long message's matching sentences leave room for one more item (docs/recall.md).
    ask_long_tokens: int = setting(
        25,
        "A message longer than this (tokens) is given to the model as its sentences that match "
        "the question, with their neighbours; 0 shows every message whole.",
    )
    # Off by default: on the assistant dev half the listing got counts and current values wrong
    # that the answer call got right, and a sum took about 14 times a plain ask (docs/timeq.md).
    ask_tally: str = setting(
        "none",
        "The kinds of question worked out by code from a list the model makes of the evidence, "
        "comma-separated: " + ", ".join(TALLY_KINDS) + " ('none': every question goes to the answer call).",
        check=_kind_names,
    )
    ask_tally_tokens: int = setting(
        400,
        "Evidence tokens for a count or sum question, one message per session first (0: as ask_max_tokens).",
    )
    ask_rules_off: str | None = setting(
        None,
        "Rules of the answer stage turned off, by name, comma-separated (docs/answering.md): "
        + ", ".join(ANSWER_RULES)
        + ".",
        check=_rule_names,
    )
    present_first: int = setting(
        5,
        "A question about the present ('now', 'these days', 'where do I work?') gets the newest "
        "of its this-many best hits first (search and ask); 0: off.",
    )
    user_name: str | None = setting(
        None,
        "Your name: in a chat between you and an assistant, evidence and answers say it instead "
        "of 'user', and questions may use it.",
        flags=("--user-name",),
    )
    consolidate: str = setting(
        "off",
        "With extract 'llm': learn lasting knowledge about people episode by episode "
        "(predict-calibrate); 'fast' is one LLM call per episode, 'full' two.",
        choices=CONSOLIDATE_MODES,
        flags=("--consolidate",),
    )
    # Why 0.6: docs/decisions.md#verify-facts.
    verify_facts: float = setting(
        0.6,
        "Extracted facts the model gives P(yes) below this against their messages are dropped "
        "(and, in 'full' consolidation, statements); 0 turns the check off.",
    )
    rerank_model: Path | None = setting(
        None,
        "A cross-encoder ONNX file for reranking (with rerank_tokenizer), such as "
        "ms-marco-MiniLM-L-6-v2; none: no reranking.",
        flags=("--rerank-model",),
        everywhere=True,
    )
    rerank_tokenizer: Path | None = setting(
        None, "The tokenizer.json of the cross-encoder.", flags=("--rerank-tokenizer",), everywhere=True
    )
    llm_backend: str = setting(
        "auto",
        "The LLM backend the model factory builds: 'auto' is 'openai' with llm_url, else 'llama' "
        "(llama.cpp in-process), or a registered one.",
    )
    llm_url: str | None = setting(
        None,
        "Use the model server at this OpenAI-compatible URL instead of the in-process model, "
        "e.g. http://127.0.0.1:11434/v1.",
        flags=("--llm-url",),
        everywhere=True,
        check=_server_url,
    )
    llm_name: str | None = setting(
        None,
        "The model the server is asked for (needed when it serves several); none: the one it serves.",
        flags=("--llm-name",),
        everywhere=True,
    )
    llm_api_key_env: str | None = setting(
        None, "The environment variable holding the model server's API key (never the key itself)."
    )
    # Generous: a CPU server's extraction call takes over a minute (docs/decisions.md).
    llm_timeout: float = setting(600.0, "Seconds one call to the model server may take.", check=_positive_seconds)
    llm_workers: int = setting(
        1,
        "With a model server (llm_url): episodes extracted at once; the in-process model takes one at a time.",
        flags=("--workers",),
        check=_at_least(1),
    )
    # A store remembers the embedder that made its vectors: opened without this setting, it is
    # searched with that one (models.factory.for_store). docs/languages.md says which to choose.
    embed_backend: str = setting(
        "onnx",
        "The embedder: 'onnx' (or 'minilm': all-MiniLM-L6-v2, English; or your --embed-model), "
        "'multilingual' (multilingual-e5-small, pip install 'localmem[multilingual]'), or a registered one. "
        "A store keeps the one it was created with.",
        flags=("--embedder",),
        everywhere=True,
    )
    rerank_backend: str = setting(
        "onnx", "The reranker backend ('onnx': a user-supplied cross-encoder; none without rerank_model)."
    )
    # So that "on Friday" means the user's Friday; a time without a zone is stored as written.
    timezone: str = setting(
        "local",
        "The zone a time that names its own is stored in: 'local' (this machine's), 'UTC' or a "
        "name such as 'Europe/Berlin'.",
        check=_zone_name,
    )
    notes_author: str = setting("me", "The speaker of a note whose front matter names no author.")
    date_order: str = setting(
        "auto",
        "How WhatsApp dates such as 01/02/2024 are read: 'auto' (each file decides, and the report "
        "says what was assumed when it cannot), 'day-first' or 'month-first'.",
        choices=DATE_ORDERS,
        flags=("--date-order",),
    )
    # A name, never the passphrase: an argument shows in the process list, a config file to its readers.
    key_env: str | None = setting(
        None,
        "The environment variable holding the passphrase of an encrypted store (the passphrase "
        "itself is never an argument); none: the store is not encrypted.",
        flags=("--key-env",),
        everywhere=True,
        metavar="VAR",
        check=_var_name,
    )

    use_server: bool = setting(
        True,
        "ask uses a running 'localmem serve' of the same store and namespace (the model stays loaded "
        "there) when its settings match; false: always answer in the command's own process.",
    )

    # On: the command line's ask goes to serve for a warm model, so the first one should find it warm.
    serve_preload: bool = setting(
        True,
        "localmem serve loads the in-process LLM and evaluates the answer instructions as it starts "
        "(in the background), so its first ask does not wait for them; false: on the first ask.",
    )

    # localmem serve's bounds on one client (docs/serve.md, "Limits"): a page opens a few
    # connections, so 128 leaves room for many tabs, the command line and an app.
    serve_max_connections: int = setting(
        128,
        "localmem serve: connections held at once; one more closes the oldest one that is not in the "
        "middle of a request.",
        check=_at_least(2),
    )
    # A name, never the token: several processes serving one PostgreSQL store behind a load
    # balancer must accept the same token (docs/postgres.md, "Many processes").
    serve_token_env: str | None = setting(
        None,
        "localmem serve: the environment variable holding the API token (at least 24 characters) "
        "that every process serving this store accepts, as for several processes behind a load "
        "balancer; none: a new random token at each start.",
        flags=("--token-env",),
        metavar="VAR",
        check=_token_var_name,
    )
    serve_header_timeout: float = setting(
        10.0,
        "localmem serve: seconds a request's headers may take, from the connection; then 408 and closed.",
        check=_positive_seconds,
    )
    serve_body_timeout: float = setting(
        30.0,
        "localmem serve: seconds a request's body may pause between two pieces; then 408 and closed.",
        check=_positive_seconds,
    )

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
        known = settings()
        unknown = set(file_values) - set(known)
        if unknown:
            raise ConfigError(f"{path}: unknown setting(s) {', '.join(sorted(unknown))}")
        values: dict[str, Any] = {}
        origins: dict[str, str] = {}
        for name, spec in known.items():
            if overrides and overrides.get(name) is not None:
                raw, origins[name] = overrides[name], "flag"
            elif (given := spec.from_env(env)) is not None:
                raw, origins[name] = given, "env"
            elif name in file_values:
                raw, origins[name] = file_values[name], f"config ({path})"
            else:
                continue
            values[name] = spec.parse(raw)
        return replace(cls(), **values, origins=tuple(sorted(origins.items())))

    def rules_off(self) -> list[str]:
        """The answer stage's rules turned off by name (``ask_rules_off``)."""
        return _names_in(self.ask_rules_off or "")

    def resolved_db_path(self) -> StoreLocation:
        """The store's file, or its ``postgresql://`` URL (a :class:`StoreURL`)."""
        return as_location(self.db_path) if self.db_path else default_db_path()

    def key(self, env: Mapping[str, str] | None = None) -> "Key | None":
        """The passphrase in the environment variable ``key_env`` names (``None`` without one)."""
        return read_key(self.key_env, env) if self.key_env else None

    def serve_token(self, env: Mapping[str, str] | None = None) -> str | None:
        """The API token in the environment variable ``serve_token_env`` names (``None`` without
        one): what every process serving a store behind one address must share."""
        if not self.serve_token_env:
            return None
        var = self.serve_token_env
        value = (os.environ if env is None else env).get(var, "")
        if len(value) < 24:
            said = "is not set" if not value else "holds fewer than 24 characters"
            raise ConfigError(
                f"the token environment variable {var} {said}; export {var} with a long random token "
                "(python -c 'import secrets; print(secrets.token_urlsafe(32))'), the same for every process"
            )
        return value


# A store's location parses as a path does, a URL kept as a StoreURL (Setting._as_kind).
_KINDS: dict[str, type] = {"int": int, "float": float, "bool": bool, "str": str, "Path": Path, "StoreLocation": Path}


@functools.cache
def settings() -> Mapping[str, Setting]:
    """Every setting by name, in the order :class:`Config` declares them (read-only)."""
    found = {}
    for f in fields(Config):
        if "setting" not in f.metadata:
            continue
        hint = str(f.type)  # "int", "Path | None", … (annotations are strings here)
        base, _, rest = hint.partition("|")
        found[f.name] = Setting(
            name=f.name,
            default=f.default,
            kind=_KINDS[base.strip()],
            optional=rest.strip() == "None",
            **f.metadata["setting"],
        )
    return MappingProxyType(found)


DEFAULTS = Config()  # every setting's default, for code that needs one without a Config


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
        import tomli as tomllib  # pyright: ignore[reportMissingImports]  # a dependency on 3.10 only
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc}") from exc
    return data


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
