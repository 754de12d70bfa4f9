"""The PostgreSQL store: :class:`PgStore`, one implementation of the :class:`~.engine.Store` seam.

The code above the store runs named queries by name (``store.run("fts_messages", params)``),
writes inside ``with store:`` and reads snapshots inside ``store.reading()``; it never learns
which engine it holds. :class:`PgStore` answers those on PostgreSQL (psycopg 3, connections from
a pool) with each query's PostgreSQL text (``sql/shared/queries`` where it is portable, else
``sql/postgres/queries``; store/queries.py), its ``:name`` placeholders written as psycopg's
once when the files are read. No SQL is rewritten at run time.

What differs by engine (see docs/postgres.md):

- full text: a ``tsvector`` per message and unit (PostgreSQL's snowball English stemmer, no
  stop words), ranked by BM25 computed in SQL from the table's statistics with FTS5's own
  formula and constants, defined once (``localmem_bm25``, migration 0012);
- vectors: pgvector ``vector(dim)`` columns with HNSW indexes (cosine), searched with
  iterative index scans filtered by namespace; the SQLite store's binary codes are not kept;
- forget: rows are deleted, then the tables touched are vacuumed (``VACUUM FULL``, which writes
  them anew: a plain VACUUM marks the space free but leaves the old bytes in the page), the
  statistics of those left empty cleared, ``pg_statistic`` rewritten and the WAL moved past
  them where the role and the server allow (:func:`vacuum_tables`; what is not is reported);
- encryption at rest, WAL archives, replicas and backups are the server's.
"""

from __future__ import annotations

import contextlib
import re
import threading
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

from ..errors import LocalmemError, QueryNotFoundError, SchemaTooNewError, StoreLockedError
from ..redact import redact
from . import pgconnect
from .engine import Params, Store
from .queries import engine_queries, migrations, read_migrations

if TYPE_CHECKING:
    from .purge import Decide, Scrub
    from .results import KeyChange

__all__ = ["PgStore", "connect", "pg_query"]

# An apsw named parameter outside quotes (not a PostgreSQL cast "::"): ":name".
_PARAM = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")
# The line by which each PostgreSQL migration names the SQLite migration whose data model the
# store holds, table for table, once it has run (tests/store/test_named_queries.py checks them).
_LEVEL = re.compile(r"^-- Level with SQLite migration (\d{4})\.", re.M)
# The advisory lock that serialises migrations of one database (two processes opening a new
# store at once): any constant; "lmem".
_MIGRATE_LOCK = 0x6C6D656D


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


# The overrides that return nothing on PostgreSQL ("SELECT ... WHERE false": the SQLite store's
# binary codes, which this store does not keep): answered without asking the server.
_NOTHING = re.compile(r"^\s*SELECT [^;]*\sWHERE false;?\s*$", re.I)


@lru_cache(maxsize=512)
def _may_write(text: str) -> bool:
    """Whether a statement may change rows: all but a SELECT that calls none of the schema's
    functions that write (the id taker, the full-text indexer, the statistics' fold)."""
    return not text.lstrip()[:6].upper() == "SELECT" or any(
        f in text for f in ("localmem_next_id", "localmem_reindex", "localmem_fts_maybe_fold", "nextval")
    )


class _Result:
    """A statement's rows as apsw gives them: iterable, ``fetchone``, ``fetchall``; a statement
    without a result gives no rows (psycopg raises there)."""

    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor if cursor is not None and cursor.description is not None else None

    def __iter__(self) -> Iterator[tuple]:
        return iter(self._cursor) if self._cursor is not None else iter(())

    def fetchone(self) -> tuple | None:
        return self._cursor.fetchone() if self._cursor is not None else None

    def fetchall(self) -> list[tuple]:
        return self._cursor.fetchall() if self._cursor is not None else []

    @property
    def description(self) -> Sequence[Any] | None:
        return self._cursor.description if self._cursor is not None else None


# How each (query text, parameter types) is bound: "server" (typed parameters, prepared once
# it has run a few times) or "client" (psycopg's ClientCursor writes them into the text).
_BINDING: dict[tuple[str, tuple], str] = {}


def _untyped_errors() -> tuple[type[BaseException], ...]:
    import psycopg

    e = psycopg.errors
    return (
        e.IndeterminateDatatype,
        e.AmbiguousParameter,
        e.DatatypeMismatch,
        e.UndefinedFunction,
        e.AmbiguousFunction,
        e.CannotCoerce,
    )


