"""Encrypted stores: which apsw build is loaded, what a file is, keying a connection, and
changing a store's key (encrypt, rekey, decrypt) without ever leaving a broken file.

Encryption comes from the cipher build of apsw (``apsw-sqlite3mc``: SQLite3 Multiple Ciphers,
the same apsw API). It encrypts every page of the database and of its WAL; the first 16 bytes
of the file are the key-derivation salt, and bytes 16-23 of the header stay in the clear (page
size, format versions, reserved bytes), which is how :func:`file_state` tells an encrypted
store from a file that is not a database at all. Both builds install the module ``apsw``: pip
writes whichever it installs last, so :func:`library_info` says which one Python actually loaded.

The passphrase only ever travels as a :class:`~localmem.config.Key` (its repr hides it) into
``PRAGMA hexkey`` / ``hexrekey`` on a connection that has no tracer yet; no message, meta row
or file holds it.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path
from typing import Any, Callable

import apsw

from ..config import Key
from ..errors import (
    CipherBuildMissingError,
    KeyRequiredError,
    LocalmemError,
    NotALocalmemStoreError,
    NotEncryptedError,
    StoreInUseError,
)
from ..files import real_file
from .results import KeyChange
from .rows import one_value

# ChaCha20-Poly1305 (sqlite3mc's default scheme): authenticated, so a changed page is an error,
# never silently wrong data; it reserves 32 bytes a page for nonce and tag (+0.8% file size).
CIPHER = "chacha20"
# PBKDF2-HMAC-SHA256 rounds turning the passphrase into the key, paid once per open: 256,000
# (SQLCipher 4's count) took 160 ms here, sqlite3mc's default of 64,007 took 40 ms. The file
# does not record these settings, so they are fixed: changing them would lock out every store.
KDF_ITER = 256_000
PLAIN_MAGIC = b"SQLite format 3\x00"
# The new file of encrypt / rekey / decrypt, beside the store (same file system: the rename is atomic).
NEW_SUFFIX = ".localmem-new"

Progress = Callable[[str], None]


def cipher_version() -> str | None:
    """SQLite3 Multiple Ciphers' version if the loaded apsw is the cipher build, else ``None``."""
    return getattr(apsw, "mc_version", None)


def dist_version(name: str) -> str | None:
    """The installed version of distribution ``name``, or ``None``."""
    from importlib import metadata  # ~15 ms: only doctor and a failed open need it

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def library_info() -> dict[str, Any]:
    """Which apsw build Python loads, and which of the two packages are installed (for doctor)."""
    plain, cipher = dist_version("apsw"), dist_version("apsw-sqlite3mc")
    report: dict[str, Any] = {
        "loaded": "cipher" if cipher_version() else "plain",
        "sqlite3mc": cipher_version(),
        "apsw": plain,
        "apsw-sqlite3mc": cipher,
    }
    if cipher and not cipher_version():
        report["problem"] = (
            "apsw was installed over apsw-sqlite3mc (both install the module 'apsw'): "
            "encrypted stores cannot be opened; run: pip install --force-reinstall "
            "--no-deps apsw-sqlite3mc"
        )
    return report


def require_cipher(why: str) -> None:
    """Raise :class:`CipherBuildMissingError` unless the cipher build is the one loaded."""
    if cipher_version() is None:
        detail = (
            " (apsw was installed over apsw-sqlite3mc: both install the module 'apsw')"
            if dist_version("apsw-sqlite3mc")
            else ""
        )
        raise CipherBuildMissingError(why, detail)


