"""Encrypted stores: encrypted from the first page, the passphrase written nowhere, one-line
errors that touch nothing, encrypt / rekey / decrypt that survive SIGKILL at every step.

The rest of the suite proves an encrypted store behaves like a plain one (run it with
``pytest --stores=encrypted``); these tests choose their own keys and run once. Tests that need
the cipher build of apsw skip without it, and the one test of its absence skips with it: CI
runs the suite both ways (see .ci/run).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import traceback
from pathlib import Path

import pytest

from localmem import Memory
from localmem.cli import cli
from localmem.config import Config, Key, read_key
from localmem.errors import (
    CipherBuildMissingError,
    ConfigError,
    KeyRequiredError,
    LocalmemError,
    NotEncryptedError,
    StoreLockedError,
    WrongKeyError,
)
from localmem.store import cipher
from tests.conftest import FIXTURES
from tests.fakes import HashEmbedder, ScriptedLLM
from tests.helpers import (
    REPO,
    assert_one_line_error,
    runner,
    sigkill_when,
    snapshot,
    write_jsonl,
)

pytestmark = [pytest.mark.own_keys, pytest.mark.plain_stores]
needs_cipher = pytest.mark.skipif(
    cipher.cipher_version() is None, reason="needs the cipher build of apsw: pip install 'localmem[encrypt]'"
)
needs_plain_build = pytest.mark.skipif(
    cipher.cipher_version() is not None, reason="checks the plain build's error: run without the cipher build"
)

PASS = "Tr0ub4dor&3 horse-battery-STAPLE"
NEW = "an entirely different passphrase, \u00e9t\u00e9 2024"
MARKER = "QUOKKAMARKER"
FIXTURE = FIXTURES / "encrypted-store.db"  # made by the cipher build, key "fixture passphrase"


def rows(n: int, marker: str = MARKER) -> list[dict]:
    return [
        {
            "conversation": "c",
            "id": f"m{i}",
            "speaker": "Ana" if i % 2 else "Ben",
            "text": f"{marker} number {i}: we talked about the lighthouse in Oslo and topic{i}.",
            "time": f"2024-03-{1 + i % 28:02d}T10:{i % 60:02d}:00",
        }
        for i in range(n)
    ]


def copies(path: Path, needle: str | bytes) -> int:
    """How often ``needle`` appears in the store's file and in its WAL (what ``grep -a`` sees)."""
    data = needle.encode("utf-8") if isinstance(needle, str) else needle
    return sum(p.read_bytes().count(data) for p in (path, Path(f"{path}-wal")) if p.exists())