def _vector_text(blob: bytes | bytearray) -> str:
    import numpy as np

    return "[" + ",".join(repr(float(x)) for x in np.frombuffer(blob, dtype=np.float32)) + "]"


# Command tags (psycopg's statusmessage) of statements that change no rows, and of the writes
# whose row count says what changed (:meth:`PgStore.total_changes`).
_READS = frozenset(
    {"", "SELECT", "SHOW", "SET", "RESET", "EXPLAIN", "BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE"}
)
_WRITES = frozenset({"INSERT", "UPDATE", "DELETE", "MERGE"})

# The parameters that carry a vector: a float32 blob on SQLite, pgvector's text form here.
_VECTOR_PARAMS = frozenset({"embedding"})


class PgStore(Store):
    """An open PostgreSQL store: one connection from the store's pool. :meth:`run` runs a named
    query's PostgreSQL text (:func:`pg_query`), ``with store:`` is a transaction (nested ones are
    savepoints), :meth:`reading` a REPEATABLE READ snapshot, :meth:`tokenizer` FTS5's own
    tokenizers from an in-memory SQLite (the query side of full-text search stems as the SQLite
    store does)."""

    def __init__(self, url: str, pool: Any, raw: Any, busy_timeout_s: float = 5.0) -> None:
        super().__init__()
        self.url, self._pool, self._raw = url, pool, raw
        self.location = redact(url)
        # How long a forget's or a vacuum's VACUUM FULL waits for a table another session holds
        # (the store's busy timeout, as SQLite's writers wait).
        self.busy_timeout_s = busy_timeout_s
        self._tx: list[Any] = []
        self._local_sqlite: Any = None
        self._changes = 0

    def wait_for_locks(self, seconds: float | None = None) -> None:
        """Wait at most ``seconds`` (default: the store's busy timeout) for a lock another session
        holds, as SQLite's writers wait for the write lock: past it, the statement fails as
        :class:`StoreLockedError` (PostgreSQL's ``lock_timeout``; without it a session waits
        for ever). Remembered on the pooled connection, so a reused one is not set again."""
        ms = max(1, int((self.busy_timeout_s if seconds is None else seconds) * 1000))  # 0 would wait for ever
        if getattr(self.raw, "_localmem_lock_timeout", None) != ms:
            self.sql(f"SET lock_timeout = '{ms}ms'")
            # Inside a transaction the SET ends with it (a rollback undoes it): not remembered.
            self.raw._localmem_lock_timeout = None if self._tx else ms

    @property
    def raw(self) -> Any:
        """The psycopg connection (tests and the benchmarks read the server's own views)."""
        if self._raw is None:
            raise LocalmemError(f"this connection to {redact(self.url)} is closed")
        return self._raw

    def run(self, name: str, params: Params = None) -> _Result:
        return self._statement(pg_query(name), params)

    def execute(self, sql: str, params: Any = None) -> _Result:
        """SQL that is not a named query, in PostgreSQL's dialect with ``:name`` placeholders:
        for tests and tools, never the code above the store (which runs named queries)."""
        return self._statement(_placeholders(sql), params)

    def _statement(self, text: str, params: Any) -> _Result:
        if _NOTHING.match(text):  # a query that has no PostgreSQL meaning: no round trip
            return _Result(None)
        if _may_write(text) and text.lstrip()[:6].upper() == "SELECT":
            self._changes += 1  # a SELECT of a function that writes: its status counts no rows
        if isinstance(params, Mapping):
            params = {
                k: (_vector_text(v) if k in _VECTOR_PARAMS and isinstance(v, (bytes, bytearray)) else v)
                for k, v in params.items()
            }
        if isinstance(params, dict) and "%(" not in text:
            params = None  # apsw lets a statement ignore what it is given; psycopg refuses
        with _errors(self.url):
            if ";" in text.rstrip().rstrip(";"):  # several statements: not one prepared statement
                return self._counted(self.raw.execute(text, params) if params is not None else self.raw.execute(text))
            if params is None:
                return self._counted(self._server_cursor().execute(text))
            return self._counted(self._bound(text, params))

    def _server_cursor(self) -> Any:
        import psycopg

        return psycopg.Cursor(self.raw)

    def _bound(self, text: str, params: Any) -> Any:
        """Run ``text`` with its parameters bound by the server, as a prepared statement once it
        has run a few times (psycopg's prepare_threshold): no parsing or planning each time. A
        shared query the server cannot type that way (an untyped ``:x IS NULL``, an integer
        where only int4 fits) runs with client-side binding instead, found on its first run
        with these parameter types (in a savepoint inside a transaction) and remembered."""
        import psycopg

        types = tuple(sorted((k, type(v).__name__) for k, v in params.items())) if isinstance(params, dict) else ()
        key = (text, types)
        way = _BINDING.get(key)
        if way == "client":
            return self.raw.execute(text, params)
        if way == "server":
            return self._server_cursor().execute(text, params)
        try:
            if self._tx:
                with self.raw.transaction():
                    cur = self._server_cursor().execute(text, params)
            else:
                cur = self._server_cursor().execute(text, params)
        except _untyped_errors() as exc:
            if isinstance(exc, psycopg.errors.UndefinedFunction) and "%(" not in text:
                raise
            _BINDING[key] = "client"
            return self.raw.execute(text, params)
        _BINDING[key] = "server"
        return cur

    def sql(self, text: Any, params: Any = None) -> _Result:
        """PostgreSQL text as it is (psycopg's ``%(name)s`` parameters): this module's own."""
        with _errors(self.url):
            return self._counted(self.raw.execute(text, params))

    def _counted(self, cursor: Any) -> _Result:
        """The statement's rows, after counting what it changed (:meth:`total_changes`): the
        rows a write changed (a statement of several: 1 at least), 1 for DDL, none for a read."""
        command = (cursor.statusmessage or "").split(" ", 1)[0].upper()
        if command not in _READS:
            self._changes += cursor.rowcount if cursor.rowcount > 0 else int(command not in _WRITES)
        return _Result(cursor)

    def __enter__(self) -> "PgStore":
        tx = self.raw.transaction()
        tx.__enter__()
        self._tx.append(tx)
        return self

    def __exit__(self, *exc: Any) -> bool:
        tx = self._tx.pop()
        with _errors(self.url):
            tx.__exit__(*exc)
        return False

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """One snapshot for several reads (REPEATABLE READ); inside a transaction, that one."""
        if self._tx:
            yield
            return
        import psycopg

        # set on the connection, so BEGIN carries them (no SET TRANSACTION round trip)
        raw = self.raw
        raw.isolation_level, raw.read_only = psycopg.IsolationLevel.REPEATABLE_READ, True
        try:
            with self:
                yield
        finally:
            if self._raw is not None:
                self._raw.isolation_level, self._raw.read_only = None, None

    def total_changes(self) -> int:
        """The rows this connection's statements changed, as SQLite counts them (DDL counts
        one): a cache keyed on it and ``data_version`` is kept while nothing is written."""
        return self._changes

    def in_transaction(self) -> bool:
        return bool(self._tx)

    def tokenizer(self, name: str, args: list[str]) -> Callable[..., Any]:
        if self._local_sqlite is None:
            import apsw

            self._local_sqlite = apsw.Connection(":memory:")
        return self._local_sqlite.fts5_tokenizer(name, args)

    def schema_version(self) -> int:
        """The SQLite schema whose data model this one mirrors (an export's header carries it)."""
        return SQLITE_SCHEMA_MIRRORED if schema_version(self) else 0

    def latest_schema(self) -> int:
        return len(migrations())

    def size_bytes(self) -> int:
        """The database's size on the server."""
        row = self.sql("SELECT pg_database_size(current_database())").fetchone()
        return int(row[0]) if row else 0

    def encrypted(self) -> bool:
        return False  # encryption at rest is the server's

    def doctor_facts(self) -> dict[str, Any]:
        """The server's and pgvector's versions; the pages are the server's to check (amcheck,
        pg_checksums), not a quick_check's."""
        import apsw

        row = self.sql(
            "SELECT current_setting('server_version'), (SELECT extversion FROM pg_extension WHERE extname = 'vector')"
        ).fetchone()
        server, vector = row if row else (None, None)
        return {
            "versions": {
                "apsw": apsw.apsw_version(),
                "sqlite": apsw.sqlite_lib_version(),
                "fts5": True,
                "sqlite_vec": f"none: PostgreSQL {server}, pgvector {vector}",
            },
            "db": {
                "integrity": "not checked here: the server's (data checksums, amcheck)",
                "integrity_seconds": 0.0,
                "auto_vacuum": "the server's autovacuum; forget runs VACUUM FULL on what it touched",
            },
            "encryption": "the server's disk (localmem does not encrypt a PostgreSQL store)",
        }

    def _lock_binding(self) -> None:
        lock_binding(self)

    def _create_vectors(self, dim: int) -> None:
        bind_embedder(self, dim)

    def after_bulk_write(self, messages: int) -> None:
        """After a write of :data:`BULK_MESSAGES` or more, the planner's statistics are gathered
        (``ANALYZE``). Without them the first searches after a large load are planned blind: at
        10,000 freshly loaded messages they took 25 ms at the median instead of 14 (the next
        turn read through the wrong index, the corrections by a scan of every message)."""
        if messages >= BULK_MESSAGES:
            analyze(self)

    def purge(self, decide: "Decide") -> "Scrub | None":
        from . import purge

        return purge.pg_purge(self, decide)

    def vacuum(self) -> dict[str, Any]:
        from . import purge

        return purge.pg_vacuum(self)

    def grant(self, role: str, namespaces: Sequence[str], password: str | None) -> dict[str, Any]:
        if not namespaces:
            raise LocalmemError("grant needs at least one namespace")
        grant_namespace(self, role, namespaces, password)
        held = [r[0] for r in self.sql("SELECT ns FROM namespace_roles WHERE role = %(r)s ORDER BY ns", {"r": role})]
        version = self.sql("SELECT current_setting('server_version_num')::int").fetchone()
        return {
            "role": role,
            "namespaces": held,
            "may_vacuum": bool(version and int(version[0]) >= 170000),
            "warnings": trust_warnings(self, role),
        }

    def change_key(self, old: Any, new: Any, progress: Callable[[str], None] | None) -> "KeyChange":
        raise LocalmemError(
            "a PostgreSQL store is not encrypted by localmem: encryption at rest is the server's "
            "(its disk, or the provider's)"
        )

    def locked(self) -> contextlib.AbstractContextManager[None]:
        return _errors(self.url)

    def close(self) -> None:
        if self._raw is not None:
            raw, self._raw = self._raw, None
            while self._tx:
                self._tx.pop().__exit__(None, None, None)
            try:
                self._pool.putconn(raw)
            except Exception:  # pragma: no cover - the pool is gone (at exit)
                raw.close()

    def __hash__(self) -> int:
        return id(self)


