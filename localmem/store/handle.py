"""The open store that a :class:`~localmem.memory.Memory` and its views (``mem.browse``,
``mem.admin``) share: one connection, the lock their calls take turns on, and the key the
store was opened with."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, ContextManager

import apsw

from ..config import Key, is_postgres
from ..errors import LocalmemError
from . import db


class Handle:
    """One connection to the store at ``path`` (opened, and migrated, here), opened with ``key``.

    ``lock`` is the lock every public call of the objects sharing this handle holds (see
    :func:`~localmem.serial.one_at_a_time`); :meth:`locked` turns the store's low-level errors
    into :class:`~localmem.errors.LocalmemError` s. After :meth:`close`, :attr:`conn` raises."""

    def __init__(self, path: Path, busy_timeout_ms: int, key: Key | None) -> None:
        self.path, self.busy_timeout_ms, self.key = path, busy_timeout_ms, key
        self.lock = threading.RLock()
        self._conn: apsw.Connection | None = _connect(path, busy_timeout_ms, key)

    @property
    def conn(self) -> apsw.Connection:
        """The connection; a closed handle raises :class:`~localmem.errors.LocalmemError`."""
        if self._conn is None:
            raise LocalmemError(f"this Memory of {self.path} is closed; open a new one to use the store")
        return self._conn

    def locked(self) -> ContextManager[Any]:
        """The store's errors (locked, damaged, full) as :class:`LocalmemError` s, inside it."""
        if is_postgres(self.path):
            from . import pg

            return pg.store_errors(str(self.path))
        return db.store_errors(str(self.path), self.busy_timeout_ms)

    def close(self) -> None:
        """Close the connection (a second close does nothing)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def reopen(self, key: Key | None) -> None:
        """Close the connection and open the file again with ``key`` (after its key changed)."""
        self.close()
        self.key = key
        self._conn = _connect(self.path, self.busy_timeout_ms, key)


def _connect(path: Path, busy_timeout_ms: int, key: Key | None) -> apsw.Connection:
    """The one place a store is opened: a file with apsw, a ``postgresql://`` URL with
    :mod:`.pg` (whose connection answers the same calls)."""
    if is_postgres(path):
        if key is not None:
            raise LocalmemError(
                "a PostgreSQL store is not encrypted by localmem: encryption at rest is the server's "
                "(its disk, or the provider's); unset the store key"
            )
        from . import pg

        return pg.connect(str(path), busy_timeout_ms / 1000)  # type: ignore[return-value]
    return db.connect(path, busy_timeout_ms, key=key)
