"""Owner-only files and directories.

Everything localmem creates holds someone's conversations or is next to them: the store, its
WAL and SHM (SQLite gives those the store's own mode), exports, and the data and cache
directories. Each is created readable by its owner only (0600, directories 0700) whatever the
umask. Files and directories that already exist keep the mode their owner gave them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO

FILE_MODE = 0o600
DIR_MODE = 0o700


def private_dir(path: Path) -> Path:
    """Create ``path`` and any of its missing parents as owner-only directories."""
    missing = []
    at = Path(path)
    while not at.exists() and at != at.parent:
        missing.append(at)
        at = at.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=DIR_MODE)
        except FileExistsError:  # made meanwhile by another process
            continue
        os.chmod(directory, DIR_MODE)  # exactly 0700: a umask such as 0277 would leave it unusable
    return Path(path)


def private_file(path: Path) -> bool:
    """Create ``path`` empty and owner-only if it does not exist; True if this call created it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return False
    os.close(fd)
    os.chmod(path, FILE_MODE)
    return True


def open_private(path: Path, encoding: str = "utf-8") -> IO[str]:
    """Open ``path`` for writing text, created (or emptied) with owner-only permissions."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    if hasattr(os, "fchmod"):  # an existing file keeps its mode otherwise (not on Windows)
        os.fchmod(fd, FILE_MODE)
    return os.fdopen(fd, "w", encoding=encoding)


def real_file(path: str | Path) -> Path:
    """The file ``path`` names once every symbolic link in it is followed. A command that
    replaces or measures the store file works on this one: SQLite opens the real file and keeps
    its WAL and journal beside it, and renaming a new file over a link would replace the link,
    leaving the file it pointed to as it was."""
    return Path(os.path.realpath(path))
