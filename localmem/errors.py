"""One exception tree. Every message says what happened and what to do next.

An error's ``message`` says what happened and its ``hint`` what to do next; ``str(error)`` is
the two joined ("…; hint"), the one line the CLI prints on stderr, and :meth:`to_dict` the
JSON form it prints with ``--json`` (``{"error", "code", "hint", "exit_code"}``). The process
exits with ``exit_code``: 1 by default, 2 bad input or configuration, 3 store locked, 4 model
missing, 5 model server failed, 6 store damaged, 7 disk full. A raise site passes its hint as
its own argument (nothing is parsed out of the message); without one, the class's
``default_hint`` is used.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .redact import redact

# What would break the one line an error is printed as (line and paragraph breaks, other control
# characters) or could not be printed at all (a lone surrogate): an error quoting a file's
# content (a key, an id, a name) shows these escaped, as Python writes them.
_NOT_ONE_LINE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def one_line(text: str) -> str:
    """``text`` with line breaks, control characters and lone surrogates escapes (``\\n``)."""
    return _NOT_ONE_LINE.sub(lambda m: m.group().encode("unicode_escape", "backslashreplace").decode("ascii"), text)


class LocalmemError(Exception):
    """Base class of every error localmem raises on purpose."""

    exit_code = 1
    code = "error"  # a stable name for programs (the JSON form's "code")
    default_hint: str | None = None  # what to do when the raise site says nothing more specific

    def __init__(self, message: str, hint: str | None = None, *, line: str | None = None) -> None:
        # Redacted here, once for every error: a message may quote a store's URL or a driver's
        # error, and whatever shows an error (CLI, API, MCP, a log) shows these strings.
        hint = redact(one_line(hint)) if hint else self.default_hint
        self.message = redact(one_line(message))
        self.hint = hint
        super().__init__(redact(one_line(line)) if line else (f"{self.message}; {hint}" if hint else self.message))

    def to_dict(self) -> dict[str, Any]:
        return {"error": self.message, "code": self.code, "hint": self.hint, "exit_code": self.exit_code}


class InputError(LocalmemError):
    """An input file that cannot be ingested. Nothing was written."""

    exit_code = 2
    code = "bad_input"
    default_hint = "fix the input and run the command again"

    def __init__(self, path: str | Path, problem: str, where: str | None = None, *, hint: str | None = None) -> None:
        self.path = str(path)
        self.problem = problem  # what is wrong with the input, without the hint
        self.where = where
        loc = f"{self.path}:{where}" if where else self.path
        said = f"{problem}; {hint}" if hint else problem
        super().__init__(f"{loc}: {problem} (nothing was stored)", hint, line=f"{loc}: {said} (nothing was stored)")


class InvalidTextError(LocalmemError):
    """Text that is not valid Unicode (a lone surrogate: half of an emoji's UTF-16 pair, or
    bytes that were not UTF-8) given where it would be stored. Nothing was written."""

    exit_code = 2
    code = "invalid_text"

    def __init__(self, what: str, text: str) -> None:
        at = next(i for i, ch in enumerate(text) if "\ud800" <= ch <= "\udfff")
        super().__init__(
            f"{what} is not valid Unicode text (a lone surrogate, U+{ord(text[at]):04X}, at character "
            f"{at + 1}: half of an emoji, or bytes that are not UTF-8); nothing was stored",
            "fix the text and try again",
        )


class UnknownFormatError(InputError):
    """The input's format could not be recognised."""

    code = "unknown_format"
    default_hint = "pass --format with one of the formats 'localmem ingest --help' lists"


class SchemaTooNewError(LocalmemError):
    code = "schema_too_new"

    def __init__(self, path: str, found: int, supported: int) -> None:
        super().__init__(
            f"{path} has schema version {found}, but this localmem supports up to {supported}",
            "upgrade localmem (pip install -U localmem) to open it. The file was not touched.",
        )


class NotALocalmemStoreError(LocalmemError):
    code = "not_a_store"

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"{path} is not a localmem store ({why})", "pass another --db path")