def fingerprint(path: Path) -> dict[str, str]:
    """The bytes of the store and of every side file next to it."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.parent.iterdir())
        if p.name.startswith(path.name)
    }


def cli_run(args: list[str], env: dict[str, str] | None = None):
    return runner().invoke(cli, args, env=env)


def plain_store(path: Path, n: int = 40) -> Path:
    with Memory(path, namespace="t", embedder=HashEmbedder()) as mem:
        mem.ingest(write_jsonl(path.parent / f"{path.stem}.jsonl", rows(n)))
    return path


# -- what a file is, and the key's plumbing (any build) -----------------------------------------


def test_file_state_tells_new_plain_encrypted_and_other_files(tmp_path):
    assert cipher.file_state(tmp_path / "missing.db") == "new"
    (tmp_path / "empty.db").write_bytes(b"")
    assert cipher.file_state(tmp_path / "empty.db") == "new"
    assert cipher.file_state(plain_store(tmp_path / "plain.db", 2)) == "plain"
    assert cipher.file_state(FIXTURE) == "encrypted"
    (tmp_path / "text.db").write_bytes(b"just some text that is long enough to have a header\n" * 4)
    assert cipher.file_state(tmp_path / "text.db") == "unknown"
    (tmp_path / "noise.db").write_bytes(os.urandom(4096))
    assert cipher.file_state(tmp_path / "noise.db") == "unknown"  # 1 in 2^30 noise passes the header check


def test_the_passphrase_never_shows_in_a_key_or_a_config_error():
    key = Key(PASS, "the passphrase in $X")
    assert PASS not in repr(key) and PASS not in str(key) and "$X" in str(key)
    with pytest.raises(ConfigError, match="is not set"):
        read_key("LOCALMEM_TEST_UNSET_VAR", env={})
    with pytest.raises(ConfigError, match="is empty"):
        read_key("V", env={"V": ""})
    assert read_key("V", env={"V": PASS}).secret == PASS
    # the passphrase given where the variable's name goes is refused without being echoed
    with pytest.raises(ConfigError) as info:
        Config.load({"key_env": PASS}, env={})
    assert PASS not in str(info.value) and "name of an environment variable" in str(info.value)
    with pytest.raises(ConfigError):
        Key("")
    assert Config.load({}, env={"LOCALMEM_KEY_ENV": "MY_KEY"}).key(env={"MY_KEY": PASS}).secret == PASS


def test_doctor_says_which_build_is_loaded_and_whether_the_store_is_encrypted(tmp_path):
    with Memory(plain_store(tmp_path / "p.db", 2), embedder=HashEmbedder()) as mem:
        report = mem.admin.doctor().encryption
        assert report["store"] == "not encrypted" and not mem.stats().encrypted
    assert report["loaded"] == ("cipher" if cipher.cipher_version() else "plain")
    assert report["sqlite3mc"] == cipher.cipher_version()


# -- without the cipher build ---------------------------------------------------------------------


@needs_plain_build
def test_without_the_cipher_build_a_key_is_one_clear_error_and_nothing_is_written(tmp_path):
    new = tmp_path / "new.db"
    with pytest.raises(CipherBuildMissingError, match="pip install --force-reinstall --no-deps apsw-sqlite3mc"):
        Memory(new, embedder=HashEmbedder(), key=PASS)
    assert not new.exists()  # refused before SQLite created the file

    store = tmp_path / "enc.db"
    shutil.copy(FIXTURE, store)
    before = fingerprint(store)
    result = cli_run(["--db", str(store), "--key-env", "K", "stats"], env={"K": "fixture passphrase"})
    err = assert_one_line_error(result, code=CipherBuildMissingError.exit_code)
    assert "needs the cipher build of apsw" in err and "apsw-sqlite3mc" in err
    err = assert_one_line_error(cli_run(["--db", str(store), "stats"]), code=KeyRequiredError.exit_code)
    assert "is encrypted" in err and "--key-env" in err
    assert fingerprint(store) == before


# -- with the cipher build --------------------------------------------------------------------------


@needs_cipher
def test_a_new_keyed_store_is_encrypted_from_its_first_page(tmp_path):
    path = tmp_path / "m.db"
    with Memory(path, namespace="t", embedder=HashEmbedder(), key=PASS) as mem:
        mem.ingest(write_jsonl(tmp_path / "in.jsonl", rows(60)))
        mem.add("Ana", f"{MARKER} the last one, added alone", id="last")
        assert Path(f"{path}-wal").stat().st_size > 0  # the new pages are in the WAL now
        assert copies(path, MARKER) == 0 and copies(path, "lighthouse") == 0
        assert [h.sources[0].external_id for h in mem.search("added alone", k=1)] == ["last"]
        assert mem.admin.encrypted and mem.stats().encrypted
        assert mem.admin.doctor().encryption["store"].startswith("encrypted (chacha20")
    assert copies(path, MARKER) == 0  # nor after the last close folded the WAL into the file
    assert path.read_bytes()[:16] != cipher.PLAIN_MAGIC and cipher.file_state(path) == "encrypted"
    assert copies(path, PASS) == 0 and copies(path, PASS.encode().hex()) == 0
    # the same writes on a plain store show the marker: the count above could fail
    assert copies(plain_store(tmp_path / "plain.db", 60), MARKER) >= 60


@needs_cipher
def test_the_fixture_store_still_opens_with_its_passphrase(tmp_path):
    """Guards the fixed cipher settings: a change of cipher or rounds would lock out every store.
    Opened as a copy: opening migrates a store, which must not rewrite the repository's file."""
    store = tmp_path / "fixture.db"
    shutil.copy(FIXTURE, store)
    with Memory(store, embedder=HashEmbedder(), key="fixture passphrase") as mem:
        meta = mem.admin.doctor().db["meta"]
    assert meta["fixture"] == "FIXTUREMARKER an encrypted store"
    assert copies(store, "FIXTUREMARKER") == 0


