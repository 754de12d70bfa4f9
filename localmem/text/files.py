"""Reading input files as text, with errors that say what to do; text that cannot be stored."""

from __future__ import annotations

import codecs
import os
import re
import stat
from pathlib import Path
from typing import Any, BinaryIO, Callable

from ..config import DEFAULTS
from ..errors import InputError, InvalidTextError

_KINDS = {
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def read_input(
    path: Path, limit: int = DEFAULTS.max_input_bytes, *, follow: bool = True, same_as: tuple[int, int] | None = None
) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them, with clear errors for
    missing files, directories and unreadable files.

    Anything but a regular file is refused before it is read: opening a FIFO waits for a writer
    that may never come, and ``/dev/zero`` never ends. The check is made again on the opened
    file (opened without blocking), so a path swapped in between cannot slip through.

    A folder's walk reads each file it saw, and only that one: ``follow`` false opens ``path``
    without following a symbolic link (a file swapped for a link since is refused), and
    ``same_as`` (device, inode) is the file the walk saw, which the opened file must be."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from exc
    if stat.S_ISDIR(mode):
        raise InputError(path, "is a directory", hint="pass a file (one conversation export)")
    _regular(path, mode)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if not follow and os.path.islink(path):  # ELOOP: it became a link after the walk
            raise InputError(path, "was replaced by a symbolic link while the folder was read; not followed") from exc
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from exc
    with os.fdopen(fd, "rb") as fh:
        opened = os.fstat(fh.fileno())
        _regular(path, opened.st_mode)
        if same_as is not None and (opened.st_dev, opened.st_ino) != same_as:
            raise InputError(path, "was replaced by another file while the folder was read; not read")
        try:
            data = fh.read(limit + 1)
        except OSError as exc:
            raise InputError(path, f"cannot read: {exc.strerror or exc}") from exc
    if len(data) > limit:
        raise InputError(
            path,
            f"is larger than {limit:,} bytes (the max_input_bytes setting)",
            hint="split it, or raise max_input_bytes",
        )
    return data


def read_stream(stream: BinaryIO, name: str, limit: int = DEFAULTS.max_input_bytes) -> bytes:
    """At most ``limit`` bytes of ``stream`` (standard input), refusing more."""
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise InputError(
            name,
            f"holds more than {limit:,} bytes (the max_input_bytes setting)",
            hint="split it, or raise max_input_bytes",
        )
    return data


def _regular(path: Path, mode: int) -> None:
    if not stat.S_ISREG(mode):
        kind = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
        raise InputError(path, f"is {kind}, not a regular file", hint="save what it holds to a file and ingest that")


def decode(path: Path, data: bytes) -> str:
    """UTF-8 (with or without BOM) or BOM-marked UTF-16 text."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise InputError(path, f"invalid UTF-16 at byte {exc.start}") from exc
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            path,
            f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "convert it first, e.g. iconv -f latin1 -t utf-8",
            where=f"line {line}",
        ) from exc


# A code point of a UTF-16 surrogate pair standing alone. Valid UTF-8 and UTF-16 text cannot
# hold one (the decoders refuse it), but JSON can ("\ud83d" is half of an emoji, as exports that
# cut strings by UTF-16 units write it), and so can a command-line argument that was not UTF-8
# (Python keeps such bytes as surrogates). SQLite, the tokenizers and the UTF-8 codec refuse it.
_SURROGATE = re.compile("[\ud800-\udfff]")
# In JSON text: a \u escape of a surrogate (pairs too; they are joined when parsed).
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def has_surrogates(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (it cannot be stored or embedded as it is)."""
    return _SURROGATE.search(text) is not None


def without_surrogates(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD, the replacement character."""
    return _SURROGATE.sub("\ufffd", text)


def without_nuls(value: Any) -> tuple[Any, int]:
    """``value`` (text, or JSON data: lists, objects, their keys too) with every NUL character
    (U+0000) taken out, and how many there were: the one rule for NUL in what is imported.

    PostgreSQL text cannot hold a NUL (nor jsonb its escape), and SQLite's C string functions end
    text at one; no chat app types it. Recursive: for values whose depth the JSON reader bounded."""
    return each_string(value, lambda s: (s.replace("\x00", ""), s.count("\x00")) if "\x00" in s else (s, 0))


def each_string(value: Any, fix: Callable[[str], tuple[str, int]]) -> tuple[Any, int]:
    """``value`` with ``fix`` applied to every string in it (dict keys too), and the sum of the
    counts ``fix`` returned. Recursive: only for values whose depth the JSON reader bounded."""
    if isinstance(value, str):
        return fix(value)
    if isinstance(value, list):
        done = [each_string(v, fix) for v in value]
        return [v for v, _ in done], sum(n for _, n in done)
    if isinstance(value, dict):
        out, total = {}, 0
        for key, item in value.items():
            new_key, a = each_string(key, fix)
            out[new_key], b = each_string(item, fix)
            total += a + b
        return out, total
    return value, 0


def check_namespace(name: object, what: str = "the namespace") -> str:
    """``name`` when it can name a namespace, on every engine and interface, else a one-line
    :class:`~localmem.errors.ConfigError`: non-empty, kept exactly as given (so white space at
    either end is refused, not trimmed: ``grant r "  bob  "`` would otherwise grant ``bob`` while
    a Memory of ``"  bob  "`` writes elsewhere), no NUL or lone surrogate, and at most
    :data:`~localmem.config.MAX_NAMESPACE_CHARS` characters."""
    from ..config import MAX_NAMESPACE_CHARS
    from ..errors import ConfigError

    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{what} must be a non-empty name")
    check_storable(what, name)
    if len(name) > MAX_NAMESPACE_CHARS:
        raise ConfigError(
            f"{what} has {len(name):,} characters, over the limit of {MAX_NAMESPACE_CHARS}", "choose a shorter name"
        )
    if "\x00" in name:
        raise ConfigError(f"{what} holds a NUL character (U+0000), which no name may hold", "remove it")
    if name != name.strip():
        raise ConfigError(
            f"{what} {name!r} begins or ends with white space (namespaces are kept exactly as given)",
            f"did you mean {name.strip()!r}?",
        )
    return name


def check_storable(what: str, text: str | None) -> None:
    """Refuse text that cannot be stored, a lone surrogate (:class:`~localmem.errors.InvalidTextError`
    naming ``what``: "the speaker", "the namespace"…); ``None`` passes."""
    if isinstance(text, str) and has_surrogates(text):
        raise InvalidTextError(what, text)