class StoreLockedError(LocalmemError):
    """Another connection kept the store's write lock for longer than this call may wait."""

    exit_code = 3
    code = "store_locked"

    def __init__(self, path: str, timeout_ms: int | None = None, cause: str | None = None) -> None:
        # timeout_ms: the busy_timeout_ms the call waited (None: not known here).
        waited = f"the whole {timeout_ms / 1000:g} s" if timeout_ms is not None else "all the time"
        why = cause or (
            f"another connection (another process, or another Memory in this one) held "
            f"its write lock for {waited} this call may wait (busy_timeout_ms)"
        )
        super().__init__(
            f"{path} is busy: {why}",
            "retry when that writer is done, or give it longer with busy_timeout_ms. Nothing was changed.",
        )


class StoreInUseError(StoreLockedError):
    """Encrypt, rekey and decrypt need the store to themselves."""

    code = "store_in_use"

    def __init__(self, path: str) -> None:
        LocalmemError.__init__(
            self,
            f"{path} is open in another connection (an MCP server, an ingest, another Memory): "
            "encrypt, rekey and decrypt need the store to themselves; nothing was changed",
            "close the other connections and run the command again",
        )


class StoreReplacedError(StoreLockedError):
    """The store's file was replaced (by encrypt, rekey or decrypt, or by hand) while this
    connection had it open: SQLite refuses to write to the file it opened, now unlinked."""

    code = "store_replaced"

    def __init__(self, path: str) -> None:
        LocalmemError.__init__(
            self,
            f"{path} was replaced while this command had it open (encrypt, rekey or decrypt swapped "
            "the file); nothing was written",
            "run the command again (with the store's new key, if it has one)",
        )


class StoreReadOnlyError(LocalmemError):
    """The store's file, or its folder, cannot be written (permissions, a read-only disk)."""

    code = "store_read_only"

    def __init__(self, path: str) -> None:
        super().__init__(
            f"{path} cannot be written (the file, or the folder that holds its WAL, is read-only); nothing was written",
            "check the file's and its folder's permissions, or copy the store somewhere writable",
        )


class StoreCorruptError(LocalmemError):
    """The store's file is damaged. It was not written to."""

    exit_code = 6
    code = "store_damaged"

    def __init__(self, path: str, detail: str) -> None:
        what = f"{path} is damaged ({detail}); nothing was written to it"
        hint = (
            f"Restore it from an export (localmem --db NEW.db import EXPORT.jsonl), or save what is "
            f"readable with 'sqlite3 {path} .recover > rescued.sql'"
        )
        super().__init__(what, hint, line=f"{what}. {hint}")


class DiskFullError(LocalmemError):
    """The disk holding the store is full. SQLite rolled back the transaction it was writing;
    everything committed before it is intact."""

    exit_code = 7
    code = "disk_full"

    def __init__(self, path: str, done: str = "") -> None:
        super().__init__(
            f"the disk holding {path} is full; the write in progress was rolled back and what was "
            f"stored before it is intact{done}",
            "free some space and run the command again",
        )


class EmbedderMismatchError(LocalmemError):
    code = "embedder_mismatch"

    def __init__(self, stored_id: str, stored_dim: int, given_id: str, given_dim: int | None) -> None:
        dim = f", dim {given_dim}" if given_dim is not None else ""
        super().__init__(
            f"this store was embedded with {stored_id} (dim {stored_dim}) but the configured "
            f"embedder is {given_id}{dim}",
            "configure the original embedder (or none: a store is searched with its own), or switch the "
            "store to the new one with 'localmem reembed' run with it, e.g. 'localmem --embedder "
            "multilingual reembed' (re-embeds every message and unit).",
        )


class ModelNotFoundError(LocalmemError):
    exit_code = 4
    code = "model_not_found"
    default_hint = (
        "'localmem models' lists the models and where they are; 'localmem doctor' shows which one each role uses"
    )


