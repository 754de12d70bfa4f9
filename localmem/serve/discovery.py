"""How the command line finds a running ``localmem serve`` of its own store and namespace.

A server listening on a loopback address leaves a discovery file in the user's private runtime
dir (:func:`~localmem.config.runtime_dir`), named after the store file's device and inode and
the namespace, so that every path to the same file (a symlink, a relative path) finds the same
server. The file holds the server's pid, address, store, namespace, the answer-changing
settings it runs with, and a token good only for ``ask`` and ``search`` (never the store's key).
It is written atomically with mode 0600 in a 0700 dir, and removed when the server stops.

A PostgreSQL store (a ``postgresql://`` URL) has no file: its discovery file is named after the
URL without its password instead. Several processes may serve one such store (docs/postgres.md,
"Many processes"); the first to start announces itself and the others do not (each answers its
own port), and the command line asks the one announced.

Reading it trusts nothing it was not sure of: a dir or file that is a symlink, not the user's
own, or open to others; a file that names another store, a non-loopback host or a dead process
is ignored (a stale one of the user's own is removed). The client then makes the server prove
it holds the token (:mod:`localmem.serve.client`) before it sends a question.

Only the standard library: the command line reads this before anything heavy is imported.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import stat
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Mapping

from ..config import Config, StoreLocation, StoreURL, as_location, runtime_dir, settings

VERSION = 1
MAX_BYTES = 64 * 1024
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_POSIX = hasattr(os, "geteuid")

# Settings that never change what ask or search return: a server run with other values still
# answers as this process would. Every other setting must be the same (a new setting counts
# until it is listed here: answering locally is never wrong, only slower).
NEUTRAL = frozenset(
    {
        "db_path",
        "namespace",
        "key_env",
        "use_server",
        "extract",
        "consolidate",
        "verify_facts",
        "ingest_batch",
        "busy_timeout_ms",
        "max_message_chars",
        "max_input_bytes",
        "notes_author",
        "date_order",
        "llm_workers",
        "llm_timeout",
        "llm_api_key_env",
        "embed_batch",
        "serve_token_env",
    }
)


class Untrusted(Exception):
    """A discovery file (or its dir) that must not be used; the message says why, in one line."""


@dataclass(frozen=True)
class Discovery:
    """What a running server says of itself."""

    pid: int
    host: str
    port: int
    store: str  # the store's resolved path, for messages (the device and inode identify it)
    device: int
    inode: int
    namespace: str
    token: str  # good for ask and search only (security.Guard.cli_token)
    settings: dict[str, str]
    version: int = VERSION

    @property
    def address(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def answer_settings(config: Config) -> dict[str, str]:
    """The settings that change an answer (all but :data:`NEUTRAL`), as text to compare; a
    file is named by its absolute path (``./model.gguf`` in two dirs is two files)."""
    return {name: _comparable(getattr(config, name)) for name in settings() if name not in NEUTRAL}


def _comparable(value: Any) -> str:
    if isinstance(value, Path) or (isinstance(value, str) and os.path.exists(value)):
        return os.path.abspath(value)
    return str(value)


def differing(mine: Mapping[str, str], theirs: Mapping[str, str]) -> list[str]:
    """The names of the settings whose values differ (or that one side lacks)."""
    return sorted(name for name in set(mine) | set(theirs) if mine.get(name) != theirs.get(name))


def identity(db_path: StoreLocation | str) -> tuple[str, int, int]:
    """The store as messages name it, and the two numbers that identify it: a file's device
    and inode (every path to the same file the same); for a PostgreSQL URL, 0 and a number
    made from the URL without its password (one database, named by one URL). Raises OSError
    for a file that is not there."""
    found = as_location(db_path)
    if isinstance(found, StoreURL):
        return found.identity()
    real = Path(os.path.realpath(found))
    st = os.stat(real)
    return str(real), st.st_dev, st.st_ino


def file_for(device: int, inode: int, namespace: str, folder: Path | None = None) -> Path:
    """The discovery file of the store with this device and inode, and this namespace."""
    key = hashlib.sha256(f"{device}:{inode}\0{namespace}".encode()).hexdigest()[:32]
    return (folder or runtime_dir()) / f"serve-{key}.json"


def path_of(found: Discovery) -> Path:
    """Where ``found`` was read from."""
    return file_for(found.device, found.inode, found.namespace)


def is_loopback(host: str) -> bool:
    """An IP address of this machine only (127.0.0.0/8, ::1); a name is not, since it may resolve
    to anything."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


# -- the server's side -------------------------------------------------------------------------


