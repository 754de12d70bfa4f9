"""One call at a time: the lock every public method of :class:`~localmem.memory.Memory` and of
its parts (``mem.extraction``, ``mem.browse``, ``mem.admin``, which share the Memory's lock) holds.

Threads: one Memory may be shared by several threads; its calls then run one at a time (each
holds the lock until it returns), so a long ingest or ``ask`` makes the others wait. To search
while another thread writes, give each thread its own Memory: each has its own connection, and
the store's write-ahead log lets readers read while one writer writes. Processes: any number may
open the same store; a writer waits up to ``busy_timeout_ms`` for another to finish
(:class:`~localmem.errors.StoreLockedError` after that).

A class decorated with :func:`one_at_a_time` has ``_lock`` (an ``RLock``) and ``_locked()`` (a
context manager turning the store's low-level errors into :class:`~localmem.errors.LocalmemError`
s); each public method runs inside both. A generator holds them while it computes each item,
not while the caller holds the item, so a caller iterating slowly does not block other threads.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Iterator, TypeVar

C = TypeVar("C", bound=type)


def one_at_a_time(cls: C) -> C:
    """Wrap every public method of ``cls`` (see the module docstring)."""
    for name, fn in list(vars(cls).items()):
        if name.startswith("_") or not inspect.isfunction(fn):
            continue
        setattr(cls, name, _serial_generator(fn) if inspect.isgeneratorfunction(fn) else _serial(fn))
    return cls


def _serial(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        with self._lock, self._locked():
            return fn(self, *args, **kwargs)

    return call


def _serial_generator(fn: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
    @functools.wraps(fn)
    def call(self: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
        items = fn(self, *args, **kwargs)
        while True:
            with self._lock, self._locked():
                try:
                    item = next(items)
                except StopIteration:
                    return
            yield item

    return call
