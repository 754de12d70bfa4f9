"""The PostgreSQL store's SQL, as psycopg runs it: the named queries (:func:`pg_query`), the
engine's own statements (:func:`own`: ``sql/postgres/own``, the pool's, the maintenance's and
the roles' statements that are no part of the shared query set), and the migrations with the
SQLite schema each brings the store level with (:func:`sqlite_levels`).

Every file writes parameters as ``:name``; they become psycopg's ``%(name)s`` once, when the
files are first read (``%`` doubled, string literals and ``::`` casts left alone). Nothing
else in the text is changed.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..errors import QueryNotFoundError
from .queries import engine_queries, own_queries, read_migrations

__all__ = ["SQLITE_SCHEMA_MIRRORED", "own", "pg_migrations", "pg_query", "sqlite_levels"]

# An apsw named parameter outside quotes (not a PostgreSQL cast "::"): ":name".
_PARAM = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")
# The line by which each PostgreSQL migration names the SQLite migration whose data model the
# store holds, table for table, once it has run (tests/store/test_named_queries.py checks them).
_LEVEL = re.compile(r"^-- Level with SQLite migration (\d{4})\.", re.M)


def _to_psycopg(sql: str) -> str:
    """apsw's ``:name`` parameters as psycopg's ``%(name)s`` (``%`` doubled), outside quotes."""
    # Comment lines go first: an apostrophe in one ("a namespace's") would open a quote.
    sql = "\n".join(line for line in sql.splitlines() if not line.lstrip().startswith("--"))
    out = []
    for i, piece in enumerate(re.split(r"('(?:[^']|'')*')", sql)):
        if i % 2:  # a string literal
            out.append(piece.replace("%", "%%"))
        else:
            out.append(_PARAM.sub(r"%(\1)s", piece.replace("%", "%%")).replace("?", "%s"))
    return "".join(out)


@lru_cache(maxsize=1)
def _pg_queries() -> dict[str, str]:
    """Every named query's PostgreSQL text (``sql/shared`` or ``sql/postgres``), with psycopg's
    placeholders: converted once, here."""
    return {name: _to_psycopg(text) for name, text in engine_queries("postgres").items()}


def pg_query(name: str) -> str:
    """The PostgreSQL text of the named query ``name``."""
    try:
        return _pg_queries()[name]
    except KeyError:
        raise QueryNotFoundError(name) from None


@lru_cache(maxsize=256)
def _placeholders(sql: str) -> str:
    """SQL that is not a named query (tests' and tools' own, PostgreSQL's dialect) with its
    ``:name`` placeholders in psycopg's form: nothing else is changed."""
    return _to_psycopg(sql)


def pg_migrations() -> list[tuple[int, str, str]]:
    """``(version, filename, sql)`` of the PostgreSQL schema's migrations, in order."""
    return read_migrations("postgres")


def sqlite_levels() -> list[tuple[int, int | None]]:
    """``(PostgreSQL migration, SQLite migration)``: the SQLite schema version whose data model
    each PostgreSQL migration brings the store level with (its ``-- Level with SQLite migration
    NNNN.`` line; None where the line is missing)."""
    levels = []
    for version, _name, sql in pg_migrations():
        match = _LEVEL.search(sql)
        levels.append((version, int(match.group(1)) if match else None))
    return levels


def _mirrored() -> int:
    levels = [level for _, level in sqlite_levels() if level is not None]
    return max(levels, default=0)


# The SQLite schema version whose data model sql/postgres/migrations holds: what a PostgreSQL
# store reports as its schema (an export's header carries it; restore compares it). Derived
# from the migrations' own lines, never set by hand.
SQLITE_SCHEMA_MIRRORED = _mirrored()


@lru_cache(maxsize=1)
def _own() -> dict[str, str]:
    return {name: _to_psycopg(text) for name, text in own_queries("postgres").items()}


def own(name: str) -> str:
    """The text of the PostgreSQL store's own statement ``name`` (``sql/postgres/own``)."""
    try:
        return _own()[name]
    except KeyError:
        raise QueryNotFoundError(name) from None
