"""Named SQL and migrations, per engine, loaded from the ``.sql`` files in ``sql/``.

Layout (the same room file names on both engines)::

    sql/shared/queries/<room>.sql     portable text: runs as it is on SQLite and on PostgreSQL
    sql/sqlite/queries/<room>.sql     SQLite's text of a query whose text differs by engine
    sql/postgres/queries/<room>.sql   PostgreSQL's text of the same names
    sql/sqlite/migrations/NNNN_*.sql  the SQLite schema (``PRAGMA user_version``)
    sql/postgres/migrations/NNNN_*.sql  the PostgreSQL schema (``meta.pg_schema_version``)
    sql/<engine>/own/<room>.sql       an engine's own statements (its pools', maintenance's and
                                      roles' work), no part of the shared query set

A query file holds blocks introduced by ``-- name: <name>``; a block's text runs up to its last
SQL line (comment lines after it introduce the next block). Invariants, checked when the files
are first read (a :class:`LocalmemError` naming the file and line otherwise): a name is defined
once per engine; it is either shared or defined for both engines, never shared and
engine-specific at once; a name defined for one engine is defined for the other. So every
named query has a text for every engine, and no SQL is rewritten while it runs.

Parameters are ``:name`` in every file. The PostgreSQL loader (``store/pgsql.py``) turns them into
psycopg's ``%(name)s`` once, when the files are read: a change of placeholder syntax, not of
SQL.

``q(name)`` returns a query's SQLite text (``pgsql.pg_query(name)`` its PostgreSQL one). In a wheel
the folder is ``localmem/sql``; in a source checkout or editable install it is the repository's
top-level ``sql/``.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Literal, NamedTuple

from ..errors import LocalmemError, QueryNotFoundError

Engine = Literal["sqlite", "postgres"]
ENGINES: tuple[Engine, ...] = ("sqlite", "postgres")

_NAME = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$")
_MIGRATION = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


class Located(NamedTuple):
    """A named query's text and where it is defined."""

    text: str
    path: Path
    line: int

    def where(self) -> str:
        return f"{self.path}:{self.line}"


def sql_dir() -> Path:
    packaged = resources.files("localmem") / "sql"
    if packaged.is_dir():
        return Path(str(packaged))
    checkout = Path(__file__).resolve().parents[2] / "sql"
    if checkout.is_dir():
        return checkout
    raise LocalmemError("localmem's sql/ folder is missing from the installation", "reinstall localmem")


def _block_text(lines: list[str]) -> str:
    """A block's SQL: without the comment lines after its last SQL line (the next block's)."""
    end = len(lines)
    while end and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("--")):
        end -= 1
    return "\n".join(lines[:end]).strip()


def _read_file(path: Path, queries: dict[str, Located]) -> None:
    """Add the named queries of the file ``path`` to ``queries``."""
    blocks: list[tuple[str, int, list[str]]] = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        match = _NAME.match(line)
        if match:
            blocks.append((match.group(1), lineno, []))
        elif blocks:
            blocks[-1][2].append(line)
        elif line.strip() and not line.lstrip().startswith("--"):
            raise LocalmemError(f"{path}:{lineno}: SQL before the first '-- name:' line")
    for name, lineno, lines in blocks:
        if name in queries:
            raise LocalmemError(f"{path}:{lineno}: query '{name}' defined twice (first at {queries[name].where()})")
        text = _block_text(lines)
        if not text:
            raise LocalmemError(f"{path}:{lineno}: query '{name}' has no SQL")
        queries[name] = Located(text, path, lineno)


def read_located(folder: Path) -> dict[str, Located]:
    """The named queries (``-- name: x``, then its SQL) of every ``*.sql`` file in ``folder``."""
    queries: dict[str, Located] = {}
    for path in sorted(folder.glob("*.sql")):
        _read_file(path, queries)
    return queries


def read_named(folder: Path) -> dict[str, str]:
    """The named queries of every ``*.sql`` file in ``folder``, name to text."""
    return {name: found.text for name, found in read_located(folder).items()}


