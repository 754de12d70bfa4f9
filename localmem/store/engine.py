"""The seam between localmem and its storage engines: one typed :class:`Store`, two implementations.

Everything above ``store/`` holds a :class:`Store` and nothing else of the database: it runs
named queries by name (``store.run("meta_get", {"key": k})``; the text is each engine's own,
from ``sql/``), writes inside ``with store:`` (a nested one is a savepoint), reads several
statements from one snapshot inside ``store.reading()``, and asks the store for what differs by
engine (binding an embedder's vector tables, what follows a bulk write, the store's size, the
doctor's facts, a forget's deletion and scrub, a vacuum, a namespace grant, the error mapping).
It never asks which engine it holds.

The implementations are :class:`~localmem.store.sqlite.SqliteStore` (an apsw connection to a
file; :mod:`.db` and :mod:`.cipher` are its helpers) and :class:`~localmem.store.pg.PgStore`
(a psycopg connection from a pool). :func:`~localmem.store.handle.open_store` chooses one, once,
from the store's location.

Invariants: a named query has the same name, parameters and result columns on both engines;
what a store method returns (a dict, a :class:`Scrub`) has the same keys on both.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Iterable, Iterator, Mapping, Protocol, Sequence

from ..errors import EmbedderMismatchError, LocalmemError

if TYPE_CHECKING:
    from ..config import Key, StoreLocation
    from .purge import Decide, Scrub
    from .results import KeyChange

Params = Mapping[str, Any] | Sequence[Any] | None
"""A named query's parameters: by name (``:key``), or none."""


class Rows(Protocol):
    """A statement's result rows: iterable, ``fetchone`` (None past the last), ``fetchall``."""

    def __iter__(self) -> Iterator[Any]: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


def now_iso() -> str:
    """The current UTC time, to the second, as ISO 8601 (what the store's ``*_at`` columns hold)."""
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()


