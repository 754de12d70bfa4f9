"""PostgreSQL connections: a pool per URL, each new connection configured (vectors read as
blobs, iterative HNSW scans, UTC), and a store opened migrated (:func:`connect`).

A pool is opened once per URL and kept; past :data:`_MAX_POOLS`, opening one closes the oldest
idle. Why a connection failed is said at once, in one line (:mod:`.pgconnect`). Migrations run
one transaction each under an advisory lock, so two processes opening a new store at once do
not both make it; after them (and after the vector tables are made) :func:`_secure` puts the
store's functions on a safe search_path and renews each namespace role's privileges.
"""

from __future__ import annotations

import threading
from typing import Any

from ..errors import LocalmemError, SchemaTooNewError
from ..redact import redact
from . import pgconnect
from .pg import _MIGRATE_LOCK, PgStore
from .pgsql import own, pg_migrations, pg_query

__all__ = ["close_pools", "connect", "migrate", "schema_version"]

_POOLS: dict[str, Any] = {}  # by URL, the most recently opened last
_POOLS_LOCK = threading.Lock()
# A pool keeps its connections after use (that is what it is for); a process that opens many
# databases one after another (a test suite, a tool going over many users' databases) would keep
# one idle connection per database until the server refuses more clients. Past this many pools,
# opening one closes the oldest that have no connection in use.
_MAX_POOLS = 8


def _driver() -> tuple[Any, Any]:
    """psycopg and psycopg_pool, or one line saying which extra brings them."""
    try:
        import psycopg
        import psycopg_pool
    except ImportError:
        raise LocalmemError(
            "a postgresql:// store needs psycopg 3 and its pool: pip install 'localmem[postgres]'"
        ) from None
    return psycopg, psycopg_pool


def _pool(url: str) -> Any:
    psycopg, psycopg_pool = _driver()
    with _POOLS_LOCK:
        if url not in _POOLS:
            _close_idle_pools(_MAX_POOLS - 1)
            pool = psycopg_pool.ConnectionPool(
                url,
                min_size=0,
                max_size=32,
                kwargs={"autocommit": True, "cursor_factory": psycopg.ClientCursor},
                connection_class=pgconnect.recording(),  # each failure's reason, for getconn
                configure=_configure,
                open=False,
            )
            try:
                pool.open(wait=False)
            except Exception as exc:  # pragma: no cover
                raise LocalmemError(f"cannot connect to {redact(url)}: {exc}") from exc
            _POOLS[url] = pool
        return _POOLS[url]


def _close_idle_pools(keep: int) -> None:
    """Close the oldest pools with no connection in use until ``keep`` are left (or none idle);
    under ``_POOLS_LOCK``."""
    for url in list(_POOLS):
        if len(_POOLS) <= keep:
            return
        stats = _POOLS[url].get_stats()
        if stats.get("pool_size", 0) == stats.get("pool_available", 0) and not stats.get("requests_waiting"):
            _POOLS.pop(url).close()


def _getconn(url: str, timeout_s: float) -> tuple[Any, Any]:
    """A connection from the pool of ``url``: ``(pool, connection)``. A pool closed as idle
    between finding it and asking it (:func:`_close_idle_pools`) is opened again. When it
    cannot connect, :class:`pgconnect.ConnectError` says why (:mod:`.pgconnect`); a pool that
    never connected is then closed, so that it stops trying in the background."""
    _, psycopg_pool = _driver()
    for attempt in (1, 2):
        pool = _pool(url)
        try:
            return pool, pgconnect.getconn(pool, url, timeout_s)
        except pgconnect.ConnectError:
            with _POOLS_LOCK:
                if _POOLS.get(url) is pool and not pool.get_stats().get("pool_size"):
                    del _POOLS[url]
                    pool.close(timeout=0)
            raise
        except psycopg_pool.PoolClosed:
            if attempt == 2:
                raise
            with _POOLS_LOCK:
                if _POOLS.get(url) is pool:
                    del _POOLS[url]
    raise AssertionError("unreachable")  # pragma: no cover


def close_pools() -> None:
    """Close every pool this process opened (tests, and a server that stops)."""
    with _POOLS_LOCK:
        for pool in _POOLS.values():
            pool.close()
        _POOLS.clear()


