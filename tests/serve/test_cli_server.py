"""`localmem ask` through a running `localmem serve` of the same store (docs/serve.md, "The CLI
uses a running server"): a real server on 127.0.0.1 and the real command line, each in a process
of its own, with the scripted models of tests/mcp_plugin. The LLM log names the process each
answer was made in, so a test sees where a question went."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.serve.server import STORY, env, seed, spawn

pytest.importorskip("starlette", reason="pip install 'localmem[mcp]' to test localmem serve")

pytestmark = [pytest.mark.plain_only, pytest.mark.slow]

QUESTION = "Where did Ann move?"


def run_cli(tmp_path: Path, db: Path, *args: str, namespace: str = "default", **extra: str):
    return subprocess.run(
        [sys.executable, "-m", "localmem", "--db", str(db), "--namespace", namespace, *args],
        env=env(tmp_path, **extra),
        capture_output=True,
        text=True,
        timeout=120,
    )


def answered_by(log: Path) -> list[int]:
    """The process ids that made the answers so far (tests/mcp_plugin's LLM log)."""
    if not log.exists():
        return []
    return [int(line.split()[1]) for line in log.read_text().splitlines() if line.startswith("answer ")]


def discovery_files(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "home" / "run"
    return sorted(folder.glob("serve-*.json")) if folder.exists() else []


def wait_for_discovery(tmp_path: Path, timeout: float = 30) -> Path:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = discovery_files(tmp_path)
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError("the server wrote no discovery file")


@pytest.fixture
def store(tmp_path):
    db = tmp_path / "m.db"
    seed(db, STORY)
    return db


def test_ask_goes_through_the_running_server(tmp_path, store):
    log = tmp_path / "llm.log"
    server = spawn(tmp_path, store, LOCALMEM_TEST_LLM_LOG=str(log))
    try:
        found = wait_for_discovery(tmp_path)
        assert found.stat().st_mode & 0o777 == 0o600 and found.parent.stat().st_mode & 0o777 == 0o700
        data = json.loads(found.read_text())
        assert data["pid"] == server.proc.pid and data["port"] == server.port and data["host"] == "127.0.0.1"
        assert data["token"] != server.token  # the CLI's own token, not the page's
        assert "key" not in json.dumps(data).lower().replace("key_env", "")

        done = run_cli(tmp_path, store, "ask", QUESTION, "--json", LOCALMEM_TEST_LLM_LOG=str(log))
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout)
        assert "Oslo" in out["answer"] and out["citations"]
        assert out["timings"]["via"] == "serve" and out["timings"]["server"] == f"127.0.0.1:{server.port}"
        assert out["timings"]["round_trip"] > 0 and "total" in out["timings"]
        assert answered_by(log) == [server.proc.pid]  # the server's model answered, not the CLI's
        assert "ask from the command line" in server.stderr.read_text()

        # Text, streamed: the answer, then its citations, as a local run prints them.
        done = run_cli(tmp_path, store, "ask", QUESTION, "--stream", LOCALMEM_TEST_LLM_LOG=str(log))
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert "Oslo" in lines[0] and lines[1].startswith("  [m:")
        assert "via localmem serve at 127.0.0.1:" in done.stderr
        local = run_cli(tmp_path, store, "ask", QUESTION, "--stream", "--local", LOCALMEM_TEST_LLM_LOG=str(log))
        assert local.returncode == 0, local.stderr
        assert local.stdout == done.stdout and "via localmem serve" not in local.stderr

        # The options travel: a filter that leaves nothing is a refusal there too.
        done = run_cli(tmp_path, store, "ask", QUESTION, "--json", "--speaker", "Nobody")
        assert json.loads(done.stdout)["refused"] and json.loads(done.stdout)["timings"]["via"] == "serve"
        # An error about the question is the local run's error, with its exit code.
        done = run_cli(tmp_path, store, "ask", QUESTION, "--json", "--since", "not a date")
        local = run_cli(tmp_path, store, "ask", QUESTION, "--json", "--since", "not a date", "--local")
        assert done.returncode == local.returncode != 0
        assert json.loads(done.stderr) == json.loads(local.stderr)
        assert answered_by(log).count(server.proc.pid) == 2
    finally:
        assert server.stop() == 0, server.stderr.read_text()
    assert discovery_files(tmp_path) == []  # removed on a clean stop


def test_local_flag_setting_and_other_settings_bypass_the_server(tmp_path, store):
    log = tmp_path / "llm.log"
    server = spawn(tmp_path, store, LOCALMEM_TEST_LLM_LOG=str(log))
    try:
        wait_for_discovery(tmp_path)
        for args, extra in (
            (("--local",), {}),
            ((), {"LOCALMEM_USE_SERVER": "false"}),
        ):
            done = run_cli(tmp_path, store, "ask", QUESTION, "--json", *args, LOCALMEM_TEST_LLM_LOG=str(log), **extra)
            assert done.returncode == 0, done.stderr
            assert json.loads(done.stdout)["timings"]["via"] == "local"
            assert done.stderr == ""
        # Settings that change an answer must be the server's: else answered here, and said why.
        done = run_cli(tmp_path, store, "ask", QUESTION, "--json", "--max-tokens", "150")
        assert json.loads(done.stdout)["timings"]["via"] == "serve"  # an option of the request
        done = run_cli(tmp_path, store, "ask", QUESTION, "--json", LOCALMEM_ASK_DATES="false")
        assert json.loads(done.stdout)["timings"]["via"] == "local"
        assert "runs with other settings (ask_dates)" in done.stderr
        # Another namespace is another server's.
        seed(store, STORY[:1], namespace="work")
        done = run_cli(tmp_path, store, "ask", QUESTION, "--json", namespace="work")
        assert json.loads(done.stdout)["timings"]["via"] == "local" and done.stderr == ""
        assert answered_by(log).count(server.proc.pid) == 1  # the --max-tokens question only
    finally:
        server.stop()


def test_a_namespace_the_store_does_not_hold_is_the_same_error_through_the_server(tmp_path, store):
    log = tmp_path / "llm.log"
    server = spawn(tmp_path, store, namespace="nope", LOCALMEM_TEST_LLM_LOG=str(log))
    try:
        wait_for_discovery(tmp_path)
        done = run_cli(tmp_path, store, "ask", QUESTION, "--json", namespace="nope")
        local = run_cli(tmp_path, store, "ask", QUESTION, "--json", "--local", namespace="nope")
        assert done.returncode == local.returncode != 0
        assert json.loads(done.stderr) == json.loads(local.stderr) and "unknown_namespace" in done.stderr
        assert "ask from the command line" in server.stderr.read_text() and answered_by(log) == []
    finally:
        server.stop()


def test_a_symlinked_store_finds_the_same_server(tmp_path, store):
    server = spawn(tmp_path, store)
    try:
        wait_for_discovery(tmp_path)
        link = tmp_path / "elsewhere.db"
        link.symlink_to(store)
        done = run_cli(tmp_path, link, "ask", QUESTION, "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["timings"]["via"] == "serve"
    finally:
        server.stop()


def test_a_killed_server_leaves_a_stale_file_that_is_ignored_and_removed(tmp_path, store):
    server = spawn(tmp_path, store)
    found = wait_for_discovery(tmp_path)
    server.stop(signal.SIGKILL)
    assert found.exists()  # no chance to remove it
    done = run_cli(tmp_path, store, "ask", QUESTION, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["timings"]["via"] == "local"
    assert done.stderr == "" and not found.exists()


def test_a_server_that_dies_mid_answer_falls_back_to_local(tmp_path, store):
    gate = tmp_path / "gate"
    log = tmp_path / "llm.log"
    server = spawn(tmp_path, store, LOCALMEM_TEST_BLOCK=str(gate), LOCALMEM_TEST_LLM_LOG=str(log))
    try:
        wait_for_discovery(tmp_path)
        ask = subprocess.Popen(
            [sys.executable, "-m", "localmem", "--db", str(store), "ask", QUESTION],
            env=env(tmp_path, LOCALMEM_TEST_LLM_LOG=str(log)),  # the CLI's own model does not wait
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while server.proc.pid not in answered_by(log):  # the server's model is answering
            assert time.monotonic() < deadline and ask.poll() is None, ask.communicate()
            time.sleep(0.05)
        server.stop(signal.SIGKILL)
        out, err = ask.communicate(timeout=120)
    finally:
        server.stop()
    assert ask.returncode == 0, err
    assert "Oslo" in out and "  [m:" in out
    notices = [line for line in err.splitlines() if line.startswith("localmem:")]
    assert len(notices) == 1 and "the server failed" in notices[0] and "answering here" in notices[0]
    assert "Traceback" not in err and ask.pid in answered_by(log)


def test_untrusted_discovery_files_are_refused(tmp_path, store):
    log = tmp_path / "llm.log"
    server = spawn(tmp_path, store, LOCALMEM_TEST_LLM_LOG=str(log))
    try:
        found = wait_for_discovery(tmp_path)
        good = found.read_text()

        def ask() -> subprocess.CompletedProcess:
            done = run_cli(tmp_path, store, "ask", QUESTION, "--json", LOCALMEM_TEST_LLM_LOG=str(log))
            assert done.returncode == 0, done.stderr
            return done

        # Readable by others: refused, and said.
        os.chmod(found, 0o644)
        done = ask()
        assert json.loads(done.stdout)["timings"]["via"] == "local" and "open to other users" in done.stderr
        os.chmod(found, 0o600)
        # The dir open to others.
        os.chmod(found.parent, 0o777)
        done = ask()
        assert json.loads(done.stdout)["timings"]["via"] == "local" and "open to other users" in done.stderr
        os.chmod(found.parent, 0o700)
        # A symlink in its place.
        real = tmp_path / "real.json"
        real.write_text(good)
        os.chmod(real, 0o600)
        found.unlink()
        found.symlink_to(real)
        done = ask()
        assert json.loads(done.stdout)["timings"]["via"] == "local" and "symlink" in done.stderr
        found.unlink()

        def write(data: dict) -> None:
            found.unlink(missing_ok=True)
            fd = os.open(found, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as out:
                json.dump(data, out)

        # Another store's identity, a non-loopback host, a wrong token (the server cannot prove it).
        other = tmp_path / "other.db"
        seed(other, STORY[:1])
        for change, said in (
            ({"inode": other.stat().st_ino}, "names another store"),
            ({"host": "192.0.2.1"}, "not a loopback address"),
            ({"token": "x" * 32}, "is not the server the discovery file names"),
        ):
            write({**json.loads(good), **change})
            done = ask()
            assert json.loads(done.stdout)["timings"]["via"] == "local", change
            assert said in done.stderr, (change, done.stderr)
        assert server.proc.pid not in answered_by(log)
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            os.chown(found, 12345, -1)  # another user's file
            done = ask()
            assert json.loads(done.stdout)["timings"]["via"] == "local" and "another user" in done.stderr
        write(json.loads(good))  # the real one again: used
        assert json.loads(ask().stdout)["timings"]["via"] == "serve"
    finally:
        server.stop()
