"""The command line, in-process with CliRunner and the HashEmbedder standing in for the model."""

from __future__ import annotations

import io
import json
import re
import sys
import types
from pathlib import Path

import click
import pytest

import localmem
from localmem import Memory
from localmem.cli import cli
from tests.conftest import FIXTURES
from tests.fakes import HashEmbedder
from tests.helpers import SAMPLE_CHAT, assert_one_line_error, installed, open_memory, runner, snapshot, write_jsonl

LOCOMO = FIXTURES / "tiny_locomo.json"


@pytest.fixture
def hashed(use_models) -> HashEmbedder:
    """Every Memory the CLI opens uses this fake embedder."""
    fake = HashEmbedder()
    use_models(embedder=fake)
    return fake


@pytest.fixture
def db(tmp_path) -> Path:
    return tmp_path / "cli.db"


def run(db: Path, *args: str, env: dict[str, str] | None = None, ok: bool = True):
    result = runner().invoke(cli, ["--db", str(db), *args], env=env)
    if ok:
        assert result.exit_code == 0, (result.output, result.exception)
        assert "Traceback" not in result.output
    return result


def run_json(db: Path, *args: str, **kwargs):
    return json.loads(run(db, *args, "--json", **kwargs).stdout)


# -- help ----------------------------------------------------------------------------------------


def _walk(group: click.Group, path: tuple[str, ...] = ()):
    yield path, group
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from _walk(command, path + (name,))
        else:
            yield path + (name,), command


cli.load_plugins()  # the benchmarks' commands too (pip install -e ./bench)
ALL_COMMANDS = list(_walk(cli))


def test_the_command_tree_is_complete():
    names = {" ".join(path) for path, _ in ALL_COMMANDS}
    assert {
        "ingest",
        "add",
        "search",
        "stats",
        "namespaces",
        "export",
        "import",
        "forget",
        "reembed",
        "doctor",
        "bench",
        "bench ingest",
        "bench search",
        "eval",
        "eval locomo",
    } <= names


@pytest.mark.parametrize("path, command", ALL_COMMANDS, ids=[" ".join(p) or "localmem" for p, _ in ALL_COMMANDS])
def test_every_command_has_help(path, command):
    assert command.help and command.help.strip()
    for param in command.params:
        if isinstance(param, click.Option) and param.name not in ("help", "version"):
            assert param.help and param.help.strip(), f"{' '.join(path)} --{param.name} has no help"
    result = runner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Usage: ")
    assert command.help.strip().splitlines()[0][:40] in " ".join(result.stdout.split())
    short = runner().invoke(cli, [*path, "-h"])
    assert short.exit_code == 0 and short.stdout == result.stdout


def test_version():
    result = runner().invoke(cli, ["--version"])
    assert result.exit_code == 0 and localmem.__version__ in result.stdout


# -- JSON output -----------------------------------------------------------------------------------


def test_ingest_json(hashed, db):
    report = run_json(db, "ingest", str(LOCOMO))
    assert report["format"] == "locomo" and report["added"] == 7 and report["skipped"] == 0
    assert [(n["namespace"], n["added"]) for n in report["namespaces"]] == [("tiny-1", 5), ("tiny-2", 2)]
    again = run_json(db, "ingest", str(LOCOMO))
    assert again["added"] == 0 and all(n["already_loaded"] for n in again["namespaces"])


def test_ingest_text_output(hashed, db, tmp_path):
    out = run(db, "ingest", str(SAMPLE_CHAT)).stdout
    assert out.splitlines()[0] == "default: 25 added, 0 already stored"
    assert out.splitlines()[1].startswith("text, ")
    assert "already ingested (25 messages)" in run(db, "ingest", str(SAMPLE_CHAT)).stdout
    changed = write_jsonl(
        tmp_path / "c.jsonl", [{"id": "L3", "conversation": "sample-chat", "speaker": "Priya", "text": "edited"}]
    )
    assert "1 stored with different text (kept the stored version)" in run(db, "ingest", str(changed)).stdout


