"""No output of localmem shows a PostgreSQL password (issue 50, finding 6).

The function (:func:`localmem.redact.redact`) on the forms libpq reads a password from, and the
promise at the level a user sees it: every command (text and ``--json``), every page, every API
route and every MCP tool (the real MCP client, over stdio and over ``serve``'s /mcp) run against
a store whose URL holds the password twice (``user:PW@`` and ``&password=PW``), on a server that
asks for it (conftest's ``password_postgres``), and every byte they printed, logged or answered
searched for the password."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import anyio
import click
import pytest

from localmem.redact import Passwordless, redact
from tests.fakes import HashEmbedder, ScriptedLLM
from tests.helpers import SAMPLE_CHAT, runner

# -- the function --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("postgresql://bob:s3cret@db.example:5432/mem", "postgresql://bob:***@db.example:5432/mem"),
        ("postgres://bob:s3cret@/mem?host=/run/pg", "postgres://bob:***@/mem?host=/run/pg"),
        ("postgresql://bob:p@ss@host/mem", "postgresql://bob:***@host/mem"),  # an unescaped '@' hidden whole
        ("postgresql://bob@/mem?host=/run/pg&password=s3cret", "postgresql://bob@/mem?host=/run/pg&password=***"),
        ("postgresql:///mem?password=s3cret&sslmode=disable", "postgresql:///mem?password=***&sslmode=disable"),
        ("postgresql:///mem?PassWord=s3cret#frag", "postgresql:///mem?PassWord=***#frag"),
        ("postgresql:///mem?sslpassword=keypass", "postgresql:///mem?sslpassword=***"),
        ("host=/run/pg password=s3cret dbname=mem", "host=/run/pg password=*** dbname=mem"),
        ("host=/run/pg password = 'se cr\\'et' dbname=mem", "host=/run/pg password = *** dbname=mem"),
        # In a message: the punctuation after the URL is the message's.
        (
            "cannot connect to postgresql://u:a1@h/d?password=b2: FATAL: password authentication failed",
            "cannot connect to postgresql://u:***@h/d?password=***: FATAL: password authentication failed",
        ),
        (
            "two: postgresql://a:x1@h/d and postgresql://b:x2@h/d.",
            "two: postgresql://a:***@h/d and postgresql://b:***@h/d.",
        ),
        # Nothing to hide: left as it is.
        (
            "postgresql://localhost:5432/mem?application_name=a@b",
            "postgresql://localhost:5432/mem?application_name=a@b",
        ),
        ("postgresql://bob@/mem?host=/run/pg&passfile=/home/bob/.pgpass", None),
        ('FATAL:  password authentication failed for user "bob"', None),
        ("/home/bob/memory.db", None),
    ],
)
def test_redact_hides_every_form_libpq_takes_a_password_in(text, shown):
    assert redact(text) == (text if shown is None else shown)


def test_errors_and_log_lines_are_redacted_where_they_are_made(caplog):
    from localmem.errors import LocalmemError, StoreNotFoundError

    error = LocalmemError("failed at postgresql://u:s3cret@h/d", "retry postgresql://u@h/d?password=s3cret")
    assert "s3cret" not in str(error) and "s3cret" not in json.dumps(error.to_dict())
    assert "s3cret" not in str(StoreNotFoundError("postgresql://u:s3cret@h/d"))
    record = logging.LogRecord("x", logging.WARNING, __file__, 1, "at %s", ("postgresql://u:s3cret@h/d",), None)
    try:
        raise RuntimeError("host=/x password=s3cret")
    except RuntimeError:
        record.exc_info = sys.exc_info()
    assert Passwordless().filter(record)
    text = logging.Formatter().format(record)
    assert "s3cret" not in text and "***" in text


# -- every output, against a store whose URL holds the password ---------------------------------------

# What each command is run with; every command of the CLI must be here (a new one too).
COMMANDS: dict[tuple[str, ...], tuple[str, ...] | str] = {
    ("add",): ("Ann", "I moved to Oslo last spring for the harbour job."),
    ("ingest",): (str(SAMPLE_CHAT),),
    ("search",): ("Oslo",),
    ("ask",): ("Where did Ann move?",),
    ("correct",): ("m:1", "I moved to Oslo last spring for the new harbour job."),
    ("show",): ("m:1",),
    ("stats",): ("--sources",),
    ("namespaces",): (),
    ("doctor",): (),
    ("models",): (),
    ("episodes",): (),
    ("facts",): (),
    ("entities",): (),
    ("profile",): ("Ann",),
    ("owner", "set"): ("Ann", "--add"),
    ("owner", "confirm"): (),
    ("owner", "clear"): (),
    ("flush",): (),
    ("consolidate",): (),
    ("export",): (),  # -o is added below
    ("import",): (),  # the export's file is added below, into a store of its own
    ("forget",): ("m:1", "--yes"),
    ("vacuum",): (),
    ("reembed",): (),
    ("encrypt",): ("--new-key-env", "LM_TEST_NEW_KEY"),
    ("rekey",): ("--new-key-env", "LM_TEST_NEW_KEY"),
    ("decrypt",): (),
    ("postgres", "grant"): ("lm_reader", "default"),
    ("postgres", "status"): "the local server's own data directory: never --db (tests/store/test_pgserver.py)",
    ("postgres", "start"): "the local server's own data directory: never --db (tests/store/test_pgserver.py)",
    ("postgres", "stop"): "the local server's own data directory: never --db (tests/store/test_pgserver.py)",
    ("serve",): "runs until stopped: spawned below, every page, API route and MCP tool",
    ("mcp",): "runs until stopped: spawned below with the MCP client",
    ("bench", "ask"): ("QUESTIONS",),
    ("bench", "ingest"): "makes stores of its own in --workdir, never --db",
    ("bench", "search"): "makes stores of its own in --workdir, never --db",
    ("bench", "serve"): "makes stores of its own in --workdir, never --db",
    ("bench", "memory"): "makes stores of its own in --workdir, never --db",
    ("bench", "mcp"): "makes stores of its own in --workdir, never --db",
    ("bench", "llm"): "loads the LLM alone (an in-memory store), never --db",
    ("eval", "locomo"): "reads a benchmark's file into stores of its own, never --db",
    ("eval", "longmemeval"): "reads a benchmark's file into stores of its own, never --db",
}


def _commands(group: click.Group, path: tuple[str, ...] = ()):
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name)


def _answer(messages):
    """The scripted LLM: an answer quoting the first evidence item, or no units when building."""
    if "[1]" not in messages[-1]["content"]:
        return {"units": []}
    return {"answer": "Oslo", "supports": [1], "confidence": 0.9}


def _run_every_command(url: str, tmp_path: Path, use_models) -> list[str]:
    from localmem.cli import cli

    use_models(embedder=HashEmbedder(), llm=ScriptedLLM(responder=_answer))
    cli.load_plugins()  # the benchmarks' commands too (pip install -e ./bench)
    assert set(_commands(cli)) == set(COMMANDS), "every command is run here, or says why not"
    questions = tmp_path / "questions.jsonl"
    questions.write_text(json.dumps({"question": "Where did Ann move?", "answer": "Oslo"}) + "\n")
    outputs = []
    for path, args in COMMANDS.items():
        if isinstance(args, str):
            continue
        for as_json in (False, True):
            extra = list(args)
            if path == ("export",):
                extra = ["-o", str(tmp_path / f"export-{as_json}.jsonl")]
            db = url
            if path == ("import",):  # into another database (its namespaces exist in this one)
                db, extra = url.replace("/lmout?", "/lmin?"), [str(tmp_path / f"export-{as_json}.jsonl")]
            if path == ("bench", "ask"):
                extra = [str(questions)]
            if path == ("forget",) and as_json:
                extra = ["m:2", "--yes"]
            result = runner().invoke(
                cli, ["--db", db, *path, *extra, *(["--json"] if as_json else [])], env={"LM_TEST_NEW_KEY": "k" * 24}
            )
            said = f"{result.stdout}\n{result.stderr}\n{result.exception!r}"
            assert "Traceback" not in said, (path, said)
            outputs.append(said)
    outputs += [(tmp_path / f"export-{as_json}.jsonl").read_text() for as_json in (False, True)]
    return outputs


async def _call_every_tool(client) -> list[str]:
    """Every MCP tool of ``client``'s server called once; what each answered, as JSON."""
    tools = {t.name for t in (await client.list_tools()).tools}
    args = {
        "remember": {"text": "I moved to Bergen in May.", "speaker": "Ann"},
        "search": {"query": "Where did Ann move?"},
        "ask": {"question": "Where did Ann move?"},
        "profile": {"name": "Ann"},
        "recent": {"n": 3},
        "stats": {},
        "forget": {"message_id": "m:3"},
    }
    assert tools == set(args), tools
    said = []
    for name, arguments in args.items():
        result = await client.call_tool(name, arguments)
        said.append(json.dumps(result.model_dump(mode="json"), ensure_ascii=False))
    return said