def _refuse_old_layout(root: Path) -> None:
    """A file written for the layout before engines had folders (another branch's) is named,
    not silently left unread."""
    for old in ("queries", "migrations"):
        if (root / old).is_dir():
            raise LocalmemError(
                f"{root / old}: sql/{old} is the old layout",
                f"move its files to sql/shared/{old} (portable) or to sql/sqlite/{old} and sql/postgres/{old}"
                if old == "queries"
                else "move them to sql/sqlite/migrations",
            )


@lru_cache(maxsize=1)
def _layout() -> tuple[dict[str, Located], dict[Engine, dict[str, Located]]]:
    """The shared queries and each engine's own, checked against each other."""
    root = sql_dir()
    _refuse_old_layout(root)
    shared = read_located(root / "shared" / "queries")
    own: dict[Engine, dict[str, Located]] = {e: read_located(root / e / "queries") for e in ENGINES}
    for engine in ENGINES:
        other = ENGINES[1 - ENGINES.index(engine)]
        for name, found in own[engine].items():
            if name in shared:
                raise LocalmemError(
                    f"{found.where()}: query '{name}' is shared ({shared[name].where()}) and {engine}'s at once",
                    "keep one: the shared text, or a text in both sql/sqlite/queries and sql/postgres/queries",
                )
            if name not in own[other]:
                raise LocalmemError(
                    f"{found.where()}: query '{name}' has a {engine} text but none for {other}",
                    f"add it to sql/{other}/queries/{found.path.name}, or move it to sql/shared/queries if portable",
                )
            if own[other][name].path.name != found.path.name:
                raise LocalmemError(
                    f"{found.where()}: query '{name}' is in {other}'s {own[other][name].path.name}",
                    "an engine's text goes in the room file of the same name on both engines",
                )
    return shared, own


@lru_cache(maxsize=2)
def engine_queries(engine: Engine) -> dict[str, str]:
    """Every named query's text on ``engine`` (parameters as ``:name``)."""
    shared, own = _layout()
    return {name: found.text for name, found in {**shared, **own[engine]}.items()}


def query_room(name: str) -> str:
    """The room (file stem) that defines ``name``."""
    shared, own = _layout()
    found = shared.get(name) or own["sqlite"].get(name)
    if found is None:
        raise QueryNotFoundError(name)
    return found.path.stem


def is_shared(name: str) -> bool:
    """Whether ``name`` has one text for both engines."""
    return name in _layout()[0]


def _all_queries() -> dict[str, str]:
    """The SQLite text of every named query."""
    return engine_queries("sqlite")


def q(name: str) -> str:
    """The SQLite text of the named query ``name``."""
    try:
        return _all_queries()[name]
    except KeyError:
        raise QueryNotFoundError(name) from None


def query_names() -> list[str]:
    return sorted(_all_queries())


@lru_cache(maxsize=2)
def own_queries(engine: Engine) -> dict[str, str]:
    """The statements ``engine``'s store runs for itself (``sql/<engine>/own``), name to text.
    No cross-engine rule holds for them: the other engine has its own work, or none."""
    folder = sql_dir() / engine / "own"
    return read_named(folder) if folder.is_dir() else {}


def own_query(engine: Engine, name: str) -> str:
    """The text of ``engine``'s own statement ``name`` (parameters as ``:name``)."""
    try:
        return own_queries(engine)[name]
    except KeyError:
        raise QueryNotFoundError(name) from None


def read_migrations(engine: Engine) -> list[tuple[int, str, str]]:
    """``(version, filename, sql)`` for every migration of ``engine``, in order."""
    _refuse_old_layout(sql_dir())
    folder = sql_dir() / engine / "migrations"
    found = []
    for path in sorted(folder.glob("*.sql")):
        match = _MIGRATION.match(path.name)
        if not match:
            raise LocalmemError(f"{path}: migration files are named NNNN_name.sql")
        found.append((int(match.group(1)), path.name, path.read_text(encoding="utf-8")))
    versions = [v for v, _, _ in found]
    if versions != list(range(1, len(found) + 1)):
        raise LocalmemError(f"{folder}: migrations are not numbered 1..n without gaps: {versions}")
    return found


def migrations() -> list[tuple[int, str, str]]:
    """``(version, filename, sql)`` for every SQLite migration, in order."""
    return read_migrations("sqlite")
