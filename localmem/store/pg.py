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
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

from ..errors import LocalmemError, StoreLockedError
from ..redact import redact
from . import pgmaint, pgroles
from .engine import Params, Store
from .pgsql import SQLITE_SCHEMA_MIRRORED, _placeholders, own, pg_query
from .queries import migrations

if TYPE_CHECKING:
    from .purge import Decide, Scrub
    from .results import KeyChange

__all__ = ["BULK_MESSAGES", "PgStore"]

# The advisory lock that serialises migrations of one database (two processes opening a new
# store at once): any constant; "lmem".
_MIGRATE_LOCK = 0x6C6D656D


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


# A write of at least this many messages (an ingest, an import) gathers the planner's statistics
# at once rather than when the server's autovacuum next looks (a minute by default).
BULK_MESSAGES = 500


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
            # SET takes no bound parameter: the one statement of this module formatted at run
            # time, from an int computed here.
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
        from .pgpool import schema_version

        return SQLITE_SCHEMA_MIRRORED if schema_version(self) else 0

    def latest_schema(self) -> int:
        return len(migrations())

    def size_bytes(self) -> int:
        """The database's size on the server."""
        row = self.sql(own("database_size")).fetchone()
        return int(row[0]) if row else 0

    def encrypted(self) -> bool:
        return False  # encryption at rest is the server's

    def doctor_facts(self) -> dict[str, Any]:
        """The server's and pgvector's versions; the pages are the server's to check (amcheck,
        pg_checksums), not a quick_check's."""
        import apsw

        row = self.sql(own("server_versions")).fetchone()
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
        from .pgpool import lock_binding

        lock_binding(self)

    def _create_vectors(self, dim: int) -> None:
        from .pgpool import bind_embedder

        bind_embedder(self, dim)

    def after_bulk_write(self, messages: int) -> None:
        """After a write of :data:`BULK_MESSAGES` or more, the planner's statistics are gathered
        (``ANALYZE``). Without them the first searches after a large load are planned blind: at
        10,000 freshly loaded messages they took 25 ms at the median instead of 14 (the next
        turn read through the wrong index, the corrections by a scan of every message)."""
        if messages >= BULK_MESSAGES:
            pgmaint.analyze(self)

    def purge(self, decide: "Decide") -> "Scrub | None":
        from . import purge

        return purge.pg_purge(self, decide)

    def vacuum(self) -> dict[str, Any]:
        from . import purge

        return purge.pg_vacuum(self)

    def grant(self, role: str, namespaces: Sequence[str], password: str | None) -> dict[str, Any]:
        if not namespaces:
            raise LocalmemError("grant needs at least one namespace")
        pgroles.grant_namespace(self, role, namespaces, password)
        held = [r[0] for r in self.sql(own("role_namespaces"), {"r": role})]
        version = self.sql(own("server_version_num")).fetchone()
        return {
            "role": role,
            "namespaces": held,
            "may_vacuum": bool(version and int(version[0]) >= 170000),
            "warnings": pgroles.trust_warnings(self, role),
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
