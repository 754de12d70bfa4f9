"""The one printed id of a memory: ``m:123`` for a message, ``u:45`` for a unit.

Search hits, ``show``, ``forget``, ``correct``, ask citations and exports all write and read
this form; a bare number is never a memory's id outside the database.
"""

from __future__ import annotations

from ..errors import LocalmemError

KINDS = {"m": "message", "u": "unit"}


def ref(kind: str, number: int) -> str:
    """``ref("m", 12)`` → ``"m:12"``."""
    return f"{kind}:{number}"


def parse(item: object, kinds: str = "mu") -> tuple[str, int]:
    """``"m:12"`` → ``("m", 12)``; a clear error for anything else (``kinds``: the prefixes
    accepted)."""
    text = item.strip() if isinstance(item, str) else ""
    prefix, _, number = text.partition(":")
    # ASCII digits only ("²".isdigit() too), and within SQLite's integers: m:99999999999999999999
    # is no id, not an overflow.
    if (
        prefix in kinds
        and prefix in KINDS
        and number.isascii()
        and number.isdigit()
        and len(number) <= 19
        and int(number) < 2**63
    ):
        return prefix, int(number)
    wanted = " or ".join(f"{k}:123 (a {KINDS[k]})" for k in kinds)
    raise LocalmemError(f"not a memory id: {item!r}", f"give {wanted}, as search prints them")


def number(item: object, kind: str) -> int:
    """The number of ``item``, which must be of ``kind`` ("m" or "u")."""
    return parse(item, kind)[1]
