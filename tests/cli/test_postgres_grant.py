"""``localmem postgres grant``: a login role for some namespaces of a PostgreSQL store, enforced
by the server's row-level security (docs/postgres.md), tried by connecting as that role."""

from __future__ import annotations

import json

import pytest

from localmem import Memory
from localmem.cli import cli
from tests.fakes import HashEmbedder
from tests.helpers import assert_one_line_error, postgres_url, runner

psycopg = pytest.importorskip("psycopg", reason="pip install 'localmem[postgres]'")
# Its stores are its own PostgreSQL databases, which localmem never keys: once, outside --stores
# (an encrypted run's store key would be refused for them).
pytestmark = pytest.mark.own_keys


def _as_role(url: str, role: str) -> str:
    head, rest = url.split("://", 1)
    return f"{head}://{role}@{rest.split('@', 1)[1]}"


def test_grant_makes_a_role_that_sees_and_changes_only_its_namespaces(pg_url, use_models, monkeypatch):
    use_models(embedder=HashEmbedder())
    for ns, text in (("carol", "Carol's alarm code is qzalarm-3390."), ("dave", "Dave plays chess on Sundays.")):
        with Memory(pg_url, namespace=ns, embedder=HashEmbedder()) as mem:
            mem.add(ns.title(), text)
    monkeypatch.setenv("LM_GRANT_PW", "a-password-from-the-environment")
    out = runner().invoke(
        cli, ["--db", pg_url, "postgres", "grant", "lm_grant_dave", "dave", "--password-env", "LM_GRANT_PW", "--json"]
    )
    assert out.exit_code == 0, out.output
    done = json.loads(out.stdout)
    # the test server trusts its socket: said (tests/store/test_postgres_hostile.py has the rest)
    assert [w[:30] for w in done.pop("warnings")] == ["the server trusts its local so"]
    assert done == {"role": "lm_grant_dave", "namespaces": ["dave"], "may_vacuum": True}
    assert "a-password-from-the-environment" not in out.output
    again = runner().invoke(cli, ["--db", pg_url, "postgres", "grant", "lm_grant_dave", "games"])
    assert again.exit_code == 0 and again.stdout == "role lm_grant_dave may use namespace(s): dave, games\n"
    with Memory(_as_role(pg_url, "lm_grant_dave"), namespace="dave", embedder=HashEmbedder()) as dave:
        assert [h.text for h in dave.search("chess")][:1] == ["Dave: Dave plays chess on Sundays."]
        raw = dave.conn.raw
        assert [r[0] for r in raw.execute("SELECT DISTINCT ns FROM messages")] == ["dave"]
        assert raw.execute("SELECT count(*) FROM messages WHERE text LIKE '%qzalarm%'").fetchone()[0] == 0
        assert raw.execute("DELETE FROM messages WHERE ns = 'carol'").rowcount == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # who may see what is the owner's
            raw.execute("SELECT count(*) FROM namespace_roles")
    with Memory(_as_role(pg_url, "lm_grant_dave"), namespace="carol", embedder=HashEmbedder()) as intruder:
        assert intruder.search("alarm code") == []
    with Memory(pg_url, namespace="carol", embedder=HashEmbedder()) as owner:
        assert owner.conn.raw.execute("SELECT count(*) FROM messages WHERE ns = 'carol'").fetchone()[0] == 1


def test_grant_refuses_a_file_store_and_a_bad_role_in_one_line(pg_url, tmp_path, use_models):
    use_models(embedder=HashEmbedder())
    with Memory(tmp_path / "f.db", embedder=HashEmbedder()) as mem:
        mem.add("Ann", "hello")
    if postgres_url(tmp_path / "f.db") is not None:
        pytest.skip("this run (--stores=postgres) opens every store path as a PostgreSQL database")
    assert "is for a PostgreSQL store" in assert_one_line_error(
        runner().invoke(cli, ["--db", str(tmp_path / "f.db"), "postgres", "grant", "r", "default"])
    )
    assert "role names are lower-case" in assert_one_line_error(
        runner().invoke(cli, ["--db", pg_url, "postgres", "grant", "Bad-Role", "default"])
    )
    assert "LM_GRANT_NONE is not set" in assert_one_line_error(
        runner().invoke(cli, ["--db", pg_url, "postgres", "grant", "r", "default", "--password-env", "LM_GRANT_NONE"])
    )
