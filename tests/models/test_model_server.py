"""The model-server backend against scripted OpenAI-compatible servers on 127.0.0.1: each
server convention, each failure (a one-line error naming the URL), nothing lost when a server
fails part-way, parallel episodes, and the API key kept out of the store and the messages."""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from localmem import Memory, ModelNotFoundError, ModelServerError
from localmem.cli import cli
from localmem.config import Config
from localmem.errors import ConfigError
from localmem.models import factory
from localmem.models.structured import complete_structured
from tests.fakes import HashEmbedder
from tests.helpers import REPO, runner
from tests.model_server import Reply, Request, ScriptedServer, chat, openai_server
from tests.pipeline.test_pipeline import _responder

# Plain stores only: these tests spawn CLIs and servers with environments of their own;
# the CLI paths they use run on encrypted stores in the rest of the suite.
pytestmark = pytest.mark.plain_only

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "maxLength": 20}},
    "required": ["answer"],
    "additionalProperties": False,
}
ASK = [{"role": "user", "content": "What is it?"}]


def _llm(server: ScriptedServer, **settings):
    return factory.create("llm", Config(llm_url=server.url, **settings))


def _transcript(tmp_path: Path, sessions: int = 4) -> Path:
    lines = []
    for s in range(sessions):
        lines.append(f"[2023-0{1 + s // 28}-{1 + s % 28:02d} 10:00]")
        lines += [f"Ann: Session {s} news: bought lamp {s}.", f"Bob: Reply {s}: sold bike {s}."]
    path = tmp_path / "chat.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- the model name ------------------------------------------------------------------------------
def test_the_one_model_a_server_serves_is_used_without_a_name():
    with openai_server(lambda m: {"answer": "ok"}, models=("qwen:1.5b",)) as server:
        llm = _llm(server)
        assert llm.model_id == "openai:qwen:1.5b"
        assert complete_structured(llm, ASK, SCHEMA, 20).data == {"answer": "ok"}
        assert server.chats()[0].body["model"] == "qwen:1.5b"


def test_a_model_the_server_does_not_serve_is_a_one_line_error_listing_what_it_serves():
    with openai_server(lambda m: {}, models=("llama3:8b", "qwen:1.5b")) as server:
        with pytest.raises(ModelNotFoundError) as err:
            _llm(server, llm_name="mistral")
        message = str(err.value)
        assert server.url in message and "'mistral'" in message and "llama3:8b, qwen:1.5b" in message
        assert "--llm-name" in message and "\n" not in message
        with pytest.raises(ModelNotFoundError, match="several models"):
            _llm(server)
        assert server.chats() == []  # nothing was asked of a model before the name was right


def test_an_ollama_name_without_a_tag_means_latest():
    with openai_server(lambda m: {"answer": "ok"}, models=("qwen2.5:latest", "llama3:8b")) as server:
        assert _llm(server, llm_name="qwen2.5").model_id == "openai:qwen2.5:latest"


# -- structured output: the forms, each server's convention --------------------------------------
def _refusing(refused: set[str], seen: list[str]):
    """A server refusing some response_format types, as the real ones do."""

    def route(request: Request):
        if request.path == "/v1/models":
            return {"data": [{"id": "m"}]}
        fmt = request.body.get("response_format") or {}
        kind = fmt.get("type", "text") + ("+schema" if "schema" in fmt else "")
        seen.append(kind)
        if fmt.get("type") in refused or kind in refused:
            return Reply(400, {"error": {"message": f"'response_format.type' {fmt.get('type')!r} is not supported"}})
        return chat('```json\n{"answer": "ok"}\n```' if kind in ("json_object", "text") else '{"answer": "ok"}')

    return route