@contextlib.contextmanager
def _errors(url: str) -> Iterator[None]:
    """The server's errors as localmem's: a lock held too long, a lost server. A statement that
    the data made fail (a constraint, a value of the wrong form) raises apsw's error of that kind,
    as the SQLite store does: its callers catch those (a restore names the record's line)."""
    import apsw
    import psycopg

    try:
        yield
    except psycopg.DataError as exc:
        if "NUL" in str(exc):
            raise LocalmemError(
                "PostgreSQL text cannot hold the NUL character (\\x00): remove it from the text, or use a file store"
            ) from exc
        raise apsw.MismatchError(_first_line(exc)) from exc
    except psycopg.IntegrityError as exc:
        raise apsw.ConstraintError(_first_line(exc)) from exc
    except psycopg.errors.InsufficientPrivilege as exc:
        raise LocalmemError(f"the PostgreSQL server refused: {str(exc).strip().splitlines()[0]}") from exc
    except psycopg.errors.LockNotAvailable as exc:
        raise StoreLockedError(
            redact(url), None, "another session held a lock for longer than this call may wait (busy_timeout_ms)"
        ) from exc
    except psycopg.errors.QueryCanceled as exc:
        raise StoreLockedError(redact(url), 0, f"the statement was cancelled: {exc}") from exc
    except psycopg.OperationalError as exc:
        raise LocalmemError(f"the PostgreSQL server at {redact(url)} failed: {str(exc).strip()}") from exc


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def store_errors(url: str) -> contextlib.AbstractContextManager[None]:
    return _errors(url)


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
    row = raw.execute("SELECT oid FROM pg_type WHERE typname = 'vector'").fetchone()
    if row is not None:
        raw.adapters.register_loader(row[0], VectorLoader)
    # Without it, vectors would be read as text (connect() configures the connection again).
    raw._localmem_vectors = row is not None
    try:
        raw.execute("SET TimeZone = 'UTC'")
        raw.execute("SET hnsw.iterative_scan = strict_order")
        raw.execute("SET hnsw.ef_search = 100")
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
    if conn.sql("SELECT to_regclass('meta') IS NOT NULL").fetchone() != (True,):
        return 0
    row = conn.sql("SELECT value FROM meta WHERE key = 'pg_schema_version'").fetchone()
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
        conn.sql("SET LOCAL lock_timeout = 0")
        conn.sql(f"SELECT pg_advisory_xact_lock({_MIGRATE_LOCK})")
        for version, name, sql in pg_migrations():
            if version <= schema_version(conn):
                continue
            conn.sql(sql)  # DDL from our own files, no parameters
            conn.raw.execute(
                "INSERT INTO meta (key, value) VALUES ('pg_schema_version', %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (str(version),),
            )
            applied.append(name)
        # Whatever the migrations added is covered by the roles' privileges (0009).
        _secure(conn)
    return applied