class ModelServerError(LocalmemError):
    """A model server (``llm_url``) could not be reached or failed a request. The message names
    the URL and what to do; the episode in progress was not stored, and a re-run resumes."""

    exit_code = 5
    code = "model_server"


class MissingDependencyError(LocalmemError):
    exit_code = 4
    code = "missing_dependency"

    def __init__(self, module: str, extra: str) -> None:
        super().__init__(f"the Python package '{module}' is not installed", f"run: pip install 'localmem[{extra}]'")


class QueryNotFoundError(LocalmemError):
    code = "internal"

    def __init__(self, name: str) -> None:
        super().__init__(
            f"no named SQL query '{name}' in localmem's sql/ folder (a packaging bug)", "reinstall localmem"
        )


class NotFoundError(LocalmemError):
    """A namespace, source or item the user named does not exist."""

    code = "not_found"
    default_hint = "'localmem namespaces' and 'localmem stats --sources' list what the store holds"


class StoreNotFoundError(NotFoundError):
    """A command that only reads was given a store path that does not exist (nothing is created)."""

    code = "no_store"

    def __init__(self, path: str | Path) -> None:
        super().__init__(
            f"no store at {path}",
            "check the --db path (or LOCALMEM_DB); 'localmem ingest' or 'localmem add' creates a store",
        )


class UnknownNamespaceError(NotFoundError):
    """A namespace that the store does not hold."""

    code = "unknown_namespace"

    def __init__(self, namespace: str, known: list[str], path: str | Path) -> None:
        listed = ", ".join(known[:20]) + (f" … ({len(known)} in all)" if len(known) > 20 else "")
        super().__init__(
            f"no namespace '{namespace}' in {path}",
            f"pass one of: {listed}" if known else "the store is empty; 'localmem ingest' or 'localmem add' fills it",
        )
        self.known = known


class AddressInUseError(LocalmemError):
    """``serve --address``: another process already listens on that port."""

    exit_code = 2
    code = "address_in_use"

    def __init__(self, host: str, port: int) -> None:
        super().__init__(
            f"{host}:{port} is already in use (another localmem serve, or another program); nothing was started",
            f"stop it, or choose another port: --address {host}:0 takes any free one",
        )


class ConfigError(LocalmemError):
    exit_code = 2
    code = "config"
    default_hint = (
        "fix that setting where it was given (config file, LOCALMEM_ environment variable or "
        "option); docs/configuration.md lists every setting"
    )


class StoreKeyError(LocalmemError):
    """A passphrase problem: wrong, missing, or given for a store that is not encrypted.
    Nothing is written before these are raised; the message never holds the passphrase."""

    exit_code = 8
    code = "store_key"
    default_hint = "check --key-env (docs/privacy.md: Encrypted stores)"


class WrongKeyError(StoreKeyError):
    def __init__(self, path: str, source: str) -> None:
        super().__init__(
            f"{path} is encrypted and {source} does not open it; the file was not touched",
            "give the passphrase it was encrypted with",
        )


class KeyRequiredError(StoreKeyError):
    def __init__(self, path: str) -> None:
        super().__init__(
            f"{path} is encrypted; the file was not touched",
            "name the environment variable that holds its passphrase with --key-env VAR (or "
            "LOCALMEM_KEY_ENV, or key_env in the config file)",
        )


class NotEncryptedError(StoreKeyError):
    def __init__(self, path: str, source: str) -> None:
        super().__init__(
            f"{path} is not encrypted, yet a key was given ({source}); the file was not touched",
            "open it without one, or encrypt it with 'localmem encrypt'",
        )


class CipherBuildMissingError(LocalmemError):
    """The loaded apsw is the plain build; encryption needs apsw-sqlite3mc."""

    exit_code = 4
    code = "cipher_missing"

    def __init__(self, why: str, detail: str = "") -> None:
        super().__init__(
            f"{why} needs the cipher build of apsw (apsw-sqlite3mc), but Python loads the plain build{detail}",
            "run: pip install --force-reinstall --no-deps apsw-sqlite3mc",
        )
