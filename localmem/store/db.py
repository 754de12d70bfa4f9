"""The connection: recognising a store, setting up a connection, migrations, meta.

:func:`connect` is the one place a connection is made and set up. It first decides, reading
only, whether the file is a localmem store, a new empty file or someone else's (refused, and
left exactly as it was); then it sets the connection's options; a new store gets its file-level
settings before its first table; and only then is anything written (WAL, migrations).
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import apsw

from ..config import DEFAULTS, Key
from ..errors import (
    DiskFullError,
    LocalmemError,
    NotALocalmemStoreError,
    SchemaTooNewError,
    StoreCorruptError,
    StoreLockedError,
    StoreReadOnlyError,
    StoreReplacedError,
    WrongKeyError,
)
from ..files import private_dir, private_file
from . import cipher
from .queries import migrations, q

MMAP_BYTES = 1 << 30
# The page cache of a connection to an encrypted store, in KiB (SQLite's default is 2 MiB): every
# page read from the file is decrypted, and the exact vector scan reads every vector. At 10K
# messages (search p50, vector channel only): plain 72.8 ms, encrypted with the default cache
# 200 ms, with 16 MiB 77.8 ms, with 64 MiB 76.7 ms. It fills only as pages are read.
ENCRYPTED_CACHE_KIB = 64 * 1024

# PRAGMA application_id of a localmem store: "lmem". Migration 0009 sets it; a store made
# before it has none, and is recognised by its meta table (below).
APPLICATION_ID = 0x6C6D656D

# Tables every localmem store has; the meta table's definition is 0001's, word for word.
_OUR_TABLES = {"meta", "sources", "messages", "units"}
_META_SQL = "CREATE TABLE meta ( key TEXT PRIMARY KEY, value TEXT NOT NULL ) WITHOUT ROWID"


@contextlib.contextmanager
def store_errors(path: str, timeout_ms: int = DEFAULTS.busy_timeout_ms) -> Iterator[None]:
    """Turn SQLite's 'database is locked' into a :class:`StoreLockedError` that says why,
    'database disk image is malformed' into a :class:`StoreCorruptError` (the statement that
    met the damage, and the transaction around it, were rolled back), 'database or disk is
    full' into a :class:`DiskFullError` (the transaction was rolled back), and 'attempt to write a
    readonly database' into a :class:`StoreReplacedError` (the file was swapped while open, as
    encrypt does) or a :class:`StoreReadOnlyError`."""
    try:
        yield
    except apsw.BusyError as exc:
        raise StoreLockedError(path, timeout_ms, _busy_cause(exc)) from exc
    except apsw.CorruptError as exc:
        raise StoreCorruptError(path, str(exc)) from exc
    except apsw.FullError as exc:
        raise DiskFullError(path) from exc
    except apsw.ReadOnlyError as exc:
        if getattr(exc, "extendedresult", None) == apsw.SQLITE_READONLY_DBMOVED:
            raise StoreReplacedError(path) from exc
        raise StoreReadOnlyError(path) from exc
    except apsw.CantOpenError as exc:
        # The file opened, but its WAL index (-shm) or log (-wal) cannot be made beside it: a
        # store left with its -wal in a folder that is now read-only.
        if path != ":memory:" and not _can_write_in(Path(path).parent):
            raise StoreReadOnlyError(path) from exc
        raise LocalmemError(f"cannot open {path}: {exc}; check the path and its permissions") from exc


def _can_write_in(folder: Path) -> bool:
    """Whether a file can be made in ``folder`` (tried, not guessed from its mode: root, ACLs
    and read-only mounts all count)."""
    probe = folder / f".localmem-probe-{os.getpid()}-{time.monotonic_ns()}"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError:
        return False
    probe.unlink(missing_ok=True)
    return True


def _busy_cause(exc: apsw.BusyError) -> str | None:
    extended = getattr(exc, "extendedresult", None)
    if extended == apsw.SQLITE_BUSY_RECOVERY:
        return "another process was recovering the write-ahead log after a crash"
    if extended == apsw.SQLITE_BUSY_SNAPSHOT:
        return "the store changed under a read that then tried to write"
    return None  # plain SQLITE_BUSY: another connection held the lock for the whole timeout


def connect(
    path: Path | str,
    busy_timeout_ms: int = DEFAULTS.busy_timeout_ms,
    tracer: Callable[[str, Any], None] | None = None,
    key: Key | None = None,
) -> apsw.Connection:
    """Open (creating if needed) and migrate the store at ``path``; with ``key``, an encrypted
    store (a new one is encrypted from its first page: the key is set before anything is read
    or written).

    Refuses, without writing anything (not even the journal mode), a file that is not an SQLite
    database, another application's database, a store made by a newer localmem, and a damaged
    store; and, without even opening it, a key for a plain store, an encrypted store without
    one, and a key without the cipher build (:func:`cipher.check_before_open`). A new store file
    is created owner-only (its WAL and SHM get the same mode).
    """
    spath = str(path)
    if spath != ":memory:":
        p = Path(spath)
        if p.is_dir():
            raise NotALocalmemStoreError(spath, "it is a directory")
        kind = _not_regular(p)
        if kind is not None:  # opening a FIFO would wait for a writer that may never come
            raise NotALocalmemStoreError(spath, f"it is {kind}; a store is a regular file")
    try:
        cipher.check_before_open(spath, key)
    except OSError as exc:  # the file's first bytes could not be read
        raise LocalmemError(
            f"cannot open {spath}: {exc.strerror or exc}", "check the path and its permissions"
        ) from exc
    if spath != ":memory:":
        try:
            private_dir(p.parent)
            private_file(p)
        except OSError as exc:
            raise LocalmemError(
                f"cannot create {spath}: {exc.strerror or exc}", "check the path and its permissions"
            ) from exc
    for attempt in (1, 2):
        began_new = key is not None and cipher.file_state(spath) == "new"
        try:
            return _open(spath, busy_timeout_ms, tracer, key)
        except (apsw.NotADBError, WrongKeyError) as exc:
            # Another process made the new store between our look and our first read: its pages
            # use its own salt, not the one our key was derived with. Open it again as it is now.
            if attempt == 1 and began_new and cipher.file_state(spath) == "encrypted":
                continue
            if isinstance(exc, WrongKeyError):
                raise
            raise NotALocalmemStoreError(spath, "not an SQLite database") from exc
    raise AssertionError("unreachable")  # pragma: no cover


def _not_regular(path: Path) -> str | None:
    """What ``path`` is when it exists and is not a regular file (links followed), else None."""
    try:
        mode = os.stat(path).st_mode
    except OSError:  # missing (a new store), or not reachable: opening it says why
        return None
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _open(
    spath: str, busy_timeout_ms: int, tracer: Callable[[str, Any], None] | None, key: Key | None
) -> apsw.Connection:
    try:
        conn = apsw.Connection(spath)
    except apsw.CantOpenError as exc:
        raise LocalmemError(f"cannot open {spath}: {exc}", "check the path and its permissions") from exc
    try:
        conn.set_busy_handler(_Patience(busy_timeout_ms))
        if key is not None:
            with store_errors(spath, busy_timeout_ms):
                cipher.apply_key(conn, key)  # before anything reads the file (some pragmas do)
                _check_key(conn, spath, key)
        _set_up(conn, busy_timeout_ms, encrypted=key is not None)
        with store_errors(spath, busy_timeout_ms):
            new = _recognise(conn, spath)
            if new:
                _new_store_settings(conn)
            _wal(conn)
        _load_sqlite_vec(conn)
        if tracer is not None:
            conn.exec_trace = lambda cursor, sql, bindings: (tracer(sql, bindings), True)[1]
        with store_errors(spath, busy_timeout_ms):
            migrate(conn, spath)
            ensure_codes(conn)
    except apsw.CorruptError as exc:
        conn.close()
        raise StoreCorruptError(spath, str(exc)) from exc
    except BaseException:
        conn.close()
        raise
    return conn


class _Patience:
    """The busy handler: while another connection holds the lock, wait and retry (backing off
    as SQLite's own busy timeout does) for up to ``timeout_ms``, then give up (SQLITE_BUSY).

    It sleeps in Python, releasing the GIL: apsw begins a ``with conn:`` transaction holding
    the GIL, so with SQLite's own timeout a writer waiting in one thread kept the writer it
    waited for, in another thread of the same process, from ever committing (each waited the
    full timeout)."""

    DELAYS_MS = (1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100)

    def __init__(self, timeout_ms: int) -> None:
        self.timeout_ms = timeout_ms
        self.started = 0.0

    def __call__(self, count: int) -> bool:
        if count == 0:
            self.started = time.monotonic()
        left_ms = self.timeout_ms - (time.monotonic() - self.started) * 1000
        if left_ms <= 0:
            return False
        time.sleep(min(self.DELAYS_MS[min(count, len(self.DELAYS_MS) - 1)], left_ms) / 1000)
        return True


def _set_up(conn: apsw.Connection, busy_timeout_ms: int, encrypted: bool = False) -> None:
    """The connection's own options; none of them writes to the file (an encrypted store's key
    is set before them: ``cache_size`` reads the schema)."""
    conn.set_busy_handler(_Patience(busy_timeout_ms))
    # Every `with conn:` is a write and takes the write lock when it begins, so the busy
    # handler applies: a transaction that read first and then tried to write got SQLITE_BUSY at
    # once, whatever the timeout (two processes adding messages lost 413 of 600 adds, each
    # failing within 17 ms). A read that needs a snapshot uses `reading()`.
    conn.transaction_mode = "IMMEDIATE"
    conn.pragma("foreign_keys", "ON")
    # Deleted rows and freed pages are overwritten with zeros: forgotten text must leave the
    # file, not linger in free space (see store/purge.py for the rest of what that takes).
    conn.pragma("secure_delete", "ON")
    # Memory-mapped reads: the vector scan reads every vector; mmap cut it 25% at 100K. Not on
    # an encrypted store, whose pages must go through the cipher (sqlite3mc refuses it anyway):
    # its decrypted pages stay in a larger page cache instead.
    conn.pragma("mmap_size", 0 if encrypted else MMAP_BYTES)
    if encrypted:
        conn.pragma("cache_size", -ENCRYPTED_CACHE_KIB)
    # Double quotes are for identifiers only (apsw's best practice; its module costs 15 ms to import).
    conn.config(apsw.SQLITE_DBCONFIG_DQS_DML, 0)
    conn.config(apsw.SQLITE_DBCONFIG_DQS_DDL, 0)


def _check_key(conn: apsw.Connection, path: str, key: Key) -> None:
    """The first read with a key: a file it does not decrypt is a wrong key (or not a store)."""
    try:
        conn.execute("select count(*) from sqlite_schema").fetchall()
    except apsw.NotADBError:
        cipher.check_encrypted_open(conn, path)
        raise WrongKeyError(path, key.source) from None


def _recognise(conn: apsw.Connection, path: str) -> bool:
    """True for a new (empty) file, False for a localmem store; raises for anything else.

    Reads only: a localmem store has our application id, or (made before the id existed) our
    meta table; an empty database is a new store. Anything else is refused before anything of it
    changes, and so is a store from a newer localmem or a damaged one (:func:`_check_intact`).
    """
    tables = {name: sql for name, sql in conn.execute("select name, sql from sqlite_schema where type = 'table'")}
    app_id, version = int(conn.pragma("application_id")), schema_version(conn)
    if app_id not in (0, APPLICATION_ID):
        raise NotALocalmemStoreError(path, f"its application id is {app_id:#x}, another application's")
    if app_id == 0 and not tables and version == 0:
        return True
    ours = app_id == APPLICATION_ID or (
        _OUR_TABLES <= set(tables) and " ".join(str(tables["meta"]).split()) == _META_SQL
    )
    if not ours:
        others = ", ".join(sorted(tables)[:5]) or "none"
        raise NotALocalmemStoreError(path, f"it has no localmem meta table; its tables: {others}")
    if version > latest_version():
        raise SchemaTooNewError(path, version, latest_version())
    _check_intact(conn, path)
    return False


def _check_intact(conn: apsw.Connection, path: str) -> None:
    """The check every open makes, in well under a millisecond at any size: the store's own
    small tables read back whole. (SQLite itself refuses a file shorter than its header says:
    a store cut short fails before this, as a damaged one.)

    A full ``PRAGMA quick_check`` reads every page: 107 ms on a 10K-message store (72 MB), 1.8 s
    at 100K (714 MB), far too slow before every search (opening takes ~2 ms); ``localmem doctor``
    runs it (:func:`quick_check`). Damage found later by any read or write is reported the same
    way, and the write it stopped is rolled back."""
    for table in ("meta", "sources"):
        found = [row[0] for row in conn.execute(f"PRAGMA quick_check({table})")]
        if found != ["ok"]:
            raise StoreCorruptError(path, "; ".join(found[:3]))


def quick_check(conn: apsw.Connection) -> list[str]:
    """Every page of the file read and checked (``PRAGMA quick_check``): the problems found, none
    when the file is whole. Reads the whole file: 1.8 s on a 100K-message store (714 MB)."""
    found = [row[0] for row in conn.execute("PRAGMA quick_check")]
    return [] if found == ["ok"] else found


def _new_store_settings(conn: apsw.Connection) -> None:
    """File-level settings a store can only be given before its first table.

    auto_vacuum INCREMENTAL: pages freed by a forget are zeroed (secure_delete) and handed back
    to the file system by `PRAGMA incremental_vacuum` (see purge.py) without rewriting the whole
    file, as VACUUM does. FULL would move pages at every commit that frees one; NONE keeps the
    file at its largest. A store made before this can only be switched by a VACUUM, which
    `localmem vacuum` runs."""
    conn.pragma("auto_vacuum", "incremental")


def _wal(conn: apsw.Connection) -> None:
    """Write-ahead logging, unless the file is read-only."""
    try:
        if not conn.readonly("main"):
            conn.pragma("journal_mode", "wal")
    except apsw.ReadOnlyError:
        pass


@contextlib.contextmanager
def reading(conn: apsw.Connection) -> Iterator[None]:
    """A read transaction: one consistent snapshot for several queries, without taking the
    write lock (``with conn:`` begins IMMEDIATE, see :func:`_set_up`)."""
    if not conn.get_autocommit():  # already inside a transaction: it is the snapshot
        yield
        return
    conn.execute("BEGIN DEFERRED")
    try:
        yield
    finally:
        if not conn.get_autocommit():
            conn.execute("COMMIT")


def _load_sqlite_vec(conn: apsw.Connection) -> None:
    # The extension is found without importing the sqlite_vec package, which imports numpy
    # (0.1 to 0.25 s here) that opening a store does not need: `localmem mcp` lists its tools
    # that much sooner, and `stats` or `namespaces` never load numpy at all.
    import importlib.util

    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:  # pragma: no cover - a core dependency
        raise LocalmemError("sqlite-vec is not installed", "run: pip install sqlite-vec")
    conn.enable_load_extension(True)
    try:
        conn.load_extension(str(Path(list(spec.submodule_search_locations)[0]) / "vec0"))
    finally:
        conn.enable_load_extension(False)
    conn.execute("select vec_version()").fetchall()
    # apsw types a scalar function as taking any number of values; numargs=1 registers these for one.
    conn.create_scalar_function("localmem_int8", int8_code, 1, deterministic=True)  # pyright: ignore[reportArgumentType]
    conn.create_scalar_function("localmem_fold", fold, 1, deterministic=True)  # pyright: ignore[reportArgumentType]
    # A message's text as the non-English full-text index takes it (migration 0013's triggers).
    conn.create_scalar_function("localmem_fts_text", _fts_text, 1, deterministic=True)  # pyright: ignore[reportArgumentType]
    # Notes what a forget deletes; purge.purge swaps in its collector while it runs.
    conn.create_scalar_function("localmem_forgotten", lambda *_values: None, -1)


def _fts_text(text: object) -> object:
    from ..text.language import fts_text

    return fts_text(text) if isinstance(text, str) else text


def fold(text: object) -> object:
    """Python's case folding for SQL (``localmem_fold``): SQLite's lower() folds ASCII only,
    and ``forget --match`` must find "ÜBER" by "über"."""
    return text.casefold() if isinstance(text, str) else text


def int8_code(blob: bytes | None) -> bytes | None:
    """A float32 vector as int8, scaled so its largest component is ±127: what
    vector_index.py rescores candidates with (a plain-table read, where vec0's point lookups
    cost ~0.2 ms each). Per-vector scaling keeps cosine within ~3e-4 of the float value on
    real embeddings; sqlite-vec's fixed-range ``vec_quantize_int8`` is ten times coarser."""
    if blob is None or len(blob) % 4:
        return None
    import numpy as np

    vec = np.frombuffer(blob, dtype=np.float32)
    top = float(np.abs(vec).max()) if len(vec) else 0.0
    scale = 127.0 / top if top > 0 else 0.0
    return np.round(vec * scale).astype(np.int8).tobytes()


