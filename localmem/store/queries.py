"""Named SQL, loaded from the ``.sql`` files in ``sql/``.

``sql/queries/*.sql`` hold blocks introduced by ``-- name: <name>``; ``q(name)``
returns a block's text. ``sql/migrations/NNNN_*.sql`` are the schema migrations.
In a wheel the folder is ``localmem/sql``; in a source checkout or editable
install it is the repository's top-level ``sql/``.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from pathlib import Path

from ..errors import LocalmemError, QueryNotFoundError

_NAME = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$")
_MIGRATION = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


def sql_dir() -> Path:
    packaged = resources.files("localmem") / "sql"
    if packaged.is_dir():
        return Path(str(packaged))
    checkout = Path(__file__).resolve().parents[2] / "sql"
    if checkout.is_dir():
        return checkout
    raise LocalmemError("localmem's sql/ folder is missing from the installation", "reinstall localmem")


def read_named(folder: Path) -> dict[str, str]:
    """The named queries (``-- name: x``, then its SQL) of every ``*.sql`` file in ``folder``."""
    queries: dict[str, str] = {}
    for path in sorted(folder.glob("*.sql")):
        name: str | None = None
        lines: list[str] = []
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = _NAME.match(line)
            if match:
                if name:
                    queries[name] = "\n".join(lines).strip()
                name, lines = match.group(1), []
                if name in queries:
                    raise LocalmemError(f"{path}:{lineno}: query '{name}' defined twice")
            elif name:
                lines.append(line)
            elif line.strip() and not line.lstrip().startswith("--"):
                raise LocalmemError(f"{path}:{lineno}: SQL before the first '-- name:' line")
        if name:
            queries[name] = "\n".join(lines).strip()
    return queries


@lru_cache(maxsize=1)
def _all_queries() -> dict[str, str]:
    return read_named(sql_dir() / "queries")


def q(name: str) -> str:
    """The text of the named query ``name``."""
    try:
        return _all_queries()[name]
    except KeyError:
        raise QueryNotFoundError(name) from None


def query_names() -> list[str]:
    return sorted(_all_queries())


def migrations() -> list[tuple[int, str, str]]:
    """``(version, filename, sql)`` for every migration, in order."""
    found = []
    for path in sorted((sql_dir() / "migrations").glob("*.sql")):
        match = _MIGRATION.match(path.name)
        if not match:
            raise LocalmemError(f"{path}: migration files are named NNNN_name.sql")
        found.append((int(match.group(1)), path.name, path.read_text(encoding="utf-8")))
    versions = [v for v, _, _ in found]
    if versions != list(range(1, len(found) + 1)):
        raise LocalmemError(f"migrations are not numbered 1..n without gaps: {versions}")
    return found