@pytest.mark.parametrize(
    "refused, used",
    [
        (set(), "json_schema"),  # OpenAI's form: LM Studio, Ollama, vLLM, llama-server
        ({"json_schema"}, "json_object+schema"),  # llama-cpp-python's server
        ({"json_schema", "json_object+schema"}, "json_object"),  # JSON mode only
        ({"json_schema", "json_object"}, "text"),  # nothing accepted
    ],
)
def test_the_first_form_a_server_accepts_is_used_and_kept(refused, used):
    seen: list[str] = []
    with ScriptedServer(_refusing(refused, seen)) as server:
        llm = _llm(server)
        assert complete_structured(llm, ASK, SCHEMA, 20).data == {"answer": "ok"}  # fences unwrapped
        first = len(seen)
        assert seen[-1] == used and llm.structured_output == used
        complete_structured(llm, ASK, SCHEMA, 20)
        assert seen[first:] == [used]  # asked in the kept form at once


def test_the_schema_travels_in_each_servers_own_place():
    seen: list[dict] = []

    def route(request: Request):
        if request.path == "/v1/models":
            return {"data": [{"id": "m"}]}
        seen.append(request.body)
        if request.body["response_format"]["type"] == "json_schema":  # llama-cpp-python: a 500
            return Reply(
                500,
                {
                    "error": {"message": "Input should be 'text' or 'json_object'", "type": "internal_server_error"},
                    "detail": [{"loc": ["body", "response_format", "type"]}],
                },
            )
        return chat('{"answer": "ok"}')

    with ScriptedServer(route) as server:
        complete_structured(_llm(server), ASK, SCHEMA, 20)
    assert seen[0]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "reply", "schema": SCHEMA, "strict": True},
    }
    assert seen[1]["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert seen[1]["temperature"] == 0 and seen[1]["repeat_penalty"] == 1.0 and seen[1]["max_tokens"] == 20


def test_a_server_that_refuses_llama_cpps_repeat_penalty_gets_requests_without_it():
    def route(request: Request):
        if request.path == "/v1/models":
            return {"data": [{"id": "m"}]}
        if "repeat_penalty" in request.body:
            return Reply(400, {"error": {"message": "Unrecognized request argument supplied: repeat_penalty"}})
        return chat('{"answer": "ok"}')

    with ScriptedServer(route) as server:
        llm = _llm(server)
        assert complete_structured(llm, ASK, SCHEMA, 20).ok
        assert complete_structured(llm, ASK, SCHEMA, 20).ok
        assert [("repeat_penalty" in r.body) for r in server.chats()] == [True, False, False]


def test_an_invalid_reply_gets_the_repair_retry_as_in_process():
    replies = iter(['{"answer": ', '{"answer": "fixed"}'])
    with openai_server(lambda m: next(replies)) as server:
        result = complete_structured(_llm(server), ASK, SCHEMA, 20)
        assert result.data == {"answer": "fixed"} and result.calls == 2
        assert "invalid" in server.chats()[1].body["messages"][-1]["content"]


def test_a_streamed_reply_reaches_on_text_piece_by_piece():
    with openai_server(lambda m: {"answer": "streamed answer"}) as server:
        pieces: list[str] = []
        done = _llm(server).complete_json(ASK, SCHEMA, 20, on_text=pieces.append)
        assert len(pieces) > 1 and "".join(pieces) == done.text == '{"answer": "streamed answer"}'
        assert done.completion_tokens == len(pieces) and done.prompt_tokens > 0  # estimated: no usage sent


# -- the judge and token counts -------------------------------------------------------------------
def test_the_judge_reads_p_yes_from_top_log_probabilities():
    with openai_server(lambda m: {}, judge=lambda m: 0.8 if "sky" in m[-1]["content"] else 0.1) as server:
        llm = _llm(server)
        judged = llm.judge(
            [[{"role": "user", "content": "Is the sky blue?"}], [{"role": "user", "content": "Is fire cold?"}]]
        )
        assert [round(p, 3) for p in judged.p_yes] == [0.8, 0.1] and llm.judge_path == "top log probabilities"
        body = server.chats()[0].body
        assert body["max_tokens"] == 1 and body["logprobs"] is True and body["top_logprobs"] == 20


@pytest.mark.parametrize("refuses", [True, False])
def test_without_log_probabilities_the_generated_token_decides(refuses):
    def route(request: Request):
        if request.path == "/v1/models":
            return {"data": [{"id": "m"}]}
        if refuses and "logprobs" in request.body:
            return Reply(400, {"error": {"message": "logprobs is not supported"}})
        said = "Yes" if "sky" in request.body["messages"][-1]["content"] else "no."
        return chat(said)  # LM Studio: logprobs accepted, none returned

    with ScriptedServer(route) as server:
        llm = _llm(server)
        judged = llm.judge(
            [[{"role": "user", "content": "Is the sky blue?"}], [{"role": "user", "content": "Is fire cold?"}]]
        )
        assert judged.p_yes == [1.0, 0.0] and llm.judge_path == "one generated token"
        assert "logprobs" not in server.chats()[-1].body  # not asked again


@pytest.mark.parametrize(
    "kind, path",
    [
        ("llama-server", "/tokenize (llama.cpp's llama-server)"),
        ("vllm", "/tokenize (vLLM)"),
        ("llama-cpp-python", "/extras/tokenize (llama-cpp-python's server)"),
    ],
)
def test_tokens_are_counted_by_the_servers_own_endpoint(kind, path):
    with openai_server(lambda m: {}, tokenize=kind) as server:
        llm = _llm(server)
        assert llm.count_tokens("one two three four five") == 5  # a BOS the endpoint adds is not counted
        assert llm.token_counting == path
        assert llm.count_tokens("six seven") == 2


def test_a_server_without_a_tokenize_endpoint_gets_a_local_estimate():
    with openai_server(lambda m: {}, tokenize=None) as server:  # Ollama, LM Studio
        llm = _llm(server)
        assert llm.count_tokens("x" * 40) == factory.approximate_tokens("x" * 40)
        assert llm.token_counting.startswith("local estimate")
        assert [r.path for r in server.requests if r.method == "POST"] == [
            "/tokenize",
            "/tokenize",
            "/extras/tokenize",
        ]  # probed once, each known endpoint


# -- failures: one line, naming the URL, saying what to do ----------------------------------------
def _fails(url: str, tmp_path: Path, **env: str):
    transcript = _transcript(tmp_path, 1)
    return runner().invoke(
        cli, ["--db", str(tmp_path / "m.db"), "--llm-url", url, "ingest", str(transcript), "--extract", "llm"], env=env
    )


def _one_line(result, code: int, *words: str) -> str:
    message = result.stderr.strip()
    if message.startswith("created a new store at "):  # the ingest had stored its messages
        message = message.split("\n", 1)[-1]
    assert result.exit_code == code, (result.output, result.exception)
    assert "\n" not in message and "Traceback" not in result.output, message
    for word in words:
        assert word in message, message
    return message


def test_a_server_that_is_down_is_named_with_what_to_do(tmp_path, use_models):
    use_models(embedder=HashEmbedder())
    url = f"http://127.0.0.1:{_free_port()}/v1"
    message = _one_line(_fails(url, tmp_path), 5, url, "connection refused", "start it", "--llm-url")
    assert message.startswith("error: cannot reach the model server")


def test_a_server_that_does_not_answer_in_time(tmp_path, use_models):
    use_models(embedder=HashEmbedder())
    with openai_server(lambda m: {}, delay=2.0) as server:
        _one_line(
            _fails(server.url, tmp_path, LOCALMEM_LLM_TIMEOUT="0.5"),
            5,
            server.url,
            "did not answer within 0.5 s ",  # the setting as given, not rounded to 0
            "llm_timeout",
        )


@pytest.mark.parametrize(
    "status, body, words",
    [
        (
            500,
            {"error": {"message": "CUDA out of memory", "type": "server_error"}},
            ("500 Internal Server Error", "CUDA out of memory", "server's log"),
        ),
        (
            400,
            {"error": {"message": "This model's maximum context length is 2048 tokens"}},
            ("400 Bad Request", "maximum context length"),
        ),
        (200, "<html><body>Welcome to nginx!</body></html>", ("not JSON", "text/html", "/v1")),
        (200, {"unexpected": True}, ("not a chat completion",)),
    ],
)
def test_http_errors_and_replies_that_are_not_json(tmp_path, use_models, status, body, words):
    use_models(embedder=HashEmbedder())

    def route(request: Request):
        if request.path == "/v1/models":
            return {"data": [{"id": "m"}]}
        return Reply(status, body, content_type="text/html" if isinstance(body, str) else "application/json")

    with ScriptedServer(route) as server:
        _one_line(_fails(server.url, tmp_path), 5, server.url, *words)


def test_an_unknown_model_exits_4_and_a_url_without_v1_gets_a_hint(tmp_path, use_models):
    use_models(embedder=HashEmbedder())
    with openai_server(lambda m: {}, models=("a", "b")) as server:
        _one_line(_fails(server.url, tmp_path, LOCALMEM_LLM_NAME="c"), 4, server.url, "'c'", "a, b")
        root = server.url[:-3]
        _one_line(_fails(root, tmp_path), 5, root, "404", f"--llm-url {root}/v1")


def test_a_busy_server_is_asked_again_before_giving_up(monkeypatch):
    from localmem.models.backends import http_transport

    monkeypatch.setattr(http_transport, "RETRY_WAITS", (0.01, 0.01))
    answers = iter([Reply(503, {"error": {"message": "Loading model"}})] * 2 + [Reply(body=chat('{"answer": "ok"}'))])

    def route(request: Request):
        return {"data": [{"id": "m"}]} if request.path == "/v1/models" else next(answers)

    with ScriptedServer(route) as server:
        assert complete_structured(_llm(server), ASK, SCHEMA, 20).ok and len(server.chats()) == 3


# -- the API key ----------------------------------------------------------------------------------
KEY = "sk-test-5e3b9d2f0c1a7e6b"


def test_the_api_key_is_sent_but_never_stored_nor_shown(tmp_path, use_models, monkeypatch):
    use_models(embedder=HashEmbedder())
    monkeypatch.setenv("MY_SERVER_KEY", KEY)
    with openai_server(_responder) as server:
        db = tmp_path / "m.db"
        result = runner().invoke(
            cli,
            [
                "--db",
                str(db),
                "--llm-url",
                server.url,
                "ingest",
                str(_transcript(tmp_path, 2)),
                "--extract",
                "llm",
                "--consolidate",
                "fast",
            ],
            env={"LOCALMEM_LLM_API_KEY_ENV": "MY_SERVER_KEY"},
        )
        assert result.exit_code == 0, result.output
        assert {r.headers.get("Authorization") for r in server.requests} == {f"Bearer {KEY}"}
        doctor = runner().invoke(
            cli, ["--db", str(db), "--llm-url", server.url, "doctor"], env={"LOCALMEM_LLM_API_KEY_ENV": "MY_SERVER_KEY"}
        )
        assert "from $MY_SERVER_KEY" in doctor.stdout
    for path in tmp_path.glob("m.db*"):
        assert KEY.encode() not in path.read_bytes()
    assert KEY not in result.output + result.stderr + doctor.output + doctor.stderr


def test_a_refused_or_missing_key_names_the_variable_not_the_key(tmp_path, use_models, monkeypatch):
    use_models(embedder=HashEmbedder())

    def route(request: Request):
        return Reply(401, {"error": {"message": "Invalid API key"}})

    with ScriptedServer(route) as server:
        monkeypatch.setenv("MY_SERVER_KEY", KEY)
        message = _one_line(
            _fails(server.url, tmp_path, LOCALMEM_LLM_API_KEY_ENV="MY_SERVER_KEY"),
            5,
            "refused the API key",
            "$MY_SERVER_KEY",
        )
        assert KEY not in message
        monkeypatch.delenv("MY_SERVER_KEY")
        with pytest.raises(ConfigError, match=r"\$MY_SERVER_KEY, which is not set"):
            _llm(server, llm_api_key_env="MY_SERVER_KEY")


# -- building memory through a server ---------------------------------------------------------------
def _counts(conn) -> dict[str, int]:
    return dict(conn.execute("select kind || ':' || coalesce(stage, ''), count(*) from units group by 1"))


@pytest.mark.parametrize("workers", [1, 3])
def test_a_server_failing_part_way_leaves_the_store_as_it_was_before_that_episode(tmp_path, workers):
    healthy = threading.Event()

    def responder(messages):
        if "Session 2 news" in messages[-1]["content"] and not healthy.is_set():
            raise RuntimeError("the third episode's extraction fails")
        return _responder(messages)

    def route(request: Request):
        try:
            return base(request)
        except RuntimeError as exc:
            return Reply(500, {"error": {"message": str(exc)}})

    base = openai_server(responder).route
    transcript = _transcript(tmp_path, 5)
    with ScriptedServer(route) as server:
        config = Config(llm_url=server.url, verify_facts=0, llm_workers=workers)
        with Memory(tmp_path / "m.db", namespace="t", config=config, embedder=HashEmbedder()) as mem:
            with pytest.raises(ModelServerError, match="500"):
                mem.ingest(transcript, extract="llm")
            before = _counts(mem.conn)
            assert before == {"episode:done": 2, "episode:segmented": 3, "gist:": 4, "fact:": 4}
            assert mem.conn.execute("select count(*) from llm_calls where stage = 'extract'").fetchone()[0] == 2
            healthy.set()
            report = mem.extraction.extract()
            assert report.episodes == 3 and report.failed == 0
            assert _counts(mem.conn) == {"episode:done": 5, "gist:": 10, "fact:": 10}
            assert (
                mem.conn.execute(
                    "select count(*) from (select text from units where kind = 'gist' "
                    "group by text having count(*) > 1)"
                ).fetchone()[0]
                == 0
            )


def test_workers_run_episodes_at_once_and_store_the_same_memory(tmp_path):
    transcript = _transcript(tmp_path, 6)
    stores = {}
    for workers in (1, 3):
        with openai_server(_responder, delay=0.2) as server:
            config = Config(llm_url=server.url, llm_workers=workers)
            with Memory(tmp_path / f"w{workers}.db", namespace="t", config=config, embedder=HashEmbedder()) as mem:
                report = mem.ingest(transcript, extract="llm")
                assert report.build["t"]["workers"] == workers and report.build["t"]["episodes"] == 6
                stores[workers] = (
                    sorted(mem.conn.execute("select kind, text, episode_id from units")),
                    sorted(mem.conn.execute("select name from entities")),
                )
            assert server.most_in_flight == workers
    assert stores[1] == stores[3]


def test_the_in_process_model_takes_one_call_at_a_time(tmp_path):
    from localmem.pipeline.pipeline import workers_for
    from tests.fakes import ScriptedLLM

    assert workers_for(ScriptedLLM(), 4) == 1
    with openai_server(lambda m: {}) as server:
        assert workers_for(_llm(server), 4) == 4


def test_ask_consolidate_and_profile_run_through_a_server(tmp_path):
    def responder(messages):
        if messages[0]["content"].startswith("You answer questions"):
            return {"answer": "a lamp", "supports": [1], "confidence": 0.9}
        return _responder(messages)

    with openai_server(responder) as server:
        config = Config(llm_url=server.url)
        with Memory(tmp_path / "m.db", namespace="t", config=config, embedder=HashEmbedder()) as mem:
            mem.ingest(_transcript(tmp_path, 3), extract="llm", consolidate="fast")
            answer = mem.ask("What did Ann buy?")
            assert answer.error is None
            assert mem.conn.execute("select count(distinct model_id) from llm_calls").fetchone()[0] == 1
            assert mem.conn.execute("select model_id from units where kind = 'episode'").fetchone()[0] == "openai:tiny"


# -- no compiler: nothing imports llama_cpp on the server path ------------------------------------------
_NO_LLAMA = """
import sys
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name == "llama_cpp" or name.startswith("llama_cpp."):
            raise ImportError("llama_cpp is blocked in this test")
sys.meta_path.insert(0, Blocker())
sys.path.insert(0, sys.argv[1])
from click.testing import CliRunner
from localmem.cli import cli
from localmem.models.factory import register
from tests.fakes import HashEmbedder

register("embedder", "test-fake", lambda config: HashEmbedder())
args = ["--db", sys.argv[2], "--llm-url", sys.argv[3]]
for command in (["ingest", sys.argv[4], "--extract", "llm", "--consolidate", "fast"], ["ask", "What did Ann buy?"],
                ["consolidate"], ["profile", "Ann", "--summary"], ["doctor"]):
    result = CliRunner().invoke(cli, args + command, env={"LOCALMEM_EMBED_BACKEND": "test-fake"})
    assert result.exit_code == 0, (command, result.output, result.exception)
assert not [m for m in sys.modules if m.startswith("llama_cpp")]
print("no llama_cpp")
"""


@pytest.mark.slow
def test_the_server_path_never_imports_llama_cpp(tmp_path):
    def responder(messages):
        system = messages[0]["content"]
        if system.startswith("You write a short profile"):
            return {"summary": "Ann buys lamps."}
        if system.startswith("You answer questions"):
            return {"answer": "a lamp", "supports": [1], "confidence": 0.9}
        return _responder(messages)

    with openai_server(responder) as server:
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                _NO_LLAMA,
                str(REPO),
                str(tmp_path / "m.db"),
                server.url,
                str(_transcript(tmp_path, 2)),
            ],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "LOCALMEM_HOME": str(tmp_path / "home")},
        )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("no llama_cpp")


