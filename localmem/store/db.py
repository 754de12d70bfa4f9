"""The connection: apsw + sqlite-vec, WAL, foreign keys, migrations, meta."""

from __future__ import annotations

import contextlib
import datetime as dt
from pathlib import Path
from typing import Any, Callable, Iterator

import apsw

from ..errors import (
    EmbedderMismatchError,
    LocalmemError,
    NotALocalmemStoreError,
    SchemaTooNewError,
    StoreLockedError,
)
from .queries import migrations, q

MMAP_BYTES = 1 << 30

# Tables a localmem store has; a non-empty database without them is someone else's file.
_OUR_TABLES = {"meta", "sources", "messages", "units"}


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()


@contextlib.contextmanager
def busy_as_locked(path: str) -> Iterator[None]:
    """Turn SQLite's 'database is locked' into a :class:`StoreLockedError`."""
    try:
        yield
    except apsw.BusyError as exc:
        raise StoreLockedError(path) from exc


def connect(path: Path | str, busy_timeout_ms: int = 5000,
            tracer: Callable[[str, Any], None] | None = None) -> apsw.Connection:
    """Open (creating if needed) and migrate the store at ``path``."""
    spath = str(path)
    if spath != ":memory:":
        p = Path(spath)
        if p.is_dir():
            raise NotALocalmemStoreError(spath, "it is a directory")
        p.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = apsw.Connection(spath)
    except apsw.CantOpenError as exc:
        raise LocalmemError(f"cannot open {spath}: {exc}; check the path and its permissions") from exc
    try:
        conn.set_busy_timeout(busy_timeout_ms)
        with busy_as_locked(spath):
            conn.execute("select count(*) from sqlite_schema").fetchall()
            # Refuse someone else's file or a newer schema before anything (even WAL) changes it.
            _refuse_foreign(conn, spath)
            _wal(conn)
        conn.pragma("foreign_keys", "ON")
        # Memory-mapped reads: the vector scan reads every vector; mmap cut it 25% at 100K.
        conn.pragma("mmap_size", MMAP_BYTES)
        # Double quotes are for identifiers only (apsw's best practice; its module costs 15 ms to import).
        conn.config(apsw.SQLITE_DBCONFIG_DQS_DML, 0)
        conn.config(apsw.SQLITE_DBCONFIG_DQS_DDL, 0)
        _load_sqlite_vec(conn)
        if tracer is not None:
            conn.exec_trace = lambda cursor, sql, bindings: (tracer(sql, bindings), True)[1]
        with busy_as_locked(spath):
            migrate(conn, spath)
            ensure_codes(conn)
    except apsw.NotADBError as exc:
        conn.close()
        raise NotALocalmemStoreError(spath, "not an SQLite database") from exc
    except BaseException:
        conn.close()
        raise
    return conn


def _wal(conn: apsw.Connection) -> None:
    """Write-ahead logging, unless the file is read-only."""
    try:
        if not conn.readonly("main"):
            conn.pragma("journal_mode", "wal")
    except apsw.ReadOnlyError:
        pass


def _load_sqlite_vec(conn: apsw.Connection) -> None:
    try:
        import sqlite_vec
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise LocalmemError("sqlite-vec is not installed; run: pip install sqlite-vec") from exc
    conn.enable_load_extension(True)
    try:
        conn.load_extension(sqlite_vec.loadable_path())
    finally:
        conn.enable_load_extension(False)
    conn.execute("select vec_version()").fetchall()
    conn.create_scalar_function("localmem_int8", int8_code, 1, deterministic=True)


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


def _refuse_foreign(conn: apsw.Connection, path: str) -> int:
    """The schema version; raises if the file is newer than we know or is not ours."""
    current = schema_version(conn)
    newest = latest_version()
    if current > newest:
        raise SchemaTooNewError(path, current, newest)
    if current == 0:
        tables = {r[0] for r in conn.execute("select name from sqlite_schema where type='table'")}
        if tables and not _OUR_TABLES <= tables:
            raise NotALocalmemStoreError(path, f"it has other tables: {', '.join(sorted(tables)[:5])}")
    return current


def migrate(conn: apsw.Connection, path: str = "") -> list[str]:
    """Apply pending migrations, each in one transaction with its ``user_version`` bump."""
    current = _refuse_foreign(conn, path)
    applied = []
    for version, name, sql in migrations():
        if version <= current:
            continue
        with conn:
            conn.execute(sql)
            conn.pragma("user_version", version)
        applied.append(name)
    return applied


def get_meta(conn: apsw.Connection, key: str) -> str | None:
    row = conn.execute(q("meta_get"), {"key": key}).fetchone()
    return row[0] if row else None


def set_meta(conn: apsw.Connection, key: str, value: str) -> None:
    conn.execute(q("meta_set"), {"key": key, "value": value})


def all_meta(conn: apsw.Connection) -> dict[str, str]:
    return dict(conn.execute(q("meta_all")).fetchall())


def check_embedder(conn: apsw.Connection, model_id: str, dim: int | None) -> bool:
    """True if the store is bound to this embedder, False if it is bound to none yet.

    Raises :class:`EmbedderMismatchError` if it is bound to another one.
    """
    stored_id = get_meta(conn, "embed_model_id")
    if stored_id is None:
        return False
    stored_dim = int(get_meta(conn, "embed_dim") or 0)
    if stored_id != model_id or (dim is not None and dim != stored_dim):
        raise EmbedderMismatchError(stored_id, stored_dim, model_id, dim)
    return True


def bind_embedder(conn: apsw.Connection, model_id: str, dim: int) -> None:
    """Record the embedder and create the vector indexes of its dimension (in a transaction)."""
    if not isinstance(dim, int) or not 0 < dim <= 8192:
        raise LocalmemError(f"embedder dimension {dim!r} is not a sensible vector size")
    # DDL cannot take bound parameters; `dim` is a validated int, never user text.
    conn.execute(q("vec_create").replace("{dim}", str(dim)))
    conn.execute(q("codes_create"))
    conn.execute(q("parts_vec_create").replace("{dim}", str(dim)))
    set_meta(conn, "embed_model_id", model_id)
    set_meta(conn, "embed_dim", str(dim))
    set_meta(conn, "embed_bound_at", now_iso())


def unbind_embedder(conn: apsw.Connection) -> None:
    conn.execute(q("vec_drop"))
    conn.execute(q("meta_delete"), {"key": "embed_model_id"})
    conn.execute(q("meta_delete"), {"key": "embed_dim"})


def ensure_codes(conn: apsw.Connection) -> None:
    """Give a store bound before the binary codes (or the part vectors) existed its codes and
    the part tables (once, in a transaction)."""
    if not has_vectors(conn):
        return
    if conn.execute(q("codes_exist")).fetchone() is None:
        with conn:
            conn.execute(q("codes_create"))
            conn.execute(q("codes_backfill"))
    elif conn.execute(q("codes_int8_exist")).fetchone() is None:
        with conn:
            conn.execute(q("codes_add_int8"))
    dim = int(get_meta(conn, "embed_dim") or 0)
    if dim and conn.execute(q("parts_vec_exists")).fetchone() is None:
        # Bound before migration 0008: its messages have no parts until `localmem reembed`.
        with conn:
            conn.execute(q("parts_vec_create").replace("{dim}", str(dim)))


def has_vectors(conn: apsw.Connection) -> bool:
    return conn.execute(q("vec_exists")).fetchone() is not None
