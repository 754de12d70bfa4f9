"""What every command does alike: global options also after the command, errors as one line or
as JSON ({"error", "code", "hint"}) with errors.py's exit codes, and no store created by
a command that only reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localmem.cli import cli
from tests.fakes import HashEmbedder
from tests.helpers import SAMPLE_CHAT, assert_one_line_error, raw_connection, runner


@pytest.fixture(autouse=True)
def hashed(use_models) -> None:
    use_models(embedder=HashEmbedder())


def run(*args: str, env: dict[str, str] | None = None):
    return runner().invoke(cli, list(args), env=env)


def json_error(result, exit_code: int, code: str) -> dict:
    """A --json failure: exactly one JSON object on stderr, nothing on stdout."""
    assert result.exit_code == exit_code, (result.exit_code, result.output)
    assert result.stdout == "" and result.stderr.endswith("\n") and result.stderr.count("\n") == 1, result.stderr
    error = json.loads(result.stderr)
    assert set(error) == {"error", "code", "hint", "exit_code"} and error["code"] == code, error
    assert error["exit_code"] == exit_code and error["error"]
    return error


@pytest.fixture
def db(tmp_path) -> Path:
    path = tmp_path / "s.db"
    assert run("--db", str(path), "ingest", str(SAMPLE_CHAT)).exit_code == 0
    return path


# -- global options after the command ----------------------------------------------------------------


def test_global_options_work_after_the_command(db, tmp_path):
    before = json.loads(run("--db", str(db), "stats", "--json").stdout)
    assert json.loads(run("stats", "--db", str(db), "--json").stdout) == before
    assert json.loads(run("stats", "--json", f"--db={db}").stdout) == before
    hits = json.loads(run("search", "Mochi", "-k", "1", "--db", str(db), "--json").stdout)["hits"]
    assert len(hits) == 1 and "Mochi" in hits[0]["text"]
    # -n after the command: add into a new namespace, then read it
    assert run("add", "Zoe", "a new namespace", "--db", str(db), "-n", "zoe", "-q").exit_code == 0
    assert json.loads(run("stats", "-n", "zoe", "--db", str(db), "--json").stdout)["messages"] == 1
    # a nested command, and a value that looks like a global option after '--'
    assert run("bench", "llm", "--help", "--db", str(db)).exit_code == 0
    added = run("add", "--db", str(db), "Zoe", "--", "--db")
    assert (
        added.exit_code == 0
        and json.loads(run("--db", str(db), "-n", "default", "search", "db", "--json").stdout)["hits"]
    )


def test_a_global_option_after_the_command_wins_and_is_checked_like_one_before(db, tmp_path):
    # the last one given counts, as when both come before the command
    result = run("--db", str(tmp_path / "other.db"), "stats", "--db", str(db), "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["messages"] > 0
    for args in (
        ["stats", "--db", str(db), "--llm-url", "ftp://x"],
        ["--llm-url", "ftp://x", "--db", str(db), "stats"],
    ):
        err = assert_one_line_error(run(*args), code=2)
        assert err.startswith("error: setting llm_url must be an http:// or https:// URL"), err
    # --debug, -q and --version after the command are the global ones
    missing = run("stats", "--db", str(tmp_path / "typo.db"), "--debug")
    assert type(missing.exception).__name__ == "StoreNotFoundError"  # raised, not a one-line error
    assert run("stats", "--version").stdout == run("--version").stdout != ""
    # hidden from the command's help (`localmem --help` lists them), and there only once
    assert "--db" not in run("stats", "--help").stdout and "--db" in run("--help").stdout


def test_forget_namespace_option_is_its_target_or_where_it_works(db):
    run("add", "Ana", "work chat", "--conversation", "w", "--db", str(db), "-n", "ana")
    # with another target, --namespace says where; alone, it is the target
    plan = json.loads(run("forget", "--conversation", "w", "--namespace", "ana", "--db", str(db), "--json").stdout)
    assert plan["target"] == {"conversation": "w", "in_namespace": "ana"} and plan["counts"]["messages"] == 1
    plan = json.loads(run("forget", "--conversation", "w", "-n", "ana", "--db", str(db), "--json").stdout)
    assert plan["counts"]["messages"] == 1
    plan = json.loads(run("forget", "--namespace", "ana", "--db", str(db), "--json").stdout)
    assert plan["target"] == {"namespace": "ana"}


# -- errors -------------------------------------------------------------------------------------------


def test_errors_with_json_are_json_on_stderr(db, tmp_path):
    missing = json_error(run("--db", str(tmp_path / "typo.db"), "search", "x", "--json"), 1, "no_store")
    assert missing["error"] == f"no store at {tmp_path / 'typo.db'}" and "--db" in missing["hint"]
    unknown = json_error(run("--db", str(db), "-n", "nope", "stats", "--json"), 1, "unknown_namespace")
    assert unknown["hint"] == "pass one of: default"
    json_error(run("--db", str(db), "show", "m:999", "--json"), 1, "not_found")
    usage = json_error(run("--db", str(db), "forget", "--json"), 2, "usage")
    assert "exactly one of" in usage["error"] and usage["hint"] == "see 'localmem forget --help'"
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"\x00\x01\x02 not a chat")
    unreadable = run("--db", str(db), "ingest", str(bad), "--json")
    assert json.loads(unreadable.stderr)["code"] in ("unknown_format", "bad_input")  # an InputError
    json_error(unreadable, 2, json.loads(unreadable.stderr)["code"])


def test_a_busy_store_is_a_json_error_with_its_own_exit_code(db):
    other = raw_connection(db)
    other.execute("BEGIN IMMEDIATE")
    try:
        locked = json_error(
            run("--db", str(db), "add", "Z", "hi", "--json", env={"LOCALMEM_BUSY_TIMEOUT_MS": "100"}), 3, "store_locked"
        )
        assert locked["hint"].startswith("retry when that writer is done") and "is busy" in locked["error"]
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_errors_without_json_stay_one_line_with_the_hint(db, tmp_path):
    err = assert_one_line_error(run("--db", str(tmp_path / "typo.db"), "stats"), code=1)
    assert err == (
        f"error: no store at {tmp_path / 'typo.db'}; check the --db path (or LOCALMEM_DB); "
        "'localmem ingest' or 'localmem add' creates a store\n"
    )


def test_a_dry_run_exits_0(db):
    result = run("--db", str(db), "forget", "--match", "Mochi")
    assert result.exit_code == 0 and "would forget" in result.stdout and "--yes" in result.stdout


# -- no silent new stores --------------------------------------------------------------------------------

READERS = [
    ["search", "x"],
    ["ask", "x"],
    ["stats"],
    ["export"],
    ["profile", "Ana"],
    ["show", "m:1"],
    ["episodes"],
    ["facts"],
    ["entities"],
    ["namespaces"],
    ["forget", "m:1"],
    ["correct", "m:1", "y"],
    ["flush"],
    ["consolidate"],
    ["reembed"],
]


@pytest.mark.parametrize("command", READERS, ids=[c[0] for c in READERS])
def test_a_command_that_does_not_create_refuses_a_missing_store(tmp_path, command):
    path = tmp_path / "typo" / "memory.db"
    err = assert_one_line_error(run("--db", str(path), *command), code=1)
    assert err.startswith(f"error: no store at {path};")
    assert not path.exists() and not path.parent.exists()


def test_only_writers_create_a_store_and_say_so_once(tmp_path):
    path = tmp_path / "new.db"
    first = run("--db", str(path), "add", "Ana", "hello")
    assert first.exit_code == 0 and first.stderr == f"created a new store at {path}\n"
    assert run("--db", str(path), "add", "Ana", "again").stderr == ""
    assert run("--db", str(path), "-n", "elsewhere", "add", "Ana", "a new namespace").stderr == ""
    imported = tmp_path / "copy.db"
    export = tmp_path / "e.jsonl"
    assert run("--db", str(path), "export", "-o", str(export)).exit_code == 0
    assert run("--db", str(imported), "import", str(export)).stderr == f"created a new store at {imported}\n"


def test_an_unknown_namespace_lists_the_known_ones(db):
    run("--db", str(db), "-n", "work", "add", "Ana", "hi")
    for command in (["search", "x"], ["stats"], ["episodes"], ["export"], ["show", "m:1"]):
        err = assert_one_line_error(run("--db", str(db), "-n", "wrok", *command), code=1)
        assert err == f"error: no namespace 'wrok' in {db}; pass one of: default, work\n"


def test_every_error_class_says_what_to_do():
    from localmem import errors

    examples = [
        errors.InputError("chat.json", "invalid JSON", "line 3"),
        errors.UnknownFormatError("notes.bin", "unrecognised format"),
        errors.SchemaTooNewError("m.db", 99, 10),
        errors.NotALocalmemStoreError("m.db", "not an SQLite database"),
        errors.StoreLockedError("m.db"),
        errors.StoreCorruptError("m.db", "malformed"),
        errors.EmbedderMismatchError("a", 8, "b", 16),
        errors.ModelNotFoundError("no GGUF model qwen"),
        errors.MissingDependencyError("llama_cpp", "llm"),
        errors.QueryNotFoundError("x"),
        errors.NotFoundError("no message m:9 in namespace 'me'"),
        errors.StoreNotFoundError("typo.db"),
        errors.UnknownNamespaceError("x", ["a"], "m.db"),
        errors.ConfigError("setting k must be an integer"),
        errors.AddressInUseError("127.0.0.1", 8770),
        errors.ModelServerError("the model server at http://127.0.0.1:8080/v1 did not answer", "is it running?"),
        errors.DiskFullError("m.db"),
        errors.StoreKeyError("a key problem"),
        errors.WrongKeyError("m.db", "LOCALMEM_TEST_KEY"),
        errors.KeyRequiredError("m.db"),
        errors.NotEncryptedError("m.db", "--key-env K"),
        errors.StoreInUseError("m.db"),
        errors.StoreReplacedError("m.db"),
        errors.StoreReadOnlyError("m.db"),
        errors.CipherBuildMissingError("encrypt"),
        errors.InvalidTextError("the message text", "a\ud83d"),
    ]
    classes, stack = set(), [errors.LocalmemError]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub.__module__ == errors.__name__:
                classes.add(sub)
                stack.append(sub)
    assert classes == {type(e) for e in examples}  # a new error class needs an example here
    for error in examples:
        assert error.hint and error.to_dict()["hint"] == error.hint, type(error).__name__
        assert str(error).endswith(error.hint) or isinstance(error, (errors.InputError, errors.StoreCorruptError))