def announce(
    db_path: StoreLocation, namespace: str, host: str, port: int, token: str, answer: Mapping[str, str]
) -> Path | None:
    """Write the discovery file of a server listening on ``host``:``port``; its path, or None
    when there is nothing to announce (a non-loopback address, or another live server of the
    same store and namespace already announced). Raises :class:`Untrusted` or OSError when the
    runtime dir cannot be made private."""
    host = "127.0.0.1" if host == "localhost" else host.strip("[]")
    if not is_loopback(host):
        return None
    store, device, inode = identity(db_path)
    folder = _private_folder(create=True)
    path = file_for(device, inode, namespace, folder)
    try:
        other = read(path)
    except (Untrusted, OSError):
        other = None
    if other is not None and other.pid != os.getpid() and _alive(other.pid):
        return None
    found = Discovery(os.getpid(), host, port, store, device, inode, namespace, token, dict(answer))
    temporary = path.parent / f".{path.name}.{os.getpid()}.tmp"
    temporary.unlink(missing_ok=True)
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(asdict(found), out)
        os.replace(temporary, path)  # atomic: a reader sees the whole file or none
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return path


def withdraw(path: Path, token: str) -> None:
    """Remove the discovery file at ``path`` if it is still this server's (another server of the
    same store may have replaced it since)."""
    try:
        found = read(path)
    except (Untrusted, OSError):
        return
    if found is not None and found.token == token:
        path.unlink(missing_ok=True)


def _private_folder(create: bool = False) -> Path | None:
    """The runtime dir, when it is a real dir of this user's that nobody else may enter (None:
    it does not exist). ``create``: make it (0700) if missing, and close it if open to others."""
    folder = runtime_dir()
    if create:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        return None
    if not stat.S_ISDIR(st.st_mode):
        raise Untrusted(f"{folder} is not a directory (a symlink?)")
    if _POSIX:
        if st.st_uid != os.geteuid():
            raise Untrusted(f"{folder} belongs to another user")
        if st.st_mode & 0o077:
            if not create:
                raise Untrusted(f"{folder} is open to other users (mode {stat.S_IMODE(st.st_mode):o})")
            os.chmod(folder, 0o700)
    return folder


# -- the command line's side -------------------------------------------------------------------


def find(db_path: StoreLocation, namespace: str) -> Discovery | None:
    """The running server of this store and namespace, or None (no store, no server, or a
    stale file, which is removed). Raises :class:`Untrusted` (say why, then answer locally)."""
    try:
        _store, device, inode = identity(db_path)
    except OSError:
        return None
    folder = _private_folder()
    if folder is None:
        return None
    path = file_for(device, inode, namespace, folder)
    found = read(path)
    if found is None:
        return None
    if (found.device, found.inode, found.namespace) != (device, inode, namespace):
        raise Untrusted(f"{path} names another store or namespace ({found.store}, {found.namespace!r})")
    if not _alive(found.pid):
        forget(path, found)
        return None
    return found


def forget(path: Path, found: Discovery) -> None:
    """Remove a stale discovery file, unless a new server replaced it in the meantime."""
    try:
        if read(path) == found:
            path.unlink(missing_ok=True)
    except (Untrusted, OSError):
        pass


def read(path: Path) -> Discovery | None:
    """The discovery file at ``path`` (None when there is none), checked: a regular file, not a
    symlink, this user's own, unreadable by others, well formed, naming a loopback address."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Untrusted(f"cannot open {path} ({exc.strerror}; a symlink?)") from None
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise Untrusted(f"{path} is not a regular file")
        if _POSIX and st.st_uid != os.geteuid():
            raise Untrusted(f"{path} belongs to another user")
        if _POSIX and st.st_mode & 0o077:
            raise Untrusted(f"{path} is open to other users (mode {stat.S_IMODE(st.st_mode):o})")
        raw = handle.read(MAX_BYTES + 1)
    if len(raw) > MAX_BYTES:
        raise Untrusted(f"{path} is too large for a discovery file")
    try:
        found = _parse(json.loads(raw))
    except (ValueError, TypeError, KeyError) as exc:
        raise Untrusted(f"{path} is not a discovery file ({exc})") from None
    if not is_loopback(found.host):
        raise Untrusted(f"{path} names {found.host}, not a loopback address")
    return found


def _parse(data: Any) -> Discovery:
    if not isinstance(data, dict) or data.get("version") != VERSION:
        raise ValueError("unknown version")
    kinds = {"pid": int, "host": str, "port": int, "store": str, "device": int, "inode": int}
    kinds |= {"namespace": str, "token": str, "settings": dict, "version": int}
    values = {}
    for f in fields(Discovery):
        value = data[f.name]
        if not isinstance(value, kinds[f.name]) or isinstance(value, bool):
            raise TypeError(f"{f.name} is not {kinds[f.name].__name__}")
        values[f.name] = value
    if not 1 <= values["port"] <= 65535 or values["pid"] < 1 or len(values["token"]) < 16:
        raise ValueError("port, pid or token out of range")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in values["settings"].items()):
        raise TypeError("settings are not text")
    return Discovery(**values)


def _alive(pid: int) -> bool:
    """Whether this user's process ``pid`` runs (another user's is not the server: ours died)."""
    if not _POSIX:  # os.kill(pid, 0) would stop it on Windows; the connection tells instead
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False
    return True
