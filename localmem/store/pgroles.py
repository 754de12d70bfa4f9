"""PostgreSQL roles: a namespace's users (:func:`grant_namespace`) and what would make their
restriction hollow.

A namespace role sees its namespaces' rows alone through row-level security (migration 0009).
A role that row-level security does not bind (a superuser, BYPASSRLS, an owner of the store,
its schema or its database) is refused, as is one that may create objects in the store's
schema; :func:`trust_warnings` says where the server lets the role in without a password.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Sequence

from ..errors import LocalmemError
from .pgsql import own

if TYPE_CHECKING:
    from .pg import PgStore


def grant_namespace(conn: PgStore, role: str, namespaces: Sequence[str], password: str | None = None) -> None:
    """Make ``role`` (a login role, created if missing) a user of ``namespaces`` only: it may
    read and write the store's tables that row-level security guards, and sees the rows of
    those namespaces alone (``localmem_grant_role``, migration 0009). Run by the store's owner.
    A role row-level security would not hold (a superuser, one with BYPASSRLS, the owner of
    the store, its schema or its database, a member of any of those, a built-in ``pg_*`` role)
    is refused, as is one that may create objects in the store's schema."""
    from psycopg import sql

    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", role):
        raise LocalmemError(f"role names are lower-case letters, digits and _: {role!r}")
    with conn:
        exists = conn.sql(own("role_exists"), {"r": role}).fetchone()
        if exists:
            _refuse_unbound_role(conn, role)
        elif role.startswith("pg_"):
            raise LocalmemError(f"{role}: names starting pg_ are PostgreSQL's own roles; choose another name")
        else:
            conn.sql(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)).as_string(conn.raw))
        if password is not None:
            conn.sql(
                sql.SQL("ALTER ROLE {} PASSWORD {}")
                .format(sql.Identifier(role), sql.Literal(password))
                .as_string(conn.raw)
            )
        _no_create_in_schema(conn, role)
        for ns in namespaces:
            conn.sql(
                own("role_namespace_add"),
                {"r": role, "ns": ns},
            )
        conn.sql(own("grant_role"), {"r": role})


def _refuse_unbound_role(conn: PgStore, role: str) -> None:
    """Refuse a role that row-level security does not bind (finding 10 of issue 50: such a
    role was reported as restricted while it saw everything); why it would see every namespace
    is the statement's (roles.sql, ``unbound_role``)."""
    row = conn.sql(own("unbound_role"), {"r": role}).fetchone()
    if row is not None and row[0]:
        raise LocalmemError(
            f"{role} {row[0]}: row-level security does not apply to it, so it would see every namespace; "
            "grant a new role of its own instead (localmem postgres grant NEW_ROLE NAMESPACE)"
        )


def _no_create_in_schema(conn: PgStore, role: str) -> None:
    """A role that may create objects in the store's schema could put a function there that the
    owner's functions call in place of theirs (PostgreSQL before 15 lets every role create in
    ``public``): that right is revoked from PUBLIC and the role, or the grant refused."""
    (schema,) = conn.sql(own("store_schema")).fetchone() or ("public",)
    if conn.sql(own("may_create_in_schema"), {"r": role, "s": schema}).fetchone() != (True,):
        return
    from psycopg import sql

    for grantee in (sql.SQL("PUBLIC"), sql.Identifier(role)):
        conn.sql(
            sql.SQL("REVOKE CREATE ON SCHEMA {} FROM {}").format(sql.Identifier(schema), grantee).as_string(conn.raw)
        )
    if conn.sql(own("may_create_in_schema"), {"r": role, "s": schema}).fetchone() == (True,):
        raise LocalmemError(
            f"{role} may create objects in schema {schema}, where the store's functions live; "
            f"as that schema's owner run: REVOKE CREATE ON SCHEMA {schema} FROM PUBLIC, {role}; then grant again"
        )


def trust_warnings(conn: PgStore, role: str) -> list[str]:
    """What the server lets connect as ``role`` without a password (``trust`` lines of its
    pg_hba.conf, as far as this connection may read them; else whether this very connection
    was let in unauthenticated, PostgreSQL 16+): a password set for the role protects nothing
    there. ``localmem postgres start``'s server trusts its Unix socket."""
    import psycopg

    try:
        rules = conn.sql(
            own("trust_rules"),
            {"r": role},
        ).fetchall()
    except (LocalmemError, psycopg.Error):
        rules = None
    if rules is not None:
        if not rules:
            return []
        where = ", ".join(
            "its local socket" if kind == "local" else f"{kind} {address}".strip() for _line, kind, address in rules
        )
        lines = ", ".join(str(line) for line, _kind, _address in rules)
        return [
            f"the server trusts {where} (pg_hba.conf line{'s' if len(rules) > 1 else ''} {lines}): anyone who "
            f"reaches it connects as {role} with any password or none; require scram-sha-256 there "
            "(docs/postgres.md, 'Passwords')"
        ]
    row = conn.sql(own("unauthenticated_connection")).fetchone()
    if row is not None and row[0]:
        return [
            "this connection was let in without a password (trust): the server may let anyone connect as "
            f"{role} the same way, whatever its password; require scram-sha-256 (docs/postgres.md, 'Passwords')"
        ]
    return []