def test_ingest_options(hashed, db, tmp_path):
    path = tmp_path / "notes.jsonl"
    path.write_text("Ann: hello there\nBo: hi\n")
    report = run_json(db, "--namespace", "mine", "ingest", str(path), "--format", "text", "--conversation", "chat-1")
    assert report["format"] == "text" and report["namespaces"][0]["namespace"] == "mine"
    hits = run_json(db, "-n", "mine", "search", "hello")["hits"]
    assert hits[0]["sources"][0]["conversation"] == "chat-1"
    forced = run_json(db, "--namespace", "all", "ingest", str(LOCOMO))  # one namespace for every sample
    assert [(n["namespace"], n["added"]) for n in forced["namespaces"]] == [("all", 7)]


def test_search_json(hashed, db):
    run(db, "ingest", str(SAMPLE_CHAT))
    data = run_json(db, "search", "cat Mochi", "-k", "3")
    assert data["query"] == "cat Mochi" and len(data["hits"]) == 3
    hit = data["hits"][0]
    assert set(hit) == {
        "id",
        "kind",
        "text",
        "score",
        "channels",
        "time",
        "sources",
        "merged",
        "superseded_by",
        "supersedes",
        "speaker",
        "said",
        "captions",
        "day",
    }
    assert "Mochi" in hit["text"] and hit["text"] == f"{hit['speaker']}: {hit['said']}"  # no captions here
    assert hit["day"] == hit["time"][:10] and hit["speaker"] == hit["sources"][0]["speaker"]
    only_vector = run_json(db, "search", "cat Mochi", "--channels", "vector")
    assert all(set(h["channels"]) - {"question"} == {"vector"} for h in only_vector["hits"])
    only_bm25 = run_json(db, "search", "Mochi", "--channels", " bm25 ,")
    assert all(set(h["channels"]) - {"question"} == {"bm25"} for h in only_bm25["hits"])
    said = ["Mochi" in h["text"] for h in only_bm25["hits"]]
    # All three messages naming Mochi; the two of one session first (the session weight lifts
    # that session's turn matched by its context, the turn before, above the third).
    assert said[:2] == [True, True] and sum(said) == 3


def test_search_text_output_and_errors(hashed, db):
    run(db, "ingest", str(SAMPLE_CHAT))
    out = run(db, "search", "Mochi", "-k", "2").stdout
    lines = out.splitlines()
    # the hit's id, then who said it, when and in which conversation, and why it was found
    first = r" 1\. m:\d+ (Priya|Tom), 2024-\d\d-\d\d \d\d:\d\d, in “sample-chat” \(found by "
    assert re.match(first, lines[0]), lines[0]
    assert lines[1].startswith("    ") and "Mochi" in lines[1]
    assert len(lines) == 4
    unknown = run(db, "-n", "other", "search", "Mochi", ok=False)  # not an empty answer: an error
    assert unknown.exit_code == 1 and unknown.stderr == (f"error: no namespace 'other' in {db}; pass one of: default\n")
    assert "nothing found in namespace 'default'" in run(db, "search", "zebra", "--channels", "bm25").stdout
    bad = run(db, "search", "x", "--channels", "graph,telepathy", ok=False)
    assert bad.exit_code == 1 and bad.stderr.startswith("error: unknown channel(s) telepathy")
    assert run(db, "search", "Mochi in 2024", "--channels", "vector,bm25,graph,temporal,entity").exit_code == 0
    empty = run(db, "search", "  ", ok=False)
    assert empty.exit_code == 2 and "give a QUERY or --queries FILE" in empty.stderr


def test_search_queries_file(hashed, db, tmp_path):
    run(db, "ingest", str(SAMPLE_CHAT))
    plain = tmp_path / "q.txt"
    plain.write_text("cat Mochi\n\nPorto marathon\n")
    lines = run(db, "search", "--queries", str(plain), "-k", "2").stdout.splitlines()
    objs = [json.loads(line) for line in lines]
    assert [o["query"] for o in objs] == ["cat Mochi", "Porto marathon"]
    assert all(len(o["hits"]) == 2 for o in objs)
    assert "Mochi" in objs[0]["hits"][0]["text"] and "marathon" in objs[1]["hits"][0]["text"]
    jsonl = write_jsonl(tmp_path / "q.jsonl", [{"query": "cat Mochi", "id": 1}, {"query": "flat in Graça"}])
    objs = [json.loads(line) for line in run(db, "search", "--queries", str(jsonl)).stdout.splitlines()]
    assert [o["query"] for o in objs] == ["cat Mochi", "flat in Graça"]
    assert objs[0]["hits"] == json.loads(run(db, "search", "cat Mochi", "--json").stdout)["hits"]
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"q": "no query key"}])
    result = run(db, "search", "--queries", str(bad), ok=False)
    assert result.exit_code == 1 and "needs a string 'query'" in result.stderr
    result = run(db, "search", "--queries", str(tmp_path / "missing.txt"), ok=False)
    assert result.exit_code == 1 and result.stderr.startswith("error: cannot read")