def _check_ours(conn: PgStore, url: str) -> None:
    """Refuse a database that holds someone else's tables (in the schemas on the search path)."""
    from ..errors import NotALocalmemStoreError

    tables = [
        r[0]
        for r in conn.sql(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = ANY (current_schemas(false)) AND table_type = 'BASE TABLE' ORDER BY 1"
        )
    ]
    if tables and "meta" not in tables:
        raise NotALocalmemStoreError(redact(url), f"it has no localmem meta table; its tables: {', '.join(tables[:5])}")


def lock_binding(conn: PgStore) -> None:
    """Hold the store's schema lock until the caller's transaction ends. Two processes binding
    one fresh store at once would otherwise both run ``CREATE TABLE IF NOT EXISTS`` and one
    fails on the catalog's unique index; under the lock the second sees the first's table
    and its meta rows (READ COMMITTED: each statement reads what is committed)."""
    conn.sql(f"SELECT pg_advisory_xact_lock({_MIGRATE_LOCK})")


def bind_embedder(conn: PgStore, dim: int) -> None:
    """The vector tables of dimension ``dim``, with their HNSW indexes (in the caller's
    transaction, under :func:`lock_binding`)."""
    conn.sql(pg_query("vec_create").replace("{dim}", str(int(dim))))
    _secure(conn)  # the namespace roles granted before may use the new tables (migration 0009)