@needs_cipher
def test_the_cli_takes_the_key_from_the_variable_named_by_flag_env_or_config(tmp_path, use_models, isolated_home):
    use_models(embedder=HashEmbedder())
    db = tmp_path / "m.db"
    env = {"MY_KEY": PASS}
    assert (
        cli_run(["--db", str(db), "--key-env", "MY_KEY", "add", "Ana", f"{MARKER} moved to Oslo"], env=env).exit_code
        == 0
    )
    found = cli_run(["--db", str(db), "search", "Oslo", "--json"], env={**env, "LOCALMEM_KEY_ENV": "MY_KEY"})
    assert found.exit_code == 0 and MARKER in found.output
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text('key_env = "MY_KEY"\n', encoding="utf-8")
    stats = cli_run(["--db", str(db), "stats", "--json"], env=env)
    assert stats.exit_code == 0 and json.loads(stats.output)["encrypted"] is True
    assert copies(db, MARKER) == 0


@needs_cipher
def test_the_passphrase_is_written_nowhere(tmp_path, use_models):
    """A whole session (every store command, errors with --debug tracebacks included): neither
    passphrase, nor its hex form, is in any output or in any file under the test's directory."""
    llm = ScriptedLLM(responder=lambda messages: {"answer": "Oslo", "supports": [1], "confidence": 0.9})
    use_models(embedder=HashEmbedder(), llm=llm)
    db, other, out = tmp_path / "m.db", tmp_path / "other.db", tmp_path / "export.jsonl"
    data = write_jsonl(tmp_path / "in.jsonl", rows(30))
    env = {"K": PASS, "K2": NEW, "WRONG": "not it"}
    base = ["--db", str(db), "--key-env", "K"]
    session = [
        base + ["ingest", str(data)],
        base + ["add", "Ana", "I live in Oslo now."],
        base + ["search", "lighthouse"],
        base + ["ask", "Where does Ana live?"],
        base + ["stats", "--json"],
        base + ["doctor", "--json"],
        base + ["namespaces"],
        base + ["export", "-o", str(out)],
        ["--db", str(other), "--key-env", "K2", "import", str(out)],
        base + ["forget", "--namespace", "default", "--yes"],
        base + ["rekey", "--new-key-env", "K2"],
        ["--db", str(db), "--key-env", "K2", "decrypt"],
        ["--db", str(db), "--key-env", "K", "encrypt"],
        ["--db", str(db), "--key-env", "WRONG", "--debug", "stats"],  # a traceback
        ["--db", str(db), "--key-env", "WRONG", "stats"],
        ["--db", str(db), "stats"],
        ["--db", str(db), "--key-env", "K2", "stats"],
    ]
    printed = []
    for args in session:
        result = cli_run(args, env=env)
        failed = result.exc_info and not isinstance(result.exception, SystemExit)
        trace = "".join(traceback.format_exception(*result.exc_info)) if failed else ""
        printed.append(result.output + (result.stderr or "") + trace)
    assert '"encrypted": true' in printed[4]
    text = "\n".join(printed)
    assert "Oslo" in text and "does not open it" in text and "Traceback" in text  # the session ran
    for secret in (PASS, NEW):
        forms = [secret.encode(), secret.encode().hex().encode(), secret.encode().hex().upper().encode()]
        assert not any(f.decode() in text for f in forms)
        for path in tmp_path.rglob("*"):
            if path.is_file():
                content = path.read_bytes()
                assert not any(f in content for f in forms), path


CASES = {
    # name: (store kind, key variable given, exit code, what the message says)
    "wrong key": ("encrypted", "WRONG", WrongKeyError.exit_code, "does not open it"),
    "missing key": ("encrypted", None, KeyRequiredError.exit_code, "name the environment variable"),
    "key for a plain store": ("plain", "K", NotEncryptedError.exit_code, "is not encrypted, yet a key was given"),
    "unset variable": ("encrypted", "UNSET", ConfigError.exit_code, "UNSET is not set"),
    "passphrase given as the variable": (
        "encrypted",
        "my pass phrase",
        ConfigError.exit_code,
        "not the passphrase itself",
    ),
}