@pytest.mark.parametrize("command", [["search", "--queries"], ["ask", "--local", "--questions"]])
def test_a_bad_question_line_is_refused_before_any_question_runs(hashed, db, tmp_path, command):
    run(db, "add", "Ana", "hello")
    path = tmp_path / "q.jsonl"
    path.write_text('first question\n{"query": "x", "now": 2024}\n', encoding="utf-8")
    result = run(db, *command, str(path), ok=False)
    assert result.exit_code == 1 and result.stdout == ""  # not even the first question ran
    assert result.stderr.startswith("error: ") and f"{path}:2: 'now' must be text, got 2024" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_stats_and_namespaces_json(hashed, db):
    run(db, "ingest", str(LOCOMO))
    stats = run_json(db, "-n", "tiny-1", "stats", "--sources")
    assert stats["namespace"] == "tiny-1" and stats["messages"] == 5 and stats["sessions"] == 2
    assert stats["first_message_at"] == "2023-05-08T13:56:00"
    assert stats["embedder"] == "hash-embedder" and stats["embed_dim"] == 64
    assert [(s["kind"], s["status"], s["messages"]) for s in stats["source_list"]] == [("locomo", "loaded", 5)]
    assert stats["source_list"][0]["uri"] == str(LOCOMO.resolve())
    text = run(db, "-n", "tiny-1", "stats", "--sources").stdout
    assert "5 messages in 1 conversation" in text and "2 episodes" in text and "sources:" in text  # a session each
    spaces = run_json(db, "namespaces")
    assert [(n["namespace"], n["messages"]) for n in spaces] == [("tiny-1", 5), ("tiny-2", 2)]
    assert "tiny-2: 2 messages in 1 conversation, 1 unit built" in run(db, "namespaces").stdout


def test_empty_store_outputs(hashed, db):
    open_memory(db).close()  # a store with nothing in it yet
    assert run_json(db, "namespaces") == []
    assert run(db, "namespaces").stdout.strip() == "the store is empty"
    assert run_json(db, "stats")["messages"] == 0  # its default namespace: nothing stored yet
    assert run(db, "search", "anything").stdout == "nothing found in namespace 'default'\n"


def test_add_json(hashed, db):
    first = run_json(
        db,
        "add",
        "Ana",
        "I started learning the cello.",
        "--time",
        "2024-05-01 18:00",
        "--role",
        "user",
        "--conversation",
        "diary",
        "--id",
        "d1",
    )
    assert first == {"id": "m:1", "external_id": "d1", "conversation": "diary", "added": True, "replaces": None}
    again = run_json(db, "add", "Ana", "I started learning the cello.", "--conversation", "diary", "--id", "d1")
    assert again["added"] is False and again["id"] == "m:1"
    assert run(db, "add", "Ben", "hi").stdout.startswith("added: m:2, said by Ben in “default”")
    hit = run_json(db, "search", "cello")["hits"][0]
    assert hit["time"] == "2024-05-01T18:00:00" and hit["sources"][0]["external_id"] == "d1"
    bad = run(db, "add", "Ana", "x", "--time", "whenever", ok=False)
    assert bad.exit_code == 1 and bad.stderr.startswith("error: add(): not a time")


