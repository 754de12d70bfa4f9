"""The SQLite store: a :class:`~localmem.store.engine.Store` on one apsw connection to a file.

:mod:`.db` opens and migrates the file (and :mod:`.cipher` keys it); :mod:`.purge` holds a
forget's and a vacuum's work on it. What only SQLite has (pragmas, Python scalar functions,
FTS5's tokenizers) is used here and in those helpers, never above ``store/``.
"""

from __future__ import annotations

import contextlib
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Iterable, Iterator, Sequence

import apsw

from ..config import Key
from ..errors import LocalmemError
from . import cipher, db
from .engine import Params, Rows, Store
from .queries import q
from .results import KeyChange

if TYPE_CHECKING:
    from .purge import Decide, Scrub


class SqliteStore(Store):
    """An open SQLite store. ``raw`` is its apsw connection (this module's, :mod:`.db`'s,
    :mod:`.cipher`'s and :mod:`.purge`'s; tests read the file's own state through it)."""

    def __init__(self, raw: apsw.Connection, path: Path, busy_timeout_ms: int) -> None:
        super().__init__()
        self.raw, self.path, self.busy_timeout_ms = raw, path, busy_timeout_ms
        self.location = str(path)

    @classmethod
    def open(cls, path: Path, busy_timeout_ms: int, key: Key | None = None) -> "SqliteStore":
        """Open (creating and migrating if needed) the store file at ``path`` (see :func:`db.connect`),
        and finish the scrub of a forget that stopped after its commit."""
        store = cls(db.connect(path, busy_timeout_ms, key=key), path, busy_timeout_ms)
        try:
            with store.locked():
                store._finish_forget()
        except BaseException:
            store.close()
            raise
        return store

    def _finish_forget(self) -> None:
        """A forget that committed but was stopped before its scrub (killed, or kept from emptying
        the WAL by a reader) left the deleted text in the file's free room: finish it now, and say so."""
        from . import purge

        done = purge.finish_pending(self)
        if done is not None:
            logging.getLogger("localmem.store").warning(
                "localmem: %s: finished the scrub of a forget that stopped after its commit (the file was "
                "written anew: %s -> %s bytes)",
                self.path,
                f"{done.bytes_before:,}",
                f"{done.bytes_after:,}",
            )

    # -- statements and transactions ----------------------------------------------------------------
    def run(self, name: str, params: Params = None) -> Rows:
        return self.raw.execute(q(name), _bindings(params))

    def run_many(self, name: str, rows: Iterable[Params]) -> None:
        self.raw.executemany(q(name), (_bindings(p) for p in rows))

    def execute(self, sql: str, params: Params = None) -> apsw.Cursor:
        """SQLite's own SQL, not a named query: for this store's helpers and for tests."""
        return self.raw.execute(sql, _bindings(params))

    def pragma(self, name: str, value: Any = None) -> Any:
        """SQLite's ``PRAGMA name`` (set to ``value`` when given)."""
        return self.raw.pragma(name) if value is None else self.raw.pragma(name, value)

    def __enter__(self) -> "SqliteStore":
        self.raw.__enter__()
        return self

    def __exit__(self, *exc: Any) -> bool:
        return bool(self.raw.__exit__(*exc))

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """A read transaction: one consistent snapshot for several queries, without taking the
        write lock (``with store:`` begins IMMEDIATE, see :func:`db._set_up`)."""
        with db.reading(self.raw):
            yield

    def in_transaction(self) -> bool:
        return not self.raw.get_autocommit()

    def total_changes(self) -> int:
        return self.raw.total_changes()

    # -- engine facts and work ------------------------------------------------------------------------
    def tokenizer(self, name: str, args: list[str]) -> Callable[..., Any]:
        return self.raw.fts5_tokenizer(name, args)

    def schema_version(self) -> int:
        return db.schema_version(self.raw)

    def latest_schema(self) -> int:
        return db.latest_version()

    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.is_file())

    def encrypted(self) -> bool:
        return cipher.file_state(self.path) == "encrypted"

    def doctor_facts(self) -> dict[str, Any]:
        started = time.perf_counter()
        problems = db.quick_check(self.raw)
        verdict = (
            "ok"
            if not problems
            else ("damaged: " + "; ".join(problems[:3]) + " (restore from an export: localmem --db NEW.db import FILE)")
        )
        if cipher.file_state(self.path) != "encrypted":
            encryption = "not encrypted"
        else:
            encryption = (
                f"encrypted ({cipher.CIPHER}, key from the passphrase by PBKDF2-HMAC-SHA256 x {cipher.KDF_ITER})"
            )
        return {
            "versions": {
                "apsw": apsw.apsw_version(),
                "sqlite": apsw.sqlite_lib_version(),
                "fts5": "ENABLE_FTS5" in {row[0] for row in self.raw.execute("PRAGMA compile_options")},
                "sqlite_vec": self.raw.execute("select vec_version()").fetchall()[0][0],
            },
            "db": {
                "integrity": verdict,
                "integrity_seconds": round(time.perf_counter() - started, 3),
                "auto_vacuum": {0: "none", 1: "full", 2: "incremental"}.get(int(self.raw.pragma("auto_vacuum")), "?"),
            },
            "encryption": encryption,
        }

    def _lock_binding(self) -> None:
        """Nothing: the caller's write transaction (BEGIN IMMEDIATE) already holds the file's lock."""

    def _create_vectors(self, dim: int) -> None:
        # DDL cannot take bound parameters; `dim` is a validated int, never user text.
        self.raw.execute(q("vec_create").replace("{dim}", str(int(dim))))
        self.raw.execute(q("codes_create"))
        self.raw.execute(q("parts_vec_create").replace("{dim}", str(int(dim))))

    def after_bulk_write(self, messages: int) -> None:
        """Nothing: SQLite plans these queries by their indexes alone (no statistics to gather)."""

    def purge(self, decide: "Decide") -> "Scrub | None":
        from . import purge

        return purge.purge(self, decide)

    def vacuum(self) -> dict[str, Any]:
        from . import purge

        return purge.vacuum(self)

    def grant(self, role: str, namespaces: Sequence[str], password: str | None) -> dict[str, Any]:
        raise LocalmemError(
            "grant is for a PostgreSQL store (--db postgresql://...): a file store's namespaces are not "
            "enforced per user; give each user a file of their own"
        )

    def change_key(self, old: Key | None, new: Key | None, progress: Callable[[str], None] | None) -> KeyChange:
        """Write the store anew keyed with ``new`` (see :func:`cipher.change_key`); open it again after."""
        return cipher.change_key(self.raw, self.path, old, new, progress)

    def locked(self) -> ContextManager[Any]:
        return db.store_errors(str(self.path), self.busy_timeout_ms)

    def close(self) -> None:
        self.raw.close()


def _bindings(params: Params) -> Any:
    """``params`` as apsw binds them (its stubs ask a dict or a sequence of SQLite values; a
    named query's parameters are those, typed as the seam's ``Params``)."""
    return params
