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
        exists = conn.sql("SELECT 1 FROM pg_roles WHERE rolname = %(r)s", {"r": role}).fetchone()
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
                "INSERT INTO namespace_roles (role, ns) VALUES (%(r)s, %(ns)s) ON CONFLICT DO NOTHING",
                {"r": role, "ns": ns},
            )
        conn.sql("SELECT localmem_grant_role(%(r)s)", {"r": role})


# Why a role would see every namespace whatever the policies say (checked in this order).
_UNBOUND_ROLE = """
SELECT CASE
    WHEN r.rolname LIKE 'pg\\_%%' THEN 'is one of PostgreSQL''s built-in roles'
    WHEN r.rolsuper THEN 'is a superuser'
    WHEN r.rolbypassrls THEN 'has BYPASSRLS'
    WHEN pg_has_role(r.oid, (SELECT relowner FROM pg_class WHERE oid = 'meta'::regclass), 'MEMBER')
        THEN 'owns the store (or is a member of its owner)'
    WHEN pg_has_role(r.oid, (SELECT n.nspowner FROM pg_namespace AS n JOIN pg_class AS c ON c.relnamespace = n.oid
                             WHERE c.oid = 'meta'::regclass), 'MEMBER')
        THEN 'owns the store''s schema (it may drop its tables)'
    WHEN pg_has_role(r.oid, (SELECT datdba FROM pg_database WHERE datname = current_database()), 'MEMBER')
        THEN 'owns the database'
    WHEN EXISTS (SELECT 1 FROM pg_roles AS x WHERE (x.rolsuper OR x.rolbypassrls) AND pg_has_role(r.oid, x.oid, 'MEMBER'))
        THEN 'is a member of a superuser or BYPASSRLS role'
END FROM pg_roles AS r WHERE r.rolname = %(r)s
"""


def _refuse_unbound_role(conn: PgStore, role: str) -> None:
    """Refuse a role that row-level security does not bind (finding 10 of issue 50: such a
    role was reported as restricted while it saw everything)."""
    row = conn.sql(_UNBOUND_ROLE, {"r": role}).fetchone()
    if row is not None and row[0]:
        raise LocalmemError(
            f"{role} {row[0]}: row-level security does not apply to it, so it would see every namespace; "
            "grant a new role of its own instead (localmem postgres grant NEW_ROLE NAMESPACE)"
        )


def _no_create_in_schema(conn: PgStore, role: str) -> None:
    """A role that may create objects in the store's schema could put a function there that the
    owner's functions call in place of theirs (PostgreSQL before 15 lets every role create in
    ``public``): that right is revoked from PUBLIC and the role, or the grant refused."""
    (schema,) = conn.sql(
        "SELECT n.nspname FROM pg_namespace AS n JOIN pg_class AS c ON c.relnamespace = n.oid WHERE c.oid = 'meta'::regclass"
    ).fetchone() or ("public",)
    if conn.sql("SELECT has_schema_privilege(%(r)s, %(s)s, 'CREATE')", {"r": role, "s": schema}).fetchone() != (True,):
        return
    from psycopg import sql

    for grantee in (sql.SQL("PUBLIC"), sql.Identifier(role)):
        conn.sql(
            sql.SQL("REVOKE CREATE ON SCHEMA {} FROM {}").format(sql.Identifier(schema), grantee).as_string(conn.raw)
        )
    if conn.sql("SELECT has_schema_privilege(%(r)s, %(s)s, 'CREATE')", {"r": role, "s": schema}).fetchone() == (True,):
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
            "SELECT line_number, type, coalesce(address, '') FROM pg_hba_file_rules WHERE auth_method = 'trust' "
            "AND error IS NULL AND ('all' = ANY (user_name) OR %(r)s = ANY (user_name)) "
            "AND ('all' = ANY (database) OR current_database() = ANY (database)) ORDER BY line_number",
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
    row = conn.sql("SELECT current_setting('server_version_num')::int >= 160000 AND system_user IS NULL").fetchone()
    if row is not None and row[0]:
        return [
            "this connection was let in without a password (trust): the server may let anyone connect as "
            f"{role} the same way, whatever its password; require scram-sha-256 (docs/postgres.md, 'Passwords')"
        ]
    return []