def test_forget_json(hashed, db):
    run(db, "ingest", str(LOCOMO))
    dry = run(db, "forget", "--namespace", "tiny-2", "--json")  # a dry run succeeds: exit 0
    plan = json.loads(dry.stdout)
    assert plan["target"] == {"namespace": "tiny-2"} and plan["dry_run"] is True
    assert plan["counts"] == {"sources": 1, "messages": 2, "units": 1, "entities": 0}
    assert len(plan["messages"]) == 2 and all(m.startswith("m:") for m in plan["messages"])
    assert [n["namespace"] for n in run_json(db, "namespaces")] == ["tiny-1", "tiny-2"]
    source_id = run_json(db, "-n", "tiny-2", "stats", "--sources")["source_list"][0]["id"]
    elsewhere = run(db, "-n", "tiny-1", "forget", "--source", str(source_id), "--yes", ok=False)
    assert elsewhere.exit_code == 1 and f"no source {source_id} in namespace 'tiny-1'" in elsewhere.stderr
    done = run_json(db, "-n", "tiny-2", "forget", "--source", str(source_id), "--yes")
    assert done.pop("file")["wal_emptied"] is True and plan.pop("file") is None
    assert done["dry_run"] is False and done["target"] == {"source_id": source_id, "in_namespace": "tiny-2"}
    assert {k: done[k] for k in ("messages", "units", "counts")} == {
        k: plan[k] for k in ("messages", "units", "counts")
    }
    assert [n["namespace"] for n in run_json(db, "namespaces")] == ["tiny-1"]
    missing = run(db, "forget", "--namespace", "tiny-2", "--yes", ok=False)
    assert missing.exit_code == 1 and "is empty or does not exist" in missing.stderr


def test_doctor(hashed, db, tmp_path):
    missing = run_json(db, "doctor")  # a store that does not exist is reported, not created
    assert missing["db"]["exists"] is False and not db.exists()
    assert missing["llm"]["status"].startswith(("ok", "missing")) and missing["llm"]["extract"] == "none"
    open_memory(db).close()
    report = run_json(db, "doctor")
    assert report["fts5"] is True
    assert report["sqlite"].count(".") == 2 and report["sqlite_vec"].startswith("v")
    assert report["db"]["path"] == str(db) and report["db"]["schema_version"] == report["db"]["latest_schema"]
    assert report["embedder"]["status"] in ("ok", "missing")
    if report["embedder"]["status"] == "ok":
        assert report["embedder"]["from"].startswith("package ")
    model, tok = tmp_path / "mine.onnx", tmp_path / "tokenizer.json"
    model.write_bytes(b"0" * 123)
    tok.write_text("{}")
    env = {"LOCALMEM_EMBED_MODEL": str(model), "LOCALMEM_EMBED_TOKENIZER": str(tok)}
    custom = run_json(db, "doctor", env=env)["embedder"]
    assert custom == {
        "status": "ok",
        "id": "onnx:mine.onnx:123",
        "from": "env",
        "model": str(model),
        "tokenizer": str(tok),
    }
    flagged = json.loads(
        run(db, "--embed-model", str(model), "--embed-tokenizer", str(tok), "doctor", "--json").stdout
    )["embedder"]
    assert flagged["from"] == "flag"
    text = run(db, "doctor").stdout
    for key in ("sqlite:", "fts5: yes", "sqlite vec: v", "embedder:", "  from: ", "config file: ", "models on disk: "):
        assert key in text


def test_doctor_reports_a_store_embedded_with_another_model(hashed, db, tmp_path):
    run(db, "add", "Ana", "bound to the hash embedder")
    model, tok = tmp_path / "m.onnx", tmp_path / "t.json"
    model.write_bytes(b"x")
    tok.write_text("{}")
    env = {"LOCALMEM_EMBED_MODEL": str(model), "LOCALMEM_EMBED_TOKENIZER": str(tok)}
    status = run_json(db, "doctor", env=env)["embedder"]["status"]
    assert status == "mismatch: the store was embedded with hash-embedder"


