"""localmem: long-term episodic and semantic memory for LLM agents, in one SQLite file.

The public API is what this package exports (below), plus ``localmem.config`` (settings and
their defaults), ``localmem.errors``, ``localmem.models.protocols`` and
``localmem.models.factory.register`` (to plug in a model backend) and ``localmem.text``
(dates and words). Everything else is the implementation, arranged by role (see
docs/architecture.md).

Names are loaded on first use, so ``import localmem`` costs almost nothing: no model
library, no numpy, no SQLite until a store is opened.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import (
    CipherBuildMissingError,
    ConfigError,
    EmbedderMismatchError,
    InputError,
    LocalmemError,
    MissingDependencyError,
    ModelNotFoundError,
    ModelServerError,
    NotALocalmemStoreError,
    NotFoundError,
    SchemaTooNewError,
    StoreCorruptError,
    StoreKeyError,
    StoreLockedError,
    UnknownFormatError,
)

if TYPE_CHECKING:
    from .config import Config, Key
    from .memory import Memory
    from .pipeline.ingest import IngestReport
    from .retrieval.search import SearchParams
    from .types import AddedMessage, Answer, Citation, Hit, HitSource

__version__ = "0.1.0"

_LAZY = {
    "Memory": "memory",
    "AddedMessage": "types",
    "Config": "config",
    "Key": "config",
    "Hit": "types",
    "HitSource": "types",
    "SearchParams": "retrieval.search",
    "Answer": "types",
    "Citation": "types",
    "IngestReport": "pipeline.ingest",
}

__all__ = [
    "Memory",
    "Config",
    "Key",
    "SearchParams",
    "Hit",
    "HitSource",
    "Answer",
    "Citation",
    "IngestReport",
    "AddedMessage",
    "LocalmemError",
    "ConfigError",
    "EmbedderMismatchError",
    "InputError",
    "MissingDependencyError",
    "ModelNotFoundError",
    "ModelServerError",
    "NotALocalmemStoreError",
    "NotFoundError",
    "SchemaTooNewError",
    "StoreCorruptError",
    "StoreLockedError",
    "UnknownFormatError",
    "StoreKeyError",
    "CipherBuildMissingError",
    "__version__",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'localmem' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
