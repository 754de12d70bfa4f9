"""The open store that a :class:`~localmem.memory.Memory` and its views (``mem.browse``,
``mem.admin``) share: one connection, the lock their calls take turns on, and the key the
store was opened with."""

from __future__ import annotations

import threading
from typing import Any, ContextManager

from ..config import Key, StoreLocation
from ..errors import LocalmemError
from .engine import Store, open_store


class Handle:
    """One connection to the store at ``path`` (opened, and migrated, here), opened with ``key``.

    ``lock`` is the lock every public call of the objects sharing this handle holds (see
    :func:`~localmem.serial.one_at_a_time`); :meth:`locked` turns the store's low-level errors
    into :class:`~localmem.errors.LocalmemError` s. After :meth:`close`, :attr:`conn` raises."""

    def __init__(self, path: StoreLocation, busy_timeout_ms: int, key: Key | None) -> None:
        self.path, self.busy_timeout_ms, self.key = path, busy_timeout_ms, key
        self.lock = threading.RLock()
        store = open_store(path, busy_timeout_ms, key)
        self._conn: Store | None = store
        self._errors = store.locked  # still mapping errors after close (the call then says "closed")

    @property
    def conn(self) -> Store:
        """The store; a closed handle raises :class:`~localmem.errors.LocalmemError`."""
        if self._conn is None:
            raise LocalmemError(f"this Memory of {self.path} is closed; open a new one to use the store")
        return self._conn

    def locked(self) -> ContextManager[Any]:
        """The store's errors (locked, damaged, full) as :class:`LocalmemError` s, inside it."""
        return self._errors()

    def close(self) -> None:
        """Close the connection (a second close does nothing)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def reopen(self, key: Key | None) -> None:
        """Close the connection and open the file again with ``key`` (after its key changed)."""
        self.close()
        self.key = key
        store = open_store(self.path, self.busy_timeout_ms, key)
        self._conn, self._errors = store, store.locked