def test_export_import_cli(hashed, db, tmp_path):
    run(db, "ingest", str(LOCOMO))
    run(db, "add", "Ana", "a note in the default namespace")
    out = tmp_path / "all.jsonl"
    summary = run(db, "export", "-o", str(out), "--json")
    assert json.loads(summary.stdout)["records"] == {
        "sources": 3,
        "messages": 8,
        "message_vectors": 8,
        "units": 3,
        "unit_sources": 7,
        "parts": 1,  # the context part of the one reply to a question ("What breed is Biscuit?")
        "part_vectors": 1,
    }  # episodes
    assert not (tmp_path / "all.jsonl.partial").exists()
    stdout_export = run(db, "export").stdout
    assert stdout_export == out.read_text()
    copy = tmp_path / "copy.db"
    imported = run_json(copy, "import", str(out))
    assert imported["imported"]["message"] == 8 and imported["imported"]["vector"] == 8 + 1
    assert run(copy, "export").stdout == stdout_export
    refused = run(copy, "import", str(out), ok=False)
    assert refused.exit_code == 1 and "already exist in this store" in refused.stderr
    # one namespace, without vectors: the import re-embeds
    part = tmp_path / "tiny1.jsonl"
    run(db, "-n", "tiny-1", "export", "--no-vectors", "-o", str(part))
    assert '"type":"vector"' not in part.read_text()
    fresh = tmp_path / "fresh.db"
    calls = len(hashed.calls)
    assert "imported 1 source, 5 message" in run(fresh, "import", str(part)).stdout
    assert len(hashed.calls) > calls
    assert run_json(fresh, "namespaces")[0]["namespace"] == "tiny-1"
    assert run_json(fresh, "-n", "tiny-1", "search", "Biscuit", "--channels", "vector")["hits"]
    assert run(fresh, "-n", "tiny-1", "export").stdout == run(db, "-n", "tiny-1", "export").stdout


def test_failed_export_leaves_no_file(hashed, db, tmp_path):
    run(db, "add", "Ana", "hello")
    out = tmp_path / "out.jsonl"
    result = run(db, "-n", "nope", "export", "-o", str(out), ok=False)
    assert result.exit_code == 1 and f"no namespace 'nope' in {db}; pass one of: default" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("out")) == []


def test_non_utf8_import_and_queries_files(hashed, db, tmp_path):
    run(db, "add", "Ana", "hello")
    before = snapshot(db)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"\xff\xfe not an export")
    result = run(db, "import", str(bad), ok=False)
    assert result.exit_code == 2 and result.stderr.startswith("error: ") and "not valid UTF-8" in result.stderr
    queries = tmp_path / "q.txt"
    queries.write_bytes("caf\xe9\n".encode("latin-1"))
    result = run(db, "search", "--queries", str(queries), ok=False)
    assert result.exit_code == 1 and "not valid UTF-8" in result.stderr and "unexpected" not in result.stderr
    assert snapshot(db) == before


def test_interrupt_is_reported_with_exit_130(db, use_models):
    class Interrupted(HashEmbedder):
        def embed(self, texts, role="passage"):
            raise KeyboardInterrupt

    use_models(embedder=Interrupted())
    result = run(db, "ingest", str(SAMPLE_CHAT), ok=False)
    assert result.exit_code == 130
    assert result.stderr.splitlines()[-1].startswith("interrupted: the store is consistent; re-run")


def test_reembed_cli(hashed, db):
    run(db, "ingest", str(SAMPLE_CHAT))
    with open_memory(db) as mem:
        parts = mem.conn.execute("SELECT count(*) FROM message_parts").fetchone()[0]
    assert parts > 0  # the sample chat has messages of several sentences
    result = run_json(db, "reembed")
    assert result == {"embedder": "hash-embedder", "dim": 64, "messages": 25, "parts": parts, "units": 0}
    assert "re-embedded 25 messages and 0 units" in run(db, "reembed").stdout


# -- progress and environment ------------------------------------------------------------------------


def test_no_progress_bar_without_a_terminal(hashed, db):
    result = run(db, "ingest", str(SAMPLE_CHAT))
    assert result.stderr == f"created a new store at {db}\n"  # said once, when it was created
    assert "ingesting" not in result.output
    assert run(db, "ingest", str(SAMPLE_CHAT)).stderr == ""


class _TTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_on_a_terminal_unless_quiet(hashed, db, monkeypatch):
    """The control for the test above: with a terminal on stderr the bar is drawn."""
    import localmem.cli as cli_module

    for quiet, expect_bar in ((False, True), (True, False)):
        tty = _TTY()
        monkeypatch.setattr(
            cli_module, "sys", types.SimpleNamespace(stderr=tty, stdout=sys.stdout, argv=sys.argv, exit=sys.exit)
        )
        args = ["--quiet"] if quiet else []
        db_path = db.with_name(f"p{quiet}.db")
        run(db_path, *args, "ingest", str(SAMPLE_CHAT))
        assert ("ingesting sample-chat.txt" in tty.getvalue()) is expect_bar


