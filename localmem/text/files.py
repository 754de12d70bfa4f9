"""Reading input files as text, with errors that say what to do."""

from __future__ import annotations

import codecs
from pathlib import Path

from ..errors import InputError


def read_input(path: Path) -> bytes:
    """The file's bytes, with clear errors for missing files, directories and unreadable files."""
    if not path.exists():
        raise InputError(path, "no such file")
    if path.is_dir():
        raise InputError(path, "is a directory; pass a file (one conversation export)")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from exc


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
            path, f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "convert it first, e.g. iconv -f latin1 -t utf-8", where=f"line {line}") from exc