def schema_version(conn: apsw.Connection) -> int:
    return int(conn.pragma("user_version"))


def latest_version() -> int:
    return len(migrations())


def migrate(conn: apsw.Connection, path: str = "") -> list[str]:
    """Apply pending migrations, each in one write transaction with its ``user_version`` bump.

    The version is read again once the write lock is held: two processes opening a new store
    at once both see version 0, and the second must then skip what the first applied."""
    applied = []
    for version, name, sql in migrations():
        if version <= schema_version(conn):
            continue
        with conn:
            current = schema_version(conn)
            if current > latest_version():
                raise SchemaTooNewError(path, current, latest_version())
            if version <= current:
                continue
            conn.execute(sql)
            conn.pragma("user_version", version)
        applied.append(name)
    return applied


def ensure_codes(conn: apsw.Connection) -> None:
    """Give a store bound before the binary codes (or the part vectors) existed its codes and
    the part tables (once, in a transaction)."""
    if conn.execute(q("vec_exists")).fetchone() is None:
        return
    if conn.execute(q("codes_exist")).fetchone() is None:
        with conn:
            conn.execute(q("codes_create"))
            conn.execute(q("codes_backfill"))
    elif conn.execute(q("codes_int8_exist")).fetchone() is None:
        with conn:
            conn.execute(q("codes_add_int8"))
    row = conn.execute(q("meta_get"), {"key": "embed_dim"}).fetchone()
    dim = int(row[0]) if row else 0
    if dim and conn.execute(q("parts_vec_exists")).fetchone() is None:
        # Bound before migration 0008: its messages have no parts until `localmem reembed`.
        with conn:
            conn.execute(q("parts_vec_create").replace("{dim}", str(dim)))