def test_environment_settings(hashed, tmp_path, isolated_home):
    env_db = tmp_path / "env.db"
    result = runner().invoke(
        cli, ["add", "Ana", "from env"], env={"LOCALMEM_DB_PATH": str(env_db), "LOCALMEM_NAMESPACE": "envns"}
    )
    assert result.exit_code == 0, result.output
    assert snapshot(env_db)["namespaces"][0]["namespace"] == "envns"
    # no --db and no env: the store lives under LOCALMEM_HOME
    result = runner().invoke(cli, ["add", "Ana", "default place"])
    assert result.exit_code == 0, result.output
    assert (isolated_home / "memory.db").is_file()
    bad = runner().invoke(cli, ["--db", str(env_db), "stats"], env={"LOCALMEM_BUSY_TIMEOUT_MS": "soon"})
    assert bad.exit_code == 2 and bad.stderr.startswith("error: setting busy_timeout_ms must be an integer")


def test_the_store_is_named_by_localmem_db_or_its_older_name(hashed, tmp_path, monkeypatch):
    """LOCALMEM_DB names the store (a path or a URL), as --db does; LOCALMEM_DB_PATH, its older
    name, still works; the two set to different stores is a one-line error, nothing opened."""
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "env.db"
    added = runner().invoke(cli, ["add", "Ana", "named by LOCALMEM_DB"], env={"LOCALMEM_DB": str(store)})
    assert added.exit_code == 0, added.output
    for env in ({"LOCALMEM_DB_PATH": str(store)}, {"LOCALMEM_DB": str(store), "LOCALMEM_DB_PATH": str(store)}):
        stats = runner().invoke(cli, ["stats", "--json"], env=env)
        assert stats.exit_code == 0, stats.output
        assert json.loads(stats.stdout)["messages"] == 1, env
    other = tmp_path / "other.db"
    both = runner().invoke(
        cli, ["add", "Ana", "which store?"], env={"LOCALMEM_DB": str(store), "LOCALMEM_DB_PATH": str(other)}
    )
    err = assert_one_line_error(both, 2)
    assert "LOCALMEM_DB and LOCALMEM_DB_PATH are both set, to different values; unset one" in err
    assert not other.exists()
    # a URL is a URL (not a file of that name here): its server is asked, and says it is not there
    url = f"postgresql://nobody@/nothing?host={tmp_path / 'no-server'}"
    gone = runner().invoke(
        cli, ["stats"], env={"LOCALMEM_DB": url, "LOCALMEM_BUSY_TIMEOUT_MS": "300", "LOCALMEM_KEY_ENV": ""}
    )
    said = assert_one_line_error(gone)
    if installed("psycopg", "psycopg-pool"):
        assert "cannot connect to the PostgreSQL server at postgresql://nobody@/nothing" in said
    else:  # CI's first pass has no postgres extra: the one line says how to get it
        assert "needs psycopg 3 and its pool: pip install 'localmem[postgres]'" in said
    assert {p.name for p in tmp_path.iterdir()} - {"home"} == {"env.db"}


def test_localmem_db_opens_a_postgresql_url(hashed, pg_url):
    # no store key (an encrypted run's): a URL's store is the server's to encrypt
    added = runner().invoke(
        cli, ["add", "Ana", "kept on the server"], env={"LOCALMEM_DB": pg_url, "LOCALMEM_KEY_ENV": ""}
    )
    assert added.exit_code == 0, added.output
    with Memory(pg_url, embedder=HashEmbedder()) as mem:
        assert type(mem.conn).__name__ == "PgStore" and [h.text for h in mem.recent(5)] == ["Ana: kept on the server"]


def test_config_file(hashed, tmp_path, isolated_home):
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text('namespace = "fromfile"\nchannel_budget = 7\n')
    db = tmp_path / "c.db"
    run(db, "add", "Ana", "configured")
    assert snapshot(db)["namespaces"][0]["namespace"] == "fromfile"
    (isolated_home / "config.toml").write_text('colour = "blue"\n')
    bad = run(db, "stats", ok=False)
    assert bad.exit_code == 2 and "unknown setting(s) colour" in bad.stderr
