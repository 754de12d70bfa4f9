"""Result rows as the code reads them.

apsw types ``fetchall()`` as a list of tuples of ``SQLiteValue`` (int | float | bytes | str | None) and
``fetchone()`` as ``Any | None``. Each of our queries gives its columns the types its SQL says (an id
is an int, a text column a str), which a type checker cannot see; iterating a cursor already yields
``Any``. These two helpers say the same for the other two ways of reading rows, and :func:`one_row`
turns the impossible "no row" of an aggregate or an ``INSERT ... RETURNING`` into a clear error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .engine import Rows

Row = Any
"""One result row: a tuple whose columns have the types the query's SQL gives them."""


def all_rows(cursor: "Rows") -> list[Row]:
    """Every remaining row of ``cursor``."""
    return list(cursor)


def one_row(cursor: "Rows") -> Row:
    """The first row of a query that always yields one (``count(*)``, ``INSERT ... RETURNING``, a
    lookup of a row that a foreign key guarantees)."""
    row = cursor.fetchone()
    if row is None:
        raise LookupError("a query that always yields a row yielded none")
    return row


def one_value(cursor: "Rows") -> Any:
    """The first column of :func:`one_row`: a count, or the id an ``INSERT ... RETURNING`` gave."""
    return one_row(cursor)[0]