# -- doctor -------------------------------------------------------------------------------------------
def test_doctor_says_which_path_each_capability_takes(tmp_path, use_models):
    use_models(embedder=HashEmbedder())

    def route(request: Request):
        if request.path == "/v1/models":
            return {"data": [{"id": "m"}]}
        if request.path == "/extras/tokenize":
            return {"tokens": [1, 2]}
        if request.path != "/v1/chat/completions":
            return Reply(404, {"detail": "Not Found"})
        fmt = request.body.get("response_format") or {}
        if fmt.get("type") == "json_schema":
            return Reply(500, {"error": {"message": "response_format: Input should be 'text' or 'json_object'"}})
        if request.body.get("max_tokens") == 1:
            return chat(
                "Yes", logprobs=[{"token": "Yes", "logprob": math.log(0.7)}, {"token": "No", "logprob": math.log(0.3)}]
            )
        return chat('{"answer": "bound"}')

    with ScriptedServer(route) as server:
        result = runner().invoke(cli, ["--db", str(tmp_path / "m.db"), "--llm-url", server.url, "doctor", "--json"])
    llm = json.loads(result.stdout)["llm"]
    assert llm["status"] == "ok" and llm["url"] == server.url and llm["model"] == "m"
    assert llm["structured output"] == "response_format json_object+schema, enforced by the server"
    assert llm["judge"] == "top log probabilities"
    assert llm["token counting"] == "/extras/tokenize (llama-cpp-python's server)"