def _secure(conn: PgStore) -> None:
    """Migration 0009's ``localmem_secure()``: every SECURITY DEFINER function of the store on a
    safe search_path, none of its functions PUBLIC's, each namespace role's privileges anew
    (a table or function made since included). Run by the owner, after DDL."""
    if conn.sql("SELECT to_regprocedure('localmem_secure()') IS NOT NULL").fetchone() == (True,):
        conn.sql("SELECT localmem_secure()")


def has_vectors(conn: PgStore) -> bool:
    return conn.sql("SELECT to_regclass('vec_messages') IS NOT NULL").fetchone() == (True,)


def vacuum_tables(conn: PgStore, tables: Sequence[str], lock_timeout_s: float | None = None) -> tuple[float, list[str]]:
    """Leave nothing of the rows deleted from ``tables`` in any file of the server that the
    store's role can reach (outside any transaction), in four steps:

    1. ``VACUUM (FULL, ANALYZE)`` each table: it is written anew from its live rows, so the
       bytes of deleted rows leave its pages (a plain VACUUM only marks them free), and its
       statistics are gathered again without them.
    2. The statistics of a table left empty are cleared (:func:`_clear_stale_statistics`):
       ANALYZE writes none for a table without rows and keeps the old ones, whose histograms
       and most common values hold the deleted rows (whole messages, forgotten words).
    3. The catalog of statistics, ``pg_statistic``, is written anew: the versions ANALYZE
       replaced stay in its pages as dead tuples, as deleted rows do. Rewriting a catalog needs
       a superuser, or ``pg_maintain`` (PostgreSQL 17+).
    4. The server's write-ahead log is moved past them (:func:`_purge_wal`): its files hold the
       rows as written and the pages as they were before each change.

    What could not be done is returned with why (a table another session keeps locked for
    ``lock_timeout_s``, default the store's busy timeout; a step the role may not take; a
    server that keeps its WAL), with the seconds it took: the next vacuum or forget tries
    again."""
    import time

    started = time.perf_counter()
    deadline = started + (conn.busy_timeout_s if lock_timeout_s is None else lock_timeout_s)
    skipped = []
    conn.wait_for_locks(lock_timeout_s)
    try:
        present = []
        for table in tables:
            if not re.fullmatch(r"[a-z_]+", table):
                raise LocalmemError(f"not a table name: {table!r}")
            if conn.sql("SELECT to_regclass(%(t)s) IS NOT NULL", {"t": table}).fetchone() == (True,):
                present.append(table)
        kept = _rewrite_all(conn, {t: f"VACUUM (FULL, ANALYZE, VERBOSE) {t}" for t in present}, deadline)
        skipped += [f"{t} ({why})" for t, why in kept.items()]
        try:
            skipped += _clear_stale_statistics(conn, [t for t in present if t not in kept])
        except LocalmemError as exc:  # a table locked past the busy timeout; a refusal
            skipped.append(f"the statistics of the emptied tables ({exc})")
        if not _may_rewrite_catalogs(conn):
            skipped.append("pg_statistic (needs a superuser or pg_maintain)")
        else:
            kept = _rewrite_all(conn, {"pg_statistic": "VACUUM (FULL, VERBOSE) pg_catalog.pg_statistic"}, deadline)
            skipped += [f"{t} ({why})" for t, why in kept.items()]
        try:
            why = _purge_wal(conn)
        except LocalmemError as exc:
            why = str(exc)
        if why is not None:
            skipped.append(f"the server's write-ahead log ({why})")
    finally:
        conn.wait_for_locks()
    return time.perf_counter() - started, skipped


