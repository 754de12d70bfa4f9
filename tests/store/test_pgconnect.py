"""Why a PostgreSQL store cannot be opened, said at once and in one line (issue 50, finding 12):
a wrong password (in either place a URL holds it), an unknown database, an unknown role and a
closed port each give the server's own reason within a second, with what to do, and nothing
else reaches stderr. Against a server of its own that asks for the password (conftest's
``password_postgres``)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from localmem import Memory
from tests.fakes import HashEmbedder
from tests.helpers import REPO

pytest.importorskip("psycopg", reason="pip install 'localmem[postgres]'")

# Its stores are PostgreSQL URLs: an encrypted run's key has nothing to do there.
pytestmark = pytest.mark.plain_only


def _closed_port() -> int:
    with socket.socket() as sock:  # bound, then closed: nothing listens there
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _cases(server) -> list[tuple[str, str, str]]:
    """(URL, the reason the error must give, a word of its hint)."""
    return [
        (server.url(password="Wrong-Userinfo-1"), 'password authentication failed for user "lm_pw"', "password"),
        (
            server.url(userinfo=False, query=True, password="Wrong-Query-2"),
            "password authentication failed",
            "password",
        ),
        (server.url("no_such_db"), 'database "no_such_db" does not exist', "createdb"),
        (server.url().replace("lm_pw:", "no_such_role:"), 'role "no_such_role" does not exist', "role"),
        (f"postgresql://lm_pw:{server.password}@127.0.0.1:{_closed_port()}/lmpw", "Connection refused", "running"),
    ]


def test_each_reason_is_said_at_once(password_postgres):
    from localmem.store.pgconnect import ConnectError

    for url, reason, hint in _cases(password_postgres):
        started = time.monotonic()
        with pytest.raises(ConnectError) as caught:
            Memory(url, embedder=HashEmbedder())
        took = time.monotonic() - started
        error = caught.value
        assert reason in error.message and hint in (error.hint or ""), (url, str(error))
        assert took < 1.5, (reason, took)  # not the pool's 5 s: its first failed attempt is the answer
        assert "\n" not in str(error)
        for secret in (password_postgres.password, "Wrong-Userinfo-1", "Wrong-Query-2"):
            assert secret not in str(error)
    with Memory(password_postgres.url(), embedder=HashEmbedder()) as mem:  # the right one opens
        assert mem.stats().messages == 0


def test_the_command_line_prints_one_line_and_nothing_else(password_postgres, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOCALMEM_", "PG"))}
    env.update(PYTHONPATH=str(REPO), LOCALMEM_HOME=str(tmp_path / "home"))
    for url, reason, _hint in _cases(password_postgres):
        for as_json in (True, False):
            done = subprocess.run(
                [sys.executable, "-m", "localmem", "--db", url, "stats", *(["--json"] if as_json else [])],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 1 and done.stdout == "", done
            lines = done.stderr.splitlines()
            assert len(lines) == 1, done.stderr  # not the pool's warnings beside it
            if as_json:
                error = json.loads(lines[0])
                assert error["code"] == "cannot_connect" and reason in error["error"], error
            else:
                assert lines[0].startswith("error: cannot connect to the PostgreSQL server at ") and reason in lines[0]
            assert password_postgres.password not in done.stderr and "Wrong-" not in done.stderr