class Store(ABC):
    """An open, migrated store: one connection to one database, of either engine.

    ``location`` is where it is, as people may read it (a path, or a URL without its password).
    """

    location: str

    def __init__(self) -> None:
        # same_state/kept: the change state pinned for a search, and what is kept while it holds.
        self._pinned: Any = None
        self._kept: dict[Any, tuple[tuple[Any, int], Any]] = {}

    # -- statements ---------------------------------------------------------------------------
    @abstractmethod
    def run(self, name: str, params: Params = None) -> Rows:
        """Run the named query ``name`` (this engine's text, from ``sql/``) with ``params``."""

    def run_many(self, name: str, rows: Iterable[Params]) -> None:
        """Run the named query ``name`` once for each parameter set of ``rows``."""
        for params in rows:
            self.run(name, params)

    # -- transactions ---------------------------------------------------------------------------
    @abstractmethod
    def __enter__(self) -> "Store":
        """Begin a write transaction (a savepoint inside one)."""

    @abstractmethod
    def __exit__(self, *exc: Any) -> bool:
        """Commit it, or roll it back when the block raised."""

    def writing(self) -> "Store":
        """``with store.writing():`` is ``with store:``."""
        return self

    @abstractmethod
    def reading(self) -> ContextManager[None]:
        """One snapshot for several reads, without the write lock; inside a transaction, that one."""

    @abstractmethod
    def in_transaction(self) -> bool:
        """Whether a transaction is open on this connection."""

    @abstractmethod
    def total_changes(self) -> int:
        """The rows this connection's statements changed so far (DDL counts one)."""

    # -- engine facts and work --------------------------------------------------------------------
    @abstractmethod
    def tokenizer(self, name: str, args: list[str]) -> Callable[..., Any]:
        """SQLite FTS5's tokenizer ``name`` with ``args``: queries are split and stemmed as the
        full-text index was (on PostgreSQL, from an in-memory SQLite)."""

    @abstractmethod
    def schema_version(self) -> int:
        """The store's schema version (the SQLite schema's numbering on both engines)."""

    @abstractmethod
    def latest_schema(self) -> int:
        """The schema version this localmem writes."""

    @abstractmethod
    def size_bytes(self) -> int:
        """The store's size on disk (a file and its WAL; a server's database)."""

    @abstractmethod
    def encrypted(self) -> bool:
        """Whether localmem encrypts this store (a PostgreSQL store's encryption is the server's)."""

    @abstractmethod
    def doctor_facts(self) -> dict[str, Any]:
        """The doctor's report on the engine: ``versions`` (the top-level keys: apsw, sqlite,
        fts5, sqlite_vec), ``db`` (integrity, integrity_seconds, auto_vacuum) and ``encryption``
        (how the store is encrypted at rest)."""

    @abstractmethod
    def _lock_binding(self) -> None:
        """Serialise binding an embedder until the caller's transaction ends."""

    @abstractmethod
    def _create_vectors(self, dim: int) -> None:
        """Create the vector tables (and their indexes) of dimension ``dim``."""

    @abstractmethod
    def after_bulk_write(self, messages: int) -> None:
        """What follows a write of ``messages`` messages (gathering the planner's statistics)."""

    @abstractmethod
    def purge(self, decide: "Decide") -> "Scrub | None":
        """A forget: delete what ``decide()`` chooses, repair the rows that stay, scrub what
        the deleted rows left in the store's bytes (see :mod:`.purge`). None: nothing to delete."""

    @abstractmethod
    def vacuum(self) -> dict[str, Any]:
        """Compact the store and empty what holds deleted rows' old bytes (``VacuumReport``'s keys)."""

    @abstractmethod
    def grant(self, role: str, namespaces: Sequence[str], password: str | None) -> dict[str, Any]:
        """Make ``role`` a user of ``namespaces`` only: role, namespaces, may_vacuum, warnings.
        A store that cannot enforce it raises :class:`LocalmemError`."""

    @abstractmethod
    def change_key(self, old: Any, new: Any, progress: Callable[[str], None] | None) -> "KeyChange":
        """Write the store anew keyed with ``new`` (None: not encrypted); open it again after.
        A store localmem does not encrypt raises :class:`LocalmemError`."""

    @abstractmethod
    def locked(self) -> ContextManager[Any]:
        """Inside it, the engine's low-level errors (locked, damaged, full) as :class:`LocalmemError` s."""

    @abstractmethod
    def close(self) -> None:
        """Close the connection (a second close does nothing)."""

    # -- meta, the embedder binding and the change state (the same on both engines) ---------------
    def get_meta(self, key: str) -> str | None:
        """The store's meta value ``key``, or None."""

        def read() -> str | None:
            row = self.run("meta_get", {"key": key}).fetchone()
            return row[0] if row else None

        return self.kept(("meta", key), read)

    def set_meta(self, key: str, value: str) -> None:
        self.run("meta_set", {"key": key, "value": value})

    def all_meta(self) -> dict[str, str]:
        return {k: v for k, v in self.run("meta_all")}

    def has_vectors(self) -> bool:
        """Whether the store is bound to an embedder (its vector tables exist)."""
        return self.kept("vec_exists", lambda: self.run("vec_exists").fetchone() is not None)

    def check_embedder(self, model_id: str, dim: int | None) -> bool:
        """True if the store is bound to this embedder, False if it is bound to none yet.

        Raises :class:`EmbedderMismatchError` if it is bound to another one.
        """
        stored_id = self.get_meta("embed_model_id")
        if stored_id is None:
            return False
        stored_dim = int(self.get_meta("embed_dim") or 0)
        if stored_id != model_id or (dim is not None and dim != stored_dim):
            raise EmbedderMismatchError(stored_id, stored_dim, model_id, dim)
        return True

    def bind_embedder(self, model_id: str, dim: int) -> None:
        """Record the embedder and create the vector tables of its dimension (in the caller's
        transaction). Another process that bound it meanwhile wins; a different one raises."""
        if not isinstance(dim, int) or not 0 < dim <= 8192:
            raise LocalmemError(f"embedder dimension {dim!r} is not a sensible vector size")
        self._lock_binding()
        if self.check_embedder(model_id, dim):
            return  # another process bound it while this one waited
        self._create_vectors(dim)
        self.set_meta("embed_model_id", model_id)
        self.set_meta("embed_dim", str(dim))
        self.set_meta("embed_bound_at", now_iso())

    def unbind_embedder(self) -> None:
        """Drop the vector tables and the embedder's record (a reembed with another model)."""
        self.run("vec_drop")
        self.run("meta_delete", {"key": "embed_model_id"})
        self.run("meta_delete", {"key": "embed_dim"})

    def change_state(self) -> tuple[Any, int]:
        """``(data_version, total_changes)``: the first moves when another connection commits a
        change to the store (on PostgreSQL: when any transaction has begun or ended), the second
        when this one writes; while neither moves, what was read from the store holds. Inside
        :meth:`same_state`, ``data_version`` as it was read there (no statement)."""
        version = self._pinned
        if version is None:
            (version,) = self.run("data_version").fetchall()[0]
        return version, self.total_changes()

    @contextlib.contextmanager
    def same_state(self) -> Iterator[None]:
        """Read ``data_version`` once for the work inside (a search): :meth:`change_state` and
        :meth:`kept` then ask no statement of their own, and a value :meth:`kept` holds from an
        earlier search is used again when nothing has changed since. The work inside sees the
        store as it was when it began, or later: what any statement of its own would see. Inside
        a transaction (which could roll back what :meth:`kept` saw), or inside another
        ``same_state``, it changes nothing."""
        if self._pinned is not None or self.in_transaction():
            yield
            return
        (self._pinned,) = self.run("data_version").fetchall()[0]
        try:
            yield
        finally:
            self._pinned = None

    def kept(self, key: Any, read: Callable[[], Any]) -> Any:
        """``read()``, kept under ``key`` while the store is unchanged (:meth:`change_state`): within
        :meth:`same_state` only and outside any transaction; elsewhere ``read()`` each time. A
        search asks for the same few facts (the embedder bound, the latest message's time) that
        change only when the store does: on a server store each was a round trip."""
        if self._pinned is None or self.in_transaction():
            return read()
        state = self.change_state()
        held = self._kept.get(key)
        if held is not None and held[0] == state:
            return held[1]
        value = read()
        self._kept[key] = (state, value)
        return value


def open_store(location: "StoreLocation", busy_timeout_ms: int, key: "Key | None" = None) -> Store:
    """The one place a store is opened: the implementation its location's kind names."""
    from ..config import StoreURL

    if isinstance(location, StoreURL):
        if key is not None:
            raise LocalmemError(
                "a PostgreSQL store is not encrypted by localmem: encryption at rest is the server's "
                "(its disk, or the provider's); unset the store key"
            )
        from . import pgpool

        return pgpool.connect(str(location), busy_timeout_ms / 1000)
    from .sqlite import SqliteStore

    return SqliteStore.open(location, busy_timeout_ms, key)
