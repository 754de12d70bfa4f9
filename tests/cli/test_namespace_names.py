"""What can name a namespace, the same on every engine and interface: at most 200 characters
(a 2.7 KB name failed on PostgreSQL as a server fault, its index entry too large), no NUL, and
kept exactly as given, so a name with white space at either end is refused, not trimmed (``grant
r "  bob  "`` granted ``bob``, while a Memory of ``"  bob  "`` writes another namespace)."""

from __future__ import annotations

import json

import pytest

from localmem.cli import cli
from localmem.config import MAX_NAMESPACE_CHARS
from localmem.errors import ConfigError
from tests.fakes import HashEmbedder
from tests.helpers import assert_one_line_error, open_memory, runner

LONG = "n" * 2700


def test_a_namespace_over_the_limit_is_refused_in_one_line_before_anything_is_stored(tmp_path, use_models):
    use_models(embedder=HashEmbedder())
    path = tmp_path / "m.db"
    with pytest.raises(ConfigError, match=f"2,700 characters, over the limit of {MAX_NAMESPACE_CHARS}"):
        open_memory(path, namespace=LONG, embedder=HashEmbedder())
    with open_memory(path, namespace="a", embedder=HashEmbedder()) as mem:
        chat = tmp_path / "chat.jsonl"
        chat.write_text(json.dumps({"speaker": "Ana", "text": "hello"}) + "\n", encoding="utf-8")
        with pytest.raises(ConfigError, match="over the limit"):
            mem.ingest(chat, namespace=LONG)
        assert mem.namespaces() == []
    for args in (["add", "Ana", "hello"], ["search", "hello"], ["ingest", str(chat)]):
        out = runner().invoke(cli, ["--db", str(path), "--namespace", LONG, *args])
        err = assert_one_line_error(out, 2)
        assert f"over the limit of {MAX_NAMESPACE_CHARS}" in err and LONG not in err, err
    ok = "m" * MAX_NAMESPACE_CHARS  # the limit itself is a name
    with open_memory(path, namespace=ok, embedder=HashEmbedder()) as mem:
        mem.add("Ana", "hello")
        assert [n.namespace for n in mem.namespaces()] == [ok]


@pytest.mark.parametrize("name", ["  bob  ", "bob ", "\tbob", "b\x00ob"])
def test_a_namespace_is_kept_exactly_or_refused(tmp_path, name):
    with pytest.raises(ConfigError) as info:
        open_memory(tmp_path / "m.db", namespace=name, embedder=HashEmbedder())
    assert "\n" not in str(info.value)
    if name.strip() != name:
        assert "did you mean 'bob'?" in str(info.value)


@pytest.mark.own_keys  # its store is a PostgreSQL database of its own
def test_grant_refuses_a_namespace_with_white_space_instead_of_trimming_it(pg_url, use_models):
    pytest.importorskip("psycopg", reason="pip install 'localmem[postgres]'")
    use_models(embedder=HashEmbedder())
    with open_memory(pg_url, namespace="bob", embedder=HashEmbedder(), key=None) as mem:
        mem.add("Bob", "hello")
    out = runner().invoke(cli, ["--db", pg_url, "postgres", "grant", "lm_ws_role", "  bob  "])
    err = assert_one_line_error(out, 2)
    assert "begins or ends with white space" in err and "did you mean 'bob'?" in err, err
    with open_memory(pg_url, namespace="bob", embedder=HashEmbedder(), key=None) as mem:
        held = mem.conn.sql("SELECT count(*) FROM namespace_roles WHERE role = 'lm_ws_role'").fetchone()
        assert held == (0,)
