"""The discovery file and the command line's token, without a server: what is written, what is
trusted, and what the CLI's token may call (tests/serve/test_cli_server.py runs them for real)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import anyio
import pytest

from localmem.config import Config
from localmem.serve import discovery
from localmem.serve.discovery import Untrusted

SETTINGS = {"llm_model": "None"}


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("LOCALMEM_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture
def store(tmp_path):
    db = tmp_path / "m.db"
    db.write_bytes(b"")  # identity is the file's device and inode: any file will do
    return db


def announce(store, namespace="default", host="127.0.0.1", token="t" * 32):
    return discovery.announce(store, namespace, host, 8770, token, SETTINGS)


def written(store, **kw):
    path = announce(store, **kw)
    assert path is not None
    return path


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_announced_file_is_private_and_found_by_any_path_to_the_store(home, store, tmp_path):
    path = written(store)
    assert path is not None and path.parent == home / "run"
    assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left
    found = discovery.find(store, "default")
    assert found is not None and found.pid == os.getpid() and found.address == "127.0.0.1:8770"
    assert found.store == str(store.resolve()) and found.settings == SETTINGS
    link = tmp_path / "link.db"
    link.symlink_to(store)
    assert discovery.find(link, "default") == found
    assert discovery.find(store, "other") is None  # another namespace: another server's
    discovery.withdraw(path, "another server's token")  # not this server's file: kept
    assert path.exists()
    discovery.withdraw(path, "t" * 32)
    assert not path.exists() and discovery.find(store, "default") is None


def test_nothing_is_announced_for_an_address_others_can_reach(home, store):
    assert announce(store, host="0.0.0.0") is None and announce(store, host="192.0.2.1") is None
    assert announce(store, host="localhost") is not None  # written as 127.0.0.1
    found = discovery.find(store, "default")
    assert found is not None and found.host == "127.0.0.1"


def test_a_live_server_keeps_its_file_and_a_dead_ones_is_removed(home, store):
    path = written(store)
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "pid": os.getppid()}))  # another live process's
    assert announce(store, token="u" * 32) is None
    assert json.loads(path.read_text())["token"] == "t" * 32
    path.write_text(json.dumps({**data, "pid": dead_pid()}))
    assert discovery.find(store, "default") is None and not path.exists()  # stale: removed
    assert announce(store, token="u" * 32) == path  # and a new server may take its place


@pytest.mark.parametrize(
    "change, said",
    [
        ({"host": "192.0.2.1"}, "not a loopback address"),
        ({"host": "localhost"}, "not a loopback address"),  # a name may resolve to anything
        ({"port": 70000}, "not a discovery file"),
        ({"version": 2}, "not a discovery file"),
        ({"pid": "1"}, "not a discovery file"),
        ({"settings": {"a": 1}}, "not a discovery file"),
        ({"inode": 1}, "names another store"),
        ({"namespace": "work"}, "names another store"),
    ],
)
def test_a_file_that_says_something_else_is_refused(home, store, change, said):
    path = written(store)
    path.write_text(json.dumps({**json.loads(path.read_text()), **change}))
    with pytest.raises(Untrusted, match=said):
        discovery.find(store, "default")


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX permissions")
def test_files_and_dirs_others_could_write_or_read_are_refused(home, store, tmp_path):
    path = written(store)
    os.chmod(path, 0o640)
    with pytest.raises(Untrusted, match="open to other users"):
        discovery.find(store, "default")
    os.chmod(path, 0o600)
    os.chmod(path.parent, 0o755)
    with pytest.raises(Untrusted, match="open to other users"):
        discovery.find(store, "default")
    os.chmod(path.parent, 0o700)
    moved = tmp_path / "elsewhere.json"
    path.rename(moved)
    path.symlink_to(moved)
    with pytest.raises(Untrusted, match="symlink"):
        discovery.find(store, "default")
    path.unlink()
    os.mkfifo(path, 0o600)  # must not hang the command
    with pytest.raises(Untrusted, match="not a regular file"):
        discovery.find(store, "default")
    path.unlink()
    if os.geteuid() == 0:
        moved.rename(path)
        os.chown(path, 12345, -1)
        with pytest.raises(Untrusted, match="another user"):
            discovery.find(store, "default")


def test_answer_settings_leave_out_what_never_changes_an_answer(tmp_path, monkeypatch):
    mine = discovery.answer_settings(Config())
    assert "llm_model" in mine and "ask_max_tokens" in mine and "user_name" in mine
    assert not {"db_path", "namespace", "key_env", "use_server", "extract"} & set(mine)
    theirs = {**mine, "ask_dates": "False"}
    assert discovery.differing(mine, theirs) == ["ask_dates"]
    # A relative model path names a file in the dir the command runs in.
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    here = discovery.answer_settings(Config(llm_model="m.gguf"))
    assert here["llm_model"] == str(gguf)
    assert discovery.answer_settings(Config(llm_model="qwen2.5-1.5b"))["llm_model"] == "qwen2.5-1.5b"  # an id


# -- what the command line's token may call -----------------------------------------------------

starlette = pytest.importorskip("starlette", reason="pip install 'localmem[mcp]' to test localmem serve")


def call(guard, method: str, path: str, token: str | None = None, host: str = "127.0.0.1:8770"):
    """The guard in front of an app that answers "reached", or of the API's own routes for
    /api/hello (which the guard lets through without a token)."""
    from starlette.applications import Starlette

    from localmem.serve import api
    from localmem.serve.security import GuardMiddleware

    async def reached(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"reached"})

    app = reached
    if path.startswith("/api/hello"):
        app = Starlette(routes=api.routes())
        app.state.guard, app.state.lanes = guard, None

    sent: list[dict] = []
    path, _, query = path.partition("?")
    headers = [(b"host", host.encode())] + ([(b"authorization", f"Bearer {token}".encode())] if token else [])
    scope = {"type": "http", "method": method, "path": path, "query_string": query.encode(), "headers": headers}

    async def receive():
        return {"type": "http.request", "body": b""}

    async def send(message):
        sent.append(message)

    anyio.run(GuardMiddleware(app, guard), scope, receive, send)
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return sent[0]["status"], body


def test_the_cli_token_calls_ask_and_search_only():
    from localmem.serve.security import Guard

    guard = Guard.create("127.0.0.1", 8770)
    assert guard.cli_token and guard.cli_token not in (guard.token, guard.csrf)
    assert call(guard, "POST", "/api/ask", guard.cli_token) == (200, b"reached")
    assert call(guard, "GET", "/api/search?q=x", guard.cli_token) == (200, b"reached")
    for method, path in (
        ("POST", "/api/forget"),
        ("POST", "/api/add"),
        ("GET", "/api/show/m:1"),
        ("GET", "/api/stats"),
        ("GET", "/"),
        ("POST", "/mcp"),
        ("GET", "/api/ask"),
    ):
        assert call(guard, method, path, guard.cli_token)[0] == 401, (method, path)
        assert call(guard, method, path, guard.token)[1] == b"reached"  # the page's token can


def test_hello_proves_the_token_without_showing_it():
    from localmem.serve.security import Guard, hello_proof

    guard = Guard.create("127.0.0.1", 8770)
    nonce = "n" * 24
    status, body = call(guard, "GET", f"/api/hello?nonce={nonce}")
    assert status == 200
    answer = json.loads(body)
    assert answer["proof"] == hello_proof(guard.cli_token, nonce) != hello_proof(guard.cli_token, "m" * 24)
    assert guard.cli_token not in body.decode() and guard.token not in body.decode()
    assert call(guard, "GET", "/api/hello?nonce=short")[0] == 400
    assert call(guard, "GET", f"/api/hello?nonce={nonce}", host="evil.example:8770")[0] == 421  # rebinding