@needs_cipher
@pytest.mark.parametrize("case", sorted(CASES))
def test_key_errors_are_one_line_and_touch_nothing(tmp_path, use_models, case):
    use_models(embedder=HashEmbedder())
    kind, var, code, said = CASES[case]
    db = tmp_path / "m.db"
    with Memory(db, namespace="t", embedder=HashEmbedder(), key=PASS if kind == "encrypted" else None) as mem:
        mem.add("Ana", f"{MARKER} before the error")
    before = fingerprint(db)
    env = {"K": PASS, "WRONG": "wrong-secret-value"}
    # (encrypt opens the store without a key, so none of these cases is its error: tested below)
    for command in (
        ["stats"],
        ["add", "Ben", "never stored"],
        ["search", "error"],
        ["export"],
        ["rekey", "--new-key-env", "K"],
        ["decrypt"],
    ):
        args = ["--db", str(db)] + (["--key-env", var] if var else []) + ["-n", "t", *command]
        err = assert_one_line_error(cli_run(args, env=env), code=code)
        assert said in err, (command, err)
        assert PASS not in err and "wrong-secret-value" not in err
    assert fingerprint(db) == before
    with Memory(db, namespace="t", embedder=HashEmbedder(), key=PASS if kind == "encrypted" else None) as mem:
        assert [m.messages for m in mem.namespaces()] == [1]


@needs_cipher
def test_a_wrong_key_next_to_a_writer_damages_nothing(tmp_path):
    path = tmp_path / "m.db"
    with Memory(path, namespace="t", embedder=HashEmbedder(), key=PASS) as writer:
        writer.add("Ana", "first")
        for wrong in ("not it", NEW, PASS + " "):
            with pytest.raises(WrongKeyError, match="does not open it"):
                Memory(path, embedder=HashEmbedder(), key=wrong)
        with pytest.raises(KeyRequiredError):
            Memory(path, embedder=HashEmbedder())
        writer.add("Ana", "second, after the failed opens")
    with Memory(path, namespace="t", embedder=HashEmbedder(), key=PASS) as mem:
        assert mem.stats().messages == 2
        assert mem.conn.execute("pragma integrity_check").fetchall() == [("ok",)]


# -- encrypt, rekey, decrypt --------------------------------------------------------------------------


@needs_cipher
def test_encrypt_rekey_decrypt_keep_every_row_and_only_the_right_key_opens(tmp_path, use_models):
    use_models(embedder=HashEmbedder())
    db = plain_store(tmp_path / "m.db")
    original = snapshot(db)
    assert copies(db, MARKER) >= 40
    env = {"K": PASS, "K2": NEW}

    done = cli_run(["--db", str(db), "--key-env", "K", "encrypt", "--json"], env=env)
    assert done.exit_code == 0, done.stderr
    report = json.loads(done.output)
    assert report["encrypted"] and report["rows"] > 40 and report["bytes_after"] > 0
    assert cipher.file_state(db) == "encrypted" and copies(db, MARKER) == 0
    assert snapshot(db, key=PASS) == original
    assert not list(tmp_path.glob("*.localmem-new*"))
    err = assert_one_line_error(cli_run(["--db", str(db), "--key-env", "K", "encrypt"], env=env), code=1)
    assert "already encrypted" in err

    same = cli_run(["--db", str(db), "--key-env", "K", "rekey", "--new-key-env", "K"], env=env)
    assert "already has" in assert_one_line_error(same, code=1)
    done = cli_run(["--db", str(db), "--key-env", "K", "rekey", "--new-key-env", "K2"], env=env)
    assert done.exit_code == 0 and "passphrase changed" in done.output, done.stderr
    with pytest.raises(WrongKeyError):
        Memory(db, embedder=HashEmbedder(), key=PASS)
    assert snapshot(db, key=NEW) == original and copies(db, MARKER) == 0

    done = cli_run(["--db", str(db), "--key-env", "K2", "decrypt"], env=env)
    assert done.exit_code == 0 and "decrypted" in done.output, done.stderr
    assert cipher.file_state(db) == "plain" and copies(db, MARKER) >= 40
    assert snapshot(db) == original
    err = assert_one_line_error(cli_run(["--db", str(db), "decrypt"], env=env), code=1)
    assert "not encrypted" in err
    usage = cli_run(["--db", str(db), "rekey"], env=env)
    assert usage.exit_code == 2 and "--new-key-env" in usage.output + usage.stderr


