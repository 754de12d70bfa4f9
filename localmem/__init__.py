"""localmem: long-term episodic and semantic memory for LLM agents, in one SQLite file."""

from __future__ import annotations

from .errors import LocalmemError
from .memory import Hit, IngestReport, Memory

__version__ = "0.1.0"
__all__ = ["Memory", "Hit", "IngestReport", "LocalmemError", "__version__"]