def _rewrite_all(conn: PgStore, commands: dict[str, str], deadline: float) -> dict[str, str]:
    """Run each VACUUM FULL of ``commands`` (table: statement); run again, until ``deadline``,
    those that kept deleted row versions: a transaction open anywhere in the database (an
    autovacuum worker's ANALYZE is one) may still see them, and VACUUM FULL copies what it may
    see into the new file (its VERBOSE report counts them: "N dead row versions cannot be
    removed yet"). Returns what was not done, each with why."""
    import time

    import psycopg

    notes: list[str] = []

    def note(diag: Any) -> None:
        if diag.severity_nonlocalized == "INFO" and diag.message_detail:
            found = re.match(r"\s*(\d+)", diag.message_detail)
            if found:
                notes.append(found.group(1))

    left: dict[str, str] = {}
    todo = dict(commands)
    conn.raw.add_notice_handler(note)
    try:
        while todo:
            for table, command in todo.items():
                notes.clear()
                try:
                    conn.raw.execute(command)
                except psycopg.errors.LockNotAvailable:
                    left[table] = "held by another session"
                    continue
                dead = sum(int(n) for n in notes)
                if dead:
                    left[table] = f"{dead} deleted row version(s) a transaction still open may see"
                else:
                    left.pop(table, None)
            todo = {t: c for t, c in commands.items() if t in left and "transaction" in left[t]}
            if not todo or time.perf_counter() >= deadline:
                break
            time.sleep(0.2)
    finally:
        conn.raw.remove_notice_handler(note)
    return left


