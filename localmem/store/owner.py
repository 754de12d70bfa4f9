"""Who "I" is in a namespace: the owner's names, stored per namespace (migration 0015).

The user of an assistant chat export (role ``user``) is the owner without a name; a chat
between people names its senders, and the owner is one of them: the names kept here. Names an
import suggests are kept as suggestions until the owner confirms them or sets others; names
the owner set are never replaced by a suggestion. Several names are one person ("Daniel Ruiz",
"Dani", "@druiz").
"""

from __future__ import annotations

from typing import Sequence

from ..errors import LocalmemError
from .engine import Store
from .results import Owner
from .rows import one_value


def owner(conn: Store, ns: str) -> Owner:
    """The owner of namespace ``ns`` as stored."""
    rows = list(conn.run("owner_names", {"ns": ns}))
    origins = {origin for _, origin in rows}
    origin = "set" if "set" in origins else ("suggested" if rows else None)
    users = int(one_value(conn.run("owner_user_messages", {"ns": ns})) or 0)
    return Owner(ns, [name for name, _ in rows], origin, users)


def names(conn: Store, ns: str) -> list[str]:
    """The owner's names in ``ns`` (set or suggested): the speakers who are "I". Kept between
    searches while the store is unchanged (:func:`db.kept`): every search asks."""

    def read() -> list[str]:
        return [name for name, _ in conn.run("owner_names", {"ns": ns})]

    return list(conn.kept(("owner_names", ns), read))


def checked_names(given: Sequence[str]) -> list[str]:
    """``given`` stripped, without repeats (case aside); an empty list or name is refused."""
    out: dict[str, str] = {}
    for name in given:
        if not isinstance(name, str) or not name.strip():
            raise LocalmemError("an owner's name must be non-empty text", "e.g. localmem owner set 'Daniel Ruiz' Dani")
        clean = " ".join(name.split())
        if len(clean) > 200:
            raise LocalmemError(f"an owner's name is at most 200 characters, not {len(clean)}")
        out.setdefault(clean.lower(), clean)
    if not out:
        raise LocalmemError("give at least one name", "e.g. localmem owner set 'Daniel Ruiz'")
    return list(out.values())


def set_names(conn: Store, ns: str, given: Sequence[str], *, add: bool = False) -> Owner:
    """Set the owner's names in ``ns`` (``add``: keep those there, suggestions become set too),
    in one transaction."""
    chosen = checked_names(given)
    with conn:
        if add:
            conn.run("owner_confirm", {"ns": ns})
        else:
            conn.run("owner_clear", {"ns": ns})
        for name in chosen:
            if add and name.lower() in (n.lower() for n in names(conn, ns)):
                continue
            conn.run("owner_name_add", {"ns": ns, "name": name, "origin": "set"})
    return owner(conn, ns)


def confirm(conn: Store, ns: str) -> Owner:
    """Make the suggested names the owner's own; refused when there are none."""
    with conn:
        if not names(conn, ns):
            raise LocalmemError(
                f"namespace {ns!r} has no suggested owner to confirm", "set one: localmem owner set NAME"
            )
        conn.run("owner_confirm", {"ns": ns})
    return owner(conn, ns)


def clear(conn: Store, ns: str) -> Owner:
    """Forget the owner's names in ``ns`` (the user of assistant chats stays the owner)."""
    with conn:
        conn.run("owner_clear", {"ns": ns})
    return owner(conn, ns)


def suggest(conn: Store, ns: str, suggested: Sequence[str]) -> list[str]:
    """Keep ``suggested`` names as suggestions in ``ns`` unless the owner set names there; the
    names newly suggested."""
    with conn:
        rows = list(conn.run("owner_names", {"ns": ns}))
        if any(origin == "set" for _, origin in rows):
            return []
        have = {name.lower() for name, _ in rows}
        new = [n for n in dict.fromkeys(suggested) if n.lower() not in have]
        for name in new:
            conn.run("owner_name_add", {"ns": ns, "name": name, "origin": "suggested"})
    return new