def _serve_outputs(url: str, tmp_path: Path) -> list[str]:
    """Every page, API route and MCP tool of a spawned ``serve`` on the store, and its log."""
    httpx2 = pytest.importorskip("httpx2")
    pytest.importorskip("starlette", reason="pip install 'localmem[mcp]'")
    from localmem.serve import api, pages
    from tests.serve.server import spawn

    log = tmp_path / "logs" / "serve.log"
    server = spawn(tmp_path, url, "--log-file", str(log), before=("--debug",))  # type: ignore[arg-type]
    outputs: list[str] = []
    try:
        gets = {
            "/": {"q": "Oslo"},
            "/ask/stream": {"q": "Where did Ann move?"},
            "/conversation": {"name": "chat"},
            "/timeline": {},
            "/period": {"start": "2000-01-01", "end": "2100-01-01"},
            "/people": {},
            "/people/{name}": {},
            "/memory/{item}": {},
            "/curate": {},
            "/curate/forget": {"ids": "m:4"},
            "/settings": {},
            "/conversations": {},
            "/overview": {},
            "/curate/forgotten": {"messages": "1"},
            "/curate/imported": {"report": "none"},
            "/api/search": {"q": "Oslo"},
            "/api/show/{item}": {},
            "/api/context/{item}": {},
            "/api/profile/{name}": {},
            "/api/people": {},
            "/api/episodes": {},
            "/api/timeline": {},
            "/api/speakers": {},
            "/api/period": {"start": "2000-01-01", "end": "2100-01-01"},
            "/api/stats": {},
            "/api/namespaces": {},
            "/api/doctor": {},
            "/api/openapi.json": {},
            "/api/hello": {"nonce": "n" * 24},
        }
        posts = {
            "/api/ask": {"json": {"question": "Where did Ann move?", "stream": False}},
            "/api/add": {"json": {"speaker": "Ann", "text": "I moved to Tromsø later."}},
            "/api/ingest": {"files": {"file": ("chat.txt", SAMPLE_CHAT.read_bytes())}},
            "/api/forget": {"json": {"ids": ["m:4"]}},
            "/api/correct": {"json": {"item": "m:5", "text": "corrected"}},
            "/curate/forget": {"data": {"ids": "m:5", "confirm": "1"}},
            "/curate/correct": {"data": {"item": "m:6", "text": "corrected again"}},
            "/curate/import": {"files": {"file": ("chat.txt", SAMPLE_CHAT.read_bytes())}},
            "/curate/report": {},  # the report of /api/ingest, posted back as the page's script does
        }
        routes = {(m, r.path) for r in pages.routes() for m in (r.methods or ()) if m != "HEAD"}
        routes |= {(e.method, e.path) for e in api.ENDPOINTS}
        asked = {("GET", p) for p in gets} | {("POST", p) for p in posts}
        assert routes == asked, "every page and API route is asked here"
        fill = {"{name}": "Ann", "{item}": "m:1"}
        with httpx2.Client(base_url=server.base, headers=server.auth, timeout=120) as http:
            for path, params in gets.items():
                for key, value in fill.items():
                    path = path.replace(key, value)
                r = http.get(path, params=params)
                assert r.status_code < 500, (path, r.text[:300])
                outputs.append(f"{path} {r.status_code} {r.headers} {r.text}")
            for path, kwargs in posts.items():
                r = http.post(path, **kwargs)
                assert r.status_code < 500, (path, r.text[:300])
                outputs.append(f"{path} {r.status_code} {r.headers} {r.text}")
                if path == "/api/ingest":
                    events = [json.loads(line) for line in r.text.splitlines() if line.strip()]
                    posts["/curate/report"] = {"json": next(e["report"] for e in events if e.get("event") == "report")}
            settings = http.get("/settings").text
            assert "lm_pw:***@" in settings  # the store is shown, without its password

        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        async def over_http() -> list[str]:
            async with httpx2.AsyncClient(headers=server.auth, timeout=120) as http:
                transport = streamable_http_client(f"{server.base}/mcp", http_client=http)
                async with Client(transport, read_timeout_seconds=120) as client:
                    return await _call_every_tool(client)

        outputs += anyio.run(over_http)
    finally:
        assert server.stop() == 0, server.stderr.read_text()
    outputs += [server.stderr.read_text(), log.read_text()]
    return outputs