def _configure(raw: Any) -> None:
    """Each new connection: the vector type read as blobs, iterative HNSW scans (a namespace
    filter after an HNSW scan would otherwise return fewer than k rows)."""
    from psycopg.adapt import Loader

    class VectorLoader(Loader):
        def load(self, data: Any) -> bytes:
            import numpy as np

            text = bytes(data).decode("ascii").strip("[]")
            return np.array([float(x) for x in text.split(",")] if text else [], dtype=np.float32).tobytes()

    class CompactJson(Loader):
        """json as compact text, as SQLite's json_object writes it (exports are these lines)."""

        def load(self, data: Any) -> str:
            import json

            return json.dumps(json.loads(bytes(data)), ensure_ascii=False, separators=(",", ":"))

    raw.adapters.register_loader("json", CompactJson)
    # A statement run twice is prepared (PgStore._bound): a search runs the same few dozen.
    raw.prepare_threshold = 1
    raw.prepared_max = 512
    row = raw.execute(own("vector_type_oid")).fetchone()
    if row is not None:
        raw.adapters.register_loader(row[0], VectorLoader)
    # Without it, vectors would be read as text (connect() configures the connection again).
    raw._localmem_vectors = row is not None
    try:
        raw.execute(own("session_timezone"))
        raw.execute(own("session_hnsw_iterative_scan"))
        raw.execute(own("session_hnsw_ef_search"))
    except Exception:  # pgvector not created yet: the first open creates it, then reconnects
        pass


def connect(url: str, timeout_s: float = 30.0) -> PgStore:
    """A migrated PostgreSQL store at ``url`` (the schema made on first use; pgvector created
    if the role may, else it must exist)."""
    try:
        pool, raw = _getconn(url, timeout_s)
    except LocalmemError:  # the server's reason (pgconnect.ConnectError), or the missing driver
        raise
    except Exception as exc:
        raise pgconnect.failure(url, exc, timeout_s) from exc
    conn = PgStore(url, pool, raw, timeout_s)
    try:
        migrated = migrate(conn, url)
    except BaseException:
        conn.close()
        raise
    if migrated:  # the vector type may be new: connections made before it do not load it
        conn.close()
        pool.check()
        conn = PgStore(url, *_getconn(url, timeout_s), timeout_s)
        _configure(conn.raw)
    elif not getattr(conn.raw, "_localmem_vectors", False):
        # Made while another process was creating the store (the vector type did not exist
        # yet): its vectors came back as text, and an add failed after its commit (TypeError).
        _configure(conn.raw)
    # After the migrations, which another process opening the store may hold for longer.
    conn.wait_for_locks()
    return conn


def schema_version(conn: PgStore) -> int:
    if conn.sql(own("meta_exists")).fetchone() != (True,):
        return 0
    row = conn.sql(own("pg_schema_version")).fetchone()
    return int(row[0]) if row else 0


def migrate(conn: PgStore, url: str) -> list[str]:
    """Apply pending migrations in one transaction each, under an advisory lock (two processes
    opening a new database at once: the second sees what the first applied)."""
    latest = len(pg_migrations())
    if schema_version(conn) >= latest:
        if schema_version(conn) > latest:
            raise SchemaTooNewError(redact(url), schema_version(conn), latest)
        return []
    _check_ours(conn, url)
    applied = []
    with conn:
        # Another process may migrate for long (a backfill): wait for it, whatever the busy timeout.
        conn.sql(own("migrate_waits_for_locks"))
        conn.sql(own("advisory_lock"), {"key": _MIGRATE_LOCK})
        for version, name, sql in pg_migrations():
            if version <= schema_version(conn):
                continue
            conn.sql(sql)  # DDL from our own files, no parameters
            conn.raw.execute(
                own("set_pg_schema_version"),
                {"version": str(version)},
            )
            applied.append(name)
        # Whatever the migrations added is covered by the roles' privileges (0009).
        _secure(conn)
    return applied


def _check_ours(conn: PgStore, url: str) -> None:
    """Refuse a database that holds someone else's tables (in the schemas on the search path)."""
    from ..errors import NotALocalmemStoreError

    tables = [r[0] for r in conn.sql(own("tables_on_search_path"))]
    if tables and "meta" not in tables:
        raise NotALocalmemStoreError(redact(url), f"it has no localmem meta table; its tables: {', '.join(tables[:5])}")


def lock_binding(conn: PgStore) -> None:
    """Hold the store's schema lock until the caller's transaction ends. Two processes binding
    one fresh store at once would otherwise both run ``CREATE TABLE IF NOT EXISTS`` and one
    fails on the catalog's unique index; under the lock the second sees the first's table
    and its meta rows (READ COMMITTED: each statement reads what is committed)."""
    conn.sql(own("advisory_lock"), {"key": _MIGRATE_LOCK})


def bind_embedder(conn: PgStore, dim: int) -> None:
    """The vector tables of dimension ``dim``, with their HNSW indexes (in the caller's
    transaction, under :func:`lock_binding`)."""
    conn.sql(pg_query("vec_create").replace("{dim}", str(int(dim))))
    _secure(conn)  # the namespace roles granted before may use the new tables (migration 0009)


def _secure(conn: PgStore) -> None:
    """Migration 0009's ``localmem_secure()``: every SECURITY DEFINER function of the store on a
    safe search_path, none of its functions PUBLIC's, each namespace role's privileges anew
    (a table or function made since included). Run by the owner, after DDL."""
    if conn.sql(own("secure_exists")).fetchone() == (True,):
        conn.sql(own("secure"))


def has_vectors(conn: PgStore) -> bool:
    return conn.sql(own("vectors_exist")).fetchone() == (True,)