def test_doctor_reports_a_server_that_is_down_instead_of_failing(tmp_path, use_models):
    use_models(embedder=HashEmbedder())
    url = f"http://127.0.0.1:{_free_port()}/v1"
    result = runner().invoke(cli, ["--db", str(tmp_path / "m.db"), "--llm-url", url, "doctor", "--json"])
    assert result.exit_code == 0
    llm = json.loads(result.stdout)["llm"]
    assert llm["status"].startswith("error: cannot reach the model server") and url in llm["status"]


def test_doctor_locates_the_in_process_model_without_loading_it(tmp_path, use_models):
    use_models(embedder=HashEmbedder())
    result = runner().invoke(
        cli, ["--db", str(tmp_path / "m.db"), "--llm-model", str(tmp_path / "none.gguf"), "doctor", "--json"]
    )
    llm = json.loads(result.stdout)["llm"]
    assert llm["backend"].startswith("llama") and llm["status"].startswith("missing")
    assert llm["judge"] == "next-token logits of yes against no"


def test_the_url_setting_is_checked():
    with pytest.raises(ConfigError, match="http:// or https://"):
        Config.load({"llm_url": "127.0.0.1:8080"})
    assert Config.load({"llm_url": "http://127.0.0.1:8080/v1/"}).llm_url == "http://127.0.0.1:8080/v1"
    with pytest.raises(ConfigError, match="at least 1"):
        Config.load({"llm_workers": "0"})
    assert factory.backend_name("llm", Config()) == "llama"
    assert factory.backend_name("llm", Config(llm_url="http://127.0.0.1:1/v1")) == "openai"