def file_state(path: str | Path) -> str:
    """What the file at ``path`` is, from its first bytes, without opening it: ``"new"`` (missing
    or empty), ``"plain"`` (an SQLite database), ``"encrypted"`` (an sqlite3mc database: the
    salt where the magic string would be, a valid header after it) or ``"unknown"``."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(24)
    except FileNotFoundError:
        return "new"
    if not head:
        return "new"
    if head[:16] == PLAIN_MAGIC:
        return "plain"
    if len(head) == 24 and _encrypted_header(head):
        return "encrypted"
    return "unknown"


def _encrypted_header(head: bytes) -> bool:
    size = int.from_bytes(head[16:18], "big")
    page = 65536 if size == 1 else size
    # page size a power of two in 512..65536, format versions 1 (rollback) or 2 (WAL), some
    # reserved bytes (the cipher's nonce and tag), and the three fixed payload fractions.
    return (
        512 <= page <= 65536
        and page & (page - 1) == 0
        and head[18] in (1, 2)
        and head[19] in (1, 2)
        and head[20] > 0
        and head[21:24] == b"\x40\x20\x20"
    )


def check_before_open(path: str, key: Key | None) -> None:
    """Refuse, before SQLite touches the file, a key for a plain store, an encrypted store
    without a key, and any key without the cipher build."""
    if not hasattr(apsw, "Connection"):  # the files of one build removed by uninstalling the other
        raise LocalmemError(
            "the apsw module is half uninstalled (apsw and apsw-sqlite3mc install the same files)",
            "run: pip install --force-reinstall --no-deps apsw-sqlite3mc (or apsw, for the plain build)",
        )
    state = "new" if path == ":memory:" else file_state(path)
    if state == "plain" and key is not None:
        raise NotEncryptedError(path, key.source)
    if state == "encrypted" and key is None:
        raise KeyRequiredError(path)
    if key is not None or state == "encrypted":
        require_cipher(f"the encrypted store {path}" if state == "encrypted" else f"a key for {path}")
    if key is not None and path == ":memory:":
        raise LocalmemError("an in-memory store cannot be encrypted", "give a file path")


def apply_key(conn: apsw.Connection, key: Key | None) -> None:
    """Set the cipher, its key derivation and the key on a fresh connection, before anything
    reads the file (a wrong key shows on the first read, as ``NotADBError``). ``None``: only the
    cipher settings, which a later ``hexrekey`` uses."""
    for name, value in (("cipher", CIPHER), ("kdf_iter", KDF_ITER)):
        if str(conn.pragma(name, value)) != str(value):
            raise LocalmemError(f"the cipher build refused {name}={value}", "upgrade apsw-sqlite3mc")
    if key is not None and conn.pragma("hexkey", key.secret.encode("utf-8").hex()) != "ok":
        raise LocalmemError("the cipher build refused the key", "upgrade apsw-sqlite3mc")
    # Sorts and temporary indexes in memory, never in an unencrypted temporary file.
    conn.pragma("temp_store", "memory")


def check_encrypted_open(conn: apsw.Connection, path: str) -> None:
    """After keying: the file must be what a key opens (not a plain database nor an unknown
    file, whose first read fails the same way a wrong key does)."""
    state = file_state(path)
    if state == "unknown":
        raise NotALocalmemStoreError(path, "not an SQLite database, nor a store encrypted by localmem")


# -- encrypt, rekey, decrypt -----------------------------------------------------------------
def change_key(
    conn: apsw.Connection, path: Path, old: Key | None, new: Key | None, progress: Progress | None = None
) -> KeyChange:
    """Write the store open on ``conn`` (keyed with ``old``) to a new file keyed with ``new``
    (``None``: not encrypted), check it, and move it over the store.

    ``conn`` must be the only connection to the store (an MCP server or an ingest holding it
    open makes this a :class:`StoreInUseError`); it then holds a shared lock, so nothing
    changes the store until the swap. The new file is a ``VACUUM INTO`` copy (same key as the
    store, so no key appears in any SQL) whose key is then changed in place with sqlite3mc's
    ``rekey``, which also sets the reserved bytes a page of the new scheme needs. Before the
    rename it must open with ``new``, pass ``integrity_check`` and hold the same rows in every
    table. A kill before the rename leaves the old store (and a ``.localmem-new`` file the next
    run removes); after it, the new one. On success ``conn`` is left on the replaced file: close
    it and open the store again with ``new``.

    A ``path`` that is a symbolic link (or under one) is worked on where it leads: the new file
    is written beside the real file and renamed over it, so the link stays a link to the same,
    now changed, file (renaming over the link would replace the link and leave the real file as
    it was). ``real_path`` in the report names that file.
    """
    step = progress or (lambda phase: None)
    started = time.perf_counter()
    given = str(path)
    path = real_file(path)
    tmp = path.with_name(path.name + NEW_SUFFIX)
    before = _size(path)
    _hold_alone(conn, str(path))
    try:
        remove_new_file(path)  # left by a run that was killed (ours now: the store is held)
        counts, version = _row_counts(conn), int(conn.pragma("user_version"))
        step("copying")
        # The new file exists, empty, with the store's permissions before a byte is written to
        # it (VACUUM INTO takes an empty file; its journal gets the same mode).
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, stat.S_IMODE(path.stat().st_mode)))
        conn.execute("vacuum into ?", (str(tmp),))
        step("rekeying")
        _rekey_copy(tmp, old, new)
        step("verifying")
        _verify(tmp, new, counts, version)
        _fsync(tmp)
        step("replacing")
        if os.name == "nt":  # Windows cannot rename over an open file
            conn.close()
        os.replace(tmp, path)
        if os.name != "nt":  # a directory cannot be opened for fsync on Windows
            _fsync(path.parent)
    except BaseException:
        remove_new_file(path)
        _release(conn)
        raise
    step("replaced")
    return KeyChange(
        path=given,
        encrypted=new is not None,
        tables=len(counts),
        rows=sum(counts.values()),
        bytes_before=before,
        bytes_after=_size(path),
        seconds=round(time.perf_counter() - started, 2),
        real_path=str(path),
    )


def remove_new_file(path: Path) -> None:
    """Delete the new file of an encrypt / rekey / decrypt that did not finish, and its journal."""
    path = real_file(path)
    tmp = path.with_name(path.name + NEW_SUFFIX)
    for p in (tmp, Path(f"{tmp}-journal"), Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        p.unlink(missing_ok=True)


def _hold_alone(conn: apsw.Connection, path: str) -> None:
    """Make ``conn`` the store's only connection until it closes: leaving WAL fails while any
    other connection has the store open; then a read in exclusive locking mode takes a shared
    lock that it keeps, so no one can write (or switch back to WAL) until the swap."""
    try:
        if str(conn.pragma("journal_mode", "delete")).lower() != "delete":
            raise apsw.BusyError("journal mode unchanged")
        conn.pragma("locking_mode", "exclusive")
        conn.execute("select count(*) from sqlite_schema").fetchall()
        if str(conn.pragma("journal_mode")).lower() != "delete" or Path(f"{path}-wal").exists():
            raise apsw.BusyError("another connection reopened the store")
    except apsw.BusyError:
        _release(conn)
        raise StoreInUseError(path) from None


def _release(conn: apsw.Connection) -> None:
    """Back to normal locking and WAL, as the store was."""
    try:
        conn.pragma("locking_mode", "normal")
        conn.execute("select count(*) from sqlite_schema").fetchall()  # releases the held lock
        conn.pragma("journal_mode", "wal")
    except apsw.Error:
        pass  # the next open sets WAL again


def _row_counts(conn: apsw.Connection, schema: str = "main") -> dict[str, int]:
    """Rows in every real table (the shadow tables hold the FTS5 and vec0 indexes' data)."""
    tables = [
        name
        for name, sql in conn.execute(
            f"select name, sql from {schema}.sqlite_schema where type = 'table' order by name"
        )
        if not str(sql).upper().startswith("CREATE VIRTUAL")
    ]
    return {t: one_value(conn.execute(f'select count(*) from {schema}."{t}"')) for t in tables}


def _rekey_copy(tmp: Path, old: Key | None, new: Key | None) -> None:
    if old is None and new is None:
        return
    conn = apsw.Connection(str(tmp))
    try:
        apply_key(conn, old)
        conn.execute("select count(*) from sqlite_schema").fetchall()
        hexkey = new.secret.encode("utf-8").hex() if new is not None else ""
        if conn.pragma("hexrekey", hexkey) != "ok":
            raise LocalmemError("the cipher build could not change the key of the new file; nothing was changed")
    finally:
        conn.close()


def _verify(tmp: Path, key: Key | None, counts: dict[str, int], version: int) -> None:
    expected = "encrypted" if key is not None else "plain"
    if file_state(tmp) != expected:
        raise LocalmemError(f"the new file is not {expected}; nothing was changed")
    conn = apsw.Connection(str(tmp), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        if key is not None:
            apply_key(conn, key)
        problems = [row[0] for row in conn.execute("pragma integrity_check")]
        if problems != ["ok"]:
            raise LocalmemError(f"the new file failed its integrity check ({problems[0]}); nothing was changed")
        if int(conn.pragma("user_version")) != version or _row_counts(conn) != counts:
            raise LocalmemError("the new file does not hold the same rows as the store; nothing was changed")
    finally:
        conn.close()


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _size(path: Path) -> int:
    path = real_file(path)
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.is_file())