def _clear_stale_statistics(conn: PgStore, tables: Sequence[str]) -> list[str]:
    """Clear the column statistics of those of ``tables`` that are empty (their row count as the
    VACUUM FULL just before counted it, which row-level security does not hide): PostgreSQL
    18's ``pg_clear_attribute_stats``, which the table's MAINTAIN privilege allows (its owner,
    a namespace role); before 18 a superuser deletes the catalog's rows. What could not be
    cleared is returned."""
    empty = [
        str(r[0])
        for r in conn.sql(
            "SELECT t FROM unnest(CAST(%(t)s AS text[])) AS t JOIN pg_class AS c ON c.oid = to_regclass(t) "
            "WHERE c.reltuples = 0",
            {"t": list(tables)},
        )
    ]
    if not empty:
        return []
    args = {"t": empty}
    version = conn.sql("SELECT current_setting('server_version_num')::int").fetchone()
    if version is not None and int(version[0]) >= 180000:
        conn.sql(
            "SELECT pg_clear_attribute_stats(n.nspname::text, c.relname::text, a.attname::text, false) "
            "FROM unnest(CAST(%(t)s AS text[])) AS t JOIN pg_class AS c ON c.oid = to_regclass(t) "
            "JOIN pg_namespace AS n ON n.oid = c.relnamespace "
            "JOIN pg_attribute AS a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped",
            args,
        )
        return []
    row = conn.sql("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
    if row is not None and row[0]:
        conn.sql(
            "DELETE FROM pg_catalog.pg_statistic WHERE starelid IN "
            "(SELECT to_regclass(t) FROM unnest(CAST(%(t)s AS text[])) AS t)",
            args,
        )
        return []
    return [f"the statistics of {', '.join(empty)} (emptied: PostgreSQL 18 or a superuser clears them)"]


def _purge_wal(conn: PgStore) -> str | None:
    """Move the server's write-ahead log past everything written so far and remove the files
    that held it: ``pg_switch_wal()`` ends the current file, then a ``CHECKPOINT`` removes every
    file before the new one. That holds only where the server deletes old files rather than
    renaming them for reuse (``wal_recycle = off``: ``localmem postgres start`` sets it; a
    recycled file keeps its old bytes until overwritten) and nothing else keeps them (WAL
    archiving, replication slots, ``wal_keep_size``, WAL summaries); and the role must be
    allowed both calls (a superuser; or ``pg_checkpoint`` and EXECUTE on ``pg_switch_wal``).
    Returns why it was not done, or None."""
    row = conn.sql(
        "SELECT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user), "
        "has_function_privilege('pg_catalog.pg_switch_wal()', 'EXECUTE'), "
        "EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'pg_checkpoint' AND pg_has_role(current_user, oid, 'USAGE')), "
        "current_setting('wal_recycle', true), current_setting('archive_mode', true), "
        "current_setting('wal_keep_size', true), current_setting('summarize_wal', true), "
        "(SELECT count(*) FROM pg_replication_slots), "
        "has_function_privilege('pg_catalog.pg_ls_waldir()', 'EXECUTE')"
    ).fetchone()
    assert row is not None
    superuser, may_switch, may_checkpoint, recycle, archive, keep, summarize, slots, may_list = row
    if not (superuser or (may_switch and may_checkpoint)):
        return "needs a superuser, or pg_checkpoint and EXECUTE on pg_switch_wal"
    kept = [
        *(["wal_recycle is on: old files are renamed for reuse with their bytes"] if recycle != "off" else []),
        *([f"archive_mode is {archive}"] if archive not in (None, "off") else []),
        *([f"wal_keep_size is {keep}"] if keep not in (None, "0") else []),
        *(["summarize_wal is on"] if summarize == "on" else []),
        *([f"{slots} replication slot(s)"] if slots else []),
    ]
    if kept:
        return "the server keeps its old files: " + "; ".join(kept)
    (switched,) = conn.sql("SELECT pg_walfile_name(pg_switch_wal())").fetchone() or (None,)
    conn.sql("CHECKPOINT")
    if may_list and switched is not None:
        # The check a reader of the directory would make: no file up to the one just ended.
        left = conn.sql(
            "SELECT count(*) FROM pg_ls_waldir() WHERE name ~ '^[0-9A-F]{24}$' AND name <= %(s)s",
            {"s": switched},
        ).fetchone()
        if left and left[0]:
            return f"{left[0]} file(s) up to {switched} are still there after a checkpoint"
    return None


# A write of at least this many messages (an ingest, an import) gathers the planner's statistics
# at once rather than when the server's autovacuum next looks (a minute by default).
BULK_MESSAGES = 500


def analyze(conn: PgStore) -> None:
    """Gather the planner's statistics of the store's tables (``ANALYZE``; a role may analyze
    only the tables it owns or maintains: the others are skipped with a notice, not an error).
    It samples at most 30,000 rows a table, so it takes about as long at a million messages as
    at a hundred thousand (0.2 s for the whole store at 10,000 here)."""
    conn.sql("ANALYZE")


def _may_rewrite_catalogs(conn: PgStore) -> bool:
    row = conn.sql("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
    if row is not None and row[0]:
        return True
    maintain = conn.sql(
        "SELECT current_setting('server_version_num')::int >= 170000 "
        "AND EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'pg_maintain' AND pg_has_role(current_user, oid, 'USAGE'))"
    ).fetchone()
    return bool(maintain and maintain[0])


def followers(conn: PgStore, messages_json: str | None) -> list[int]:
    """The turn after each of the messages (a JSON array of ids) in its session: its full-text
    row holds the message as context, and must be indexed again once the message is gone."""
    if not messages_json:
        return []
    rows = conn.sql(
        "SELECT DISTINCT n.id FROM localmem_ids(%(ids)s) AS j JOIN messages AS m ON m.id = j.value "
        "JOIN messages AS n ON n.ns = m.ns AND n.conversation = m.conversation AND n.session = m.session "
        "AND n.seq = (SELECT min(x.seq) FROM messages AS x WHERE x.ns = m.ns AND x.conversation = m.conversation "
        "AND x.session = m.session AND x.seq > m.seq)",
        {"ids": messages_json},
    )
    return [int(r[0]) for r in rows]


def forget_watch(conn: PgStore, params: dict[str, Any]) -> tuple[list[int], list[int]]:
    """What SQLite's temporary watch triggers note during a forget (store/purge.py), read before
    the deletion: the units that read the deleted ``messages`` (an episode that stays loses its
    logged replies' text) and the entities the deleted ``units`` mention (a summary written from
    them is dropped)."""
    readers = conn.sql(
        "SELECT DISTINCT unit_id FROM unit_sources WHERE message_id IN (SELECT value FROM localmem_ids(%(m)s))",
        {"m": params.get("messages") or "[]"},
    )
    mentioned = conn.sql(
        "SELECT DISTINCT entity_id FROM mentions WHERE unit_id IN (SELECT value FROM localmem_ids(%(u)s))",
        {"u": params.get("units") or "[]"},
    )
    return [int(r[0]) for r in readers], [int(r[0]) for r in mentioned]


def forget_repair(conn: PgStore, readers: Sequence[int], mentioned: Sequence[int]) -> None:
    """After a forget's deletion, in its transaction, as SQLite's purge_scrub_calls and
    purge_stale_summaries do: the logged model replies of episodes that stay but read a
    deleted message lose their text; a person's summary written from a deleted unit goes."""
    import json

    conn.sql(
        "UPDATE llm_calls SET raw = NULL, error = NULL WHERE episode_id IN (SELECT value FROM localmem_ids(%(r)s)) "
        "AND (raw IS NOT NULL OR error IS NOT NULL)",
        {"r": json.dumps(list(readers))},
    )
    conn.sql(
        "UPDATE entities SET summary = NULL, summary_at = NULL, data = CAST(CAST(data AS jsonb) - 'summary' AS text) "
        "WHERE id IN (SELECT value FROM localmem_ids(%(e)s)) AND summary IS NOT NULL",
        {"e": json.dumps(list(mentioned))},
    )


def relation_bytes(conn: PgStore, tables: Sequence[str]) -> int:
    """The bytes on disk of ``tables`` (those that exist), their indexes and TOAST included."""
    row = conn.sql(
        "SELECT coalesce(sum(pg_total_relation_size(to_regclass(t))), 0) FROM unnest(CAST(%(t)s AS text[])) AS t "
        "WHERE to_regclass(t) IS NOT NULL",
        {"t": list(tables)},
    ).fetchone()
    return int(row[0]) if row else 0


def reindex_messages(conn: PgStore, ids: Sequence[int]) -> None:
    """Index the full text of the messages ``ids`` (those still there: the turns after forgotten
    ones) anew, and drop their context parts, which were embedded with the forgotten turn (their
    vectors by cascade; ``reembed`` frames them again with the turn now before them), as
    ``purge_reindex_followers`` does on SQLite."""
    if ids:
        import json

        arg = {"ids": json.dumps(list(ids))}
        conn.sql("SELECT localmem_reindex_message(value) FROM localmem_ids(%(ids)s)", arg)
        conn.sql(
            "DELETE FROM message_parts WHERE context = 1 AND message_id IN (SELECT value FROM localmem_ids(%(ids)s))",
            arg,
        )


def fold_fts_statistics(conn: PgStore) -> bool:
    """Fold BM25's pending statistics (migration 0004) in the caller's transaction, unless
    another session is folding them; whether it did."""
    row = conn.sql("SELECT localmem_fts_maybe_fold()").fetchone()
    return bool(row and row[0])


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
