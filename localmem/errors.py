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
    exit_code = 3

    def __init__(self, path: str) -> None:
        super().__init__(
            f"{path} is locked by another process (an ingest still running?); "
            "wait for it to finish and retry. Nothing was changed."
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
