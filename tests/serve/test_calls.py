"""Parts of `localmem serve` that need no server: results and errors as JSON, the address check."""

from __future__ import annotations

import pytest

pytest.importorskip("starlette", reason="pip install 'localmem[mcp]' to test localmem serve")

from localmem.errors import LocalmemError, NotFoundError, StoreLockedError  # noqa: E402
from localmem.serve.calls import as_json, error_status  # noqa: E402
from localmem.serve.security import Guard  # noqa: E402
from tests.helpers import runner  # noqa: E402


def test_as_json_takes_dataclasses_dicts_and_objects_with_to_dict():
    from dataclasses import dataclass

    @dataclass
    class Plain:
        a: int
        b: list

    class WithToDict:
        def to_dict(self):
            return {"x": Plain(1, [Plain(2, [])])}

    assert as_json(WithToDict()) == {"x": {"a": 1, "b": [{"a": 2, "b": []}]}}
    assert as_json({"k": (1, "two", None)}) == {"k": [1, "two", None]}


def test_error_statuses_follow_the_cli_codes():
    assert error_status(NotFoundError("no such thing").to_dict()) == 404
    assert error_status(StoreLockedError("x.db").to_dict()) == 409
    assert error_status(LocalmemError("bad").to_dict()) == 400
    assert error_status({"error": "x", "code": "unexpected", "exit_code": 1}) == 500


def test_serve_refuses_an_address_others_can_reach(tmp_path):
    from localmem.cli import cli

    result = runner().invoke(cli, ["--db", str(tmp_path / "m.db"), "serve", "--address", "0.0.0.0:8770"])
    assert result.exit_code == 2
    assert "not a loopback address" in result.output and "--allow-remote" in result.output
    assert not (tmp_path / "m.db").exists()


def test_guard_accepts_its_own_host_and_origin_only():
    guard = Guard.create("127.0.0.1", 8770)
    assert guard.host_ok("127.0.0.1:8770") and guard.host_ok("localhost:8770")
    assert not guard.host_ok("127.0.0.1:8771") and not guard.host_ok("evil.example:8770") and not guard.host_ok(None)
    assert guard.origin_ok(None, "127.0.0.1:8770") and guard.origin_ok("http://localhost:8770", "localhost:8770")
    assert not guard.origin_ok("http://evil.example", "127.0.0.1:8770")
    assert not guard.origin_ok("null", "127.0.0.1:8770")
    assert guard.token_ok(guard.token) and not guard.token_ok(guard.csrf) and not guard.token_ok(None)
    assert Guard.create("127.0.0.1", 8770).token != guard.token  # new at every start


def test_the_static_assets_load_nothing_from_elsewhere():
    from localmem.serve.app import STATIC

    files = sorted(STATIC.iterdir())
    assert {f.name for f in files} == {"app.css", "app.js", "favicon.svg"}
    for f in files:
        text = f.read_text().replace('xmlns="http://www.w3.org/2000/svg"', "")  # a name, not a place
        assert "http://" not in text and "https://" not in text and "@import" not in text and "url(" not in text, f
        assert "innerHTML" not in text  # only the server's own escaped HTML goes in, with insertAdjacentHTML