def _mcp_stdio_outputs(url: str, tmp_path: Path) -> list[str]:
    pytest.importorskip("mcp", reason="pip install 'localmem[mcp]'")
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from tests.serve.server import env

    errors = tmp_path / "mcp.stderr"
    log = tmp_path / "logs" / "mcp.log"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "localmem", "--db", url, "--debug", "mcp", "--log-file", str(log)],
        env=env(tmp_path),
    )

    async def main() -> list[str]:
        with errors.open("a", encoding="utf-8") as errlog:
            async with Client(stdio_client(params, errlog=errlog), mode="legacy", read_timeout_seconds=120) as client:
                return await _call_every_tool(client)

    said = anyio.run(main)
    return [*said, errors.read_text(), log.read_text() if log.exists() else ""]


@pytest.mark.plain_only  # its store is a PostgreSQL URL: an encrypted run's key has nothing to do there
def test_no_command_page_api_route_or_mcp_tool_shows_the_password(password_postgres, tmp_path, use_models):
    server = password_postgres
    for database in ("lmout", "lmin"):
        server.admin(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
        server.admin(f"CREATE DATABASE {database} OWNER lm_pw")
    url = server.url("lmout", userinfo=True, query=True)
    assert url.count(server.password) == 2
    for part in ("cli", "serve", "mcp"):
        (tmp_path / part).mkdir()
    outputs = _run_every_command(url, tmp_path / "cli", use_models)
    outputs += _serve_outputs(url, tmp_path / "serve")
    outputs += _mcp_stdio_outputs(url, tmp_path / "mcp")
    # The outputs name the store (stats, doctor, the log...), so the URL was there to leak.
    assert sum("lm_pw:***@/lmout" in said for said in outputs) >= 4
    leaked = [said[:300] for said in outputs if server.password in said]
    assert not leaked, leaked
    from localmem.store import pgpool

    pgpool.close_pools()
    for database in ("lmout", "lmin"):
        server.admin(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