@needs_cipher
def test_the_api_encrypts_in_place_and_keeps_working(tmp_path):
    db = plain_store(tmp_path / "m.db")
    with Memory(db, namespace="t", embedder=HashEmbedder()) as mem:
        phases: list[str] = []
        mem.admin.encrypt(PASS, progress=phases.append)
        assert phases == ["copying", "rekeying", "verifying", "replacing", "replaced"]
        assert mem.admin.encrypted and cipher.file_state(db) == "encrypted"
        mem.add("Ana", f"{MARKER} written after encrypting")  # the Memory goes on, on the new file
        assert mem.search("written after encrypting", k=1)[0].text.endswith("written after encrypting")
        with pytest.raises(LocalmemError, match="already encrypted"):
            mem.admin.encrypt(NEW)
    assert copies(db, MARKER) == 0


@needs_cipher
def test_encrypt_is_refused_while_another_connection_has_the_store_open(tmp_path):
    db = plain_store(tmp_path / "m.db")
    before = snapshot(db)
    with Memory(db, namespace="t", embedder=HashEmbedder()) as holder:
        holder.search("lighthouse")
        with Memory(db, namespace="t", embedder=HashEmbedder(), config=Config(busy_timeout_ms=100)) as mem:
            with pytest.raises(StoreLockedError, match="is open in another connection") as info:
                mem.admin.encrypt(PASS)
            assert info.value.exit_code == 3
            assert not mem.admin.encrypted and mem.search("lighthouse")  # still usable, still plain
        holder.add("Ana", "the holder writes on")
    assert cipher.file_state(db) == "plain" and not list(tmp_path.glob("*.localmem-new*"))
    assert snapshot(db)["counts"]["messages"] == before["counts"]["messages"] + 1


# -- killed midway: the old store or the new one, never a broken file -------------------------------

_KILL_SCRIPT = """
import os, signal, sys, threading, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from localmem import Memory
from tests.fakes import HashEmbedder

path, op, point, marker = Path(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
old, new = os.environ.get("LM_OLD") or None, os.environ["LM_NEW"]
new_file = Path(f"{path}.localmem-new")

def watch(ready):  # kill this process from inside, mid-statement (apsw lets go of the GIL)
    while not ready():
        time.sleep(0.0005)
    os.kill(os.getpid(), signal.SIGKILL)

def progress(phase):
    if point == "mid-copy" and phase == "copying":
        threading.Thread(target=watch, args=(lambda: new_file.exists() and new_file.stat().st_size > 0,),
                         daemon=True).start()
    elif point == "mid-rekey" and phase == "rekeying":
        threading.Thread(target=watch, args=(lambda: Path(f"{new_file}-journal").exists(),), daemon=True).start()
    elif phase == point:  # the parent kills us here
        Path(marker).touch()
        time.sleep(600)

with Memory(path, namespace="t", embedder=HashEmbedder(dim=256), key=old) as mem:
    getattr(mem.admin, op)(new, progress=progress)
    time.sleep(600)  # not reached before the kill
"""
KILL_POINTS = {  # where the process dies -> which store is left at the path, and which new files beside it
    "copying": ("old", []),
    "mid-copy": ("old", [".localmem-new", ".localmem-new-journal"]),
    "rekeying": ("old", [".localmem-new"]),
    "mid-rekey": ("old", [".localmem-new", ".localmem-new-journal"]),
    "verifying": ("old", [".localmem-new"]),
    "replacing": ("old", [".localmem-new"]),
    "replaced": ("new", []),
}


@pytest.fixture(scope="module")
def seed(tmp_path_factory) -> Path:
    """A plain store of 2,500 messages (about 5 MB: the copy takes long enough to be caught)."""
    path = tmp_path_factory.mktemp("seed") / "seed.db"
    with Memory(path, namespace="t", embedder=HashEmbedder(dim=256)) as mem:
        mem.ingest(write_jsonl(path.parent / "seed.jsonl", rows(2500)))
    return path


