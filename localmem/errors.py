"""One exception tree. Every message says what happened and what to do next.

The CLI turns any :class:`LocalmemError` into a one-line message on stderr and
the exit code given by ``exit_code``.
"""

from __future__ import annotations

from pathlib import Path


class LocalmemError(Exception):
    """Base class of every error localmem raises on purpose."""

    exit_code = 1


class InputError(LocalmemError):
    """An input file that cannot be ingested. Nothing was written."""

    exit_code = 2

    def __init__(self, path: str | Path, problem: str, where: str | None = None) -> None:
        self.path = str(path)
        self.problem = problem
        self.where = where
        loc = f"{self.path}:{where}" if where else self.path
        super().__init__(f"{loc}: {problem} (nothing was stored)")


class UnknownFormatError(InputError):
    """The input's format could not be recognised."""


class SchemaTooNewError(LocalmemError):
    def __init__(self, path: str, found: int, supported: int) -> None:
        super().__init__(
            f"{path} has schema version {found}, but this localmem supports up to {supported}; "
            "upgrade localmem (pip install -U localmem) to open it. The file was not touched."
        )


class NotALocalmemStoreError(LocalmemError):
    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"{path} is not a localmem store ({why}); pass another --db path")


class StoreLockedError(LocalmemError):
    """Another connection kept the store's write lock for longer than this call may wait."""

    exit_code = 3

    def __init__(self, path: str, timeout_ms: int = 5000, cause: str | None = None) -> None:
        why = cause or (f"another connection (another process, or another Memory in this one) held "
                        f"its write lock for the whole {timeout_ms / 1000:g} s this call may wait "
                        f"(busy_timeout_ms)")
        super().__init__(f"{path} is busy: {why}; retry when that writer is done, or give it "
                         "longer with busy_timeout_ms. Nothing was changed.")


class StoreInUseError(StoreLockedError):
    """Encrypt, rekey and decrypt need the store to themselves."""

    def __init__(self, path: str) -> None:
        LocalmemError.__init__(
            self, f"{path} is open in another connection (an MCP server, an ingest, another Memory): "
            "encrypt, rekey and decrypt need the store to themselves; close the others and retry. "
            "Nothing was changed.")


class StoreCorruptError(LocalmemError):
    """The store's file is damaged. It was not written to."""

    exit_code = 6

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(
            f"{path} is damaged ({detail}); nothing was written to it. Restore it from an export "
            f"(localmem --db NEW.db import EXPORT.jsonl), or save what is readable with "
            f"'sqlite3 {path} .recover > rescued.sql'"
        )


class EmbedderMismatchError(LocalmemError):
    def __init__(self, stored_id: str, stored_dim: int, given_id: str, given_dim: int | None) -> None:
        dim = f", dim {given_dim}" if given_dim is not None else ""
        super().__init__(
            f"this store was embedded with {stored_id} (dim {stored_dim}) but the configured "
            f"embedder is {given_id}{dim}; configure the original embedder, or switch the store "
            f"to the new one with 'localmem reembed' (re-embeds every message and unit)."
        )


class ModelNotFoundError(LocalmemError):
    exit_code = 4


class MissingDependencyError(LocalmemError):
    exit_code = 4

    def __init__(self, module: str, extra: str) -> None:
        super().__init__(
            f"the Python package '{module}' is not installed; run: pip install 'localmem[{extra}]'"
        )


class QueryNotFoundError(LocalmemError):
    def __init__(self, name: str) -> None:
        super().__init__(f"no named SQL query '{name}' in localmem's sql/queries (a packaging bug)")


class NotFoundError(LocalmemError):
    """A namespace, source or item the user named does not exist."""


class ConfigError(LocalmemError):
    exit_code = 2


class StoreKeyError(LocalmemError):
    """A passphrase problem: wrong, missing, or given for a store that is not encrypted.
    Nothing is written before these are raised; the message never holds the passphrase."""

    exit_code = 5


class WrongKeyError(StoreKeyError):
    def __init__(self, path: str, source: str) -> None:
        super().__init__(
            f"{path} is encrypted and {source} does not open it; give the passphrase it was encrypted "
            "with. The file was not touched."
        )


class KeyRequiredError(StoreKeyError):
    def __init__(self, path: str) -> None:
        super().__init__(
            f"{path} is encrypted; name the environment variable that holds its passphrase with "
            "--key-env VAR (or LOCALMEM_KEY_ENV, or key_env in the config file). The file was not touched."
        )


class NotEncryptedError(StoreKeyError):
    def __init__(self, path: str, source: str) -> None:
        super().__init__(
            f"{path} is not encrypted, yet a key was given ({source}); open it without one, or encrypt "
            "it with 'localmem encrypt'. The file was not touched."
        )


class CipherBuildMissingError(LocalmemError):
    """The loaded apsw is the plain build; encryption needs apsw-sqlite3mc."""

    exit_code = 4

    def __init__(self, why: str, detail: str = "") -> None:
        super().__init__(
            f"{why} needs the cipher build of apsw (apsw-sqlite3mc), but Python loads the plain "
            f"build{detail}; run: pip install --force-reinstall --no-deps apsw-sqlite3mc"
        )