def _opens_with(path: Path, key: str | None) -> bool:
    try:
        with Memory(path, namespace="t", embedder=HashEmbedder(dim=256), key=key) as mem:
            return mem.conn.execute("pragma integrity_check").fetchall() == [("ok",)]
    except (WrongKeyError, KeyRequiredError, NotEncryptedError):
        return False


@pytest.mark.slow
@needs_cipher
@pytest.mark.parametrize("op", ["encrypt", "rekey"])
@pytest.mark.parametrize("point", sorted(KILL_POINTS))
def test_a_killed_encrypt_or_rekey_leaves_the_old_store_or_the_new_one(tmp_path, seed, op, point, monkeypatch):
    path = tmp_path / "m.db"
    shutil.copy(seed, path)
    old = None
    if op == "rekey":
        with Memory(path, embedder=HashEmbedder(dim=256)) as mem:
            mem.admin.encrypt(PASS)
        old = PASS
    original = snapshot(path, key=old)
    monkeypatch.setenv("LM_NEW", NEW)  # the child reads the keys from its environment
    monkeypatch.setenv("LM_OLD", old or "")
    marker = tmp_path / "at-the-point"
    args = [sys.executable, "-c", _KILL_SCRIPT, str(REPO), str(path), op, point, str(marker)]
    if point.startswith("mid-"):  # it kills itself mid-statement
        proc = subprocess.run(args, capture_output=True, timeout=120)
        assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    else:
        sigkill_when(args, marker.exists, timeout=120)

    left, leftovers = KILL_POINTS[point]
    assert sorted(p.name.removeprefix("m.db") for p in tmp_path.glob("m.db.localmem-new*")) == leftovers
    assert _opens_with(path, old) == (left == "old") and _opens_with(path, NEW) == (left == "new")
    assert snapshot(path, key=old if left == "old" else NEW) == original
    # running it again finishes the job and leaves nothing behind
    if left == "old":
        with Memory(path, namespace="t", embedder=HashEmbedder(dim=256), key=old) as mem:
            getattr(mem.admin, op)(NEW)
    assert snapshot(path, key=NEW) == original
    assert not list(tmp_path.glob("*.localmem-new*"))


@needs_cipher
def test_the_bench_compares_a_plain_store_with_its_encrypted_twin(tmp_path):
    from localmem_bench import bench

    embedder = HashEmbedder()
    rows = bench.bench_ingest([80], tmp_path, Config(), embedder=embedder, compare_encrypted=True)
    assert [(r["messages"], r["encrypted"], r["stored"]) for r in rows] == [(80, False, 80), (80, True, 80)]
    plain, twin = bench.store_path(tmp_path, 80), bench.store_path(tmp_path, 80, encrypted_twin=True)
    assert cipher.file_state(plain) == "plain" and cipher.file_state(twin) == "encrypted"
    assert copies(twin, "Lisbon") == 0 < copies(plain, "Lisbon")
    found = bench.bench_search([80], tmp_path, Config(), n_queries=4, k=3, embedder=embedder, compare_encrypted=True)
    assert [(r["encrypted"], r["queries"]) for r in found] == [(False, 4), (True, 4)]
    assert all(r["p50_ms"] > 0 for r in found)


@needs_cipher
def test_the_new_file_keeps_the_store_permissions_from_its_first_byte(tmp_path):
    db = plain_store(tmp_path / "m.db", 5)
    os.chmod(db, 0o600)
    seen: list[int] = []

    def progress(phase: str) -> None:
        new_file = Path(f"{db}.localmem-new")
        if new_file.exists():
            seen.append(new_file.stat().st_mode & 0o777)

    old_umask = os.umask(0o022)
    try:
        with Memory(db, namespace="t", embedder=HashEmbedder()) as mem:
            mem.admin.encrypt(PASS, progress=progress)
            mem.admin.decrypt(progress=progress)
    finally:
        os.umask(old_umask)
    assert seen and set(seen) == {0o600}
    assert db.stat().st_mode & 0o777 == 0o600
