"""A scripted OpenAI-compatible model server on 127.0.0.1, run in a thread of the test process.

``ScriptedServer(route)`` answers every request with ``route(request)``: a :class:`Reply`, or a
dict sent as JSON with status 200. :func:`chat` makes a chat completion out of a reply text, and
:func:`openai_server` a whole server from a ``ScriptedLLM``-style responder (messages → dict or
text), with ``/v1/models`` and, optionally, a tokenize endpoint.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


@dataclass
class Request:
    method: str
    path: str
    body: Any
    headers: dict[str, str]


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # a dict or list (sent as JSON), a str or bytes (sent as is)
    content_type: str = "application/json"
    delay: float = 0.0  # seconds before answering
    events: list[Any] | None = None  # a server-sent event stream instead of a body
    headers: dict[str, str] = field(default_factory=dict)


class ScriptedServer:
    def __init__(self, route: Callable[[Request], Any]) -> None:
        self.route = route
        self.requests: list[Request] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except json.JSONDecodeError:
                    body = raw.decode("utf-8", "replace")
                request = Request(self.command, self.path, body, dict(self.headers))
                with server._lock:
                    server.requests.append(request)
                    server.in_flight += 1
                    server.most_in_flight = max(server.most_in_flight, server.in_flight)
                try:
                    reply = server.route(request)
                    if not isinstance(reply, Reply):
                        reply = Reply(body=reply)
                    if reply.delay:
                        time.sleep(reply.delay)
                    self._send(reply)
                finally:
                    with server._lock:
                        server.in_flight -= 1

            def _send(self, reply: Reply) -> None:
                if reply.events is not None:
                    self.send_response(reply.status)
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("connection", "close")
                    self.end_headers()
                    for event in reply.events:
                        data = event if isinstance(event, str) else json.dumps(event)
                        self.wfile.write(f"data: {data}\n\n".encode())
                        self.wfile.flush()
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.close_connection = True
                    return
                body = reply.body
                data = (
                    json.dumps(body).encode()
                    if isinstance(body, (dict, list))
                    else body.encode()
                    if isinstance(body, str)
                    else body or b""
                )
                self.send_response(reply.status)
                self.send_header("content-type", reply.content_type)
                self.send_header("content-length", str(len(data)))
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _handle

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that gave up (a timeout test) is no test failure, and not printed

        self._server = Server(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> "ScriptedServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()

    def chats(self) -> list[Request]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]


def chat(
    text: str, *, prompt_tokens: int = 10, completion_tokens: int = 5, logprobs: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """A chat completion whose reply is ``text`` (with ``top_logprobs`` when given)."""
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": text},
        "finish_reason": "stop",
        "logprobs": None,
    }
    if logprobs is not None:
        choice["logprobs"] = {"content": [{"token": text, "logprob": -0.1, "top_logprobs": logprobs}]}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "m",
        "choices": [choice],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def openai_server(
    responder: Callable[[list[dict[str, str]]], Any],
    *,
    models: tuple[str, ...] = ("tiny",),
    tokenize: str | None = "llama-server",
    judge: Callable[[list[dict[str, str]]], float] | None = None,
    delay: float = 0.0,
) -> ScriptedServer:
    """A server answering chats with ``responder(messages)`` (a dict is sent as JSON text) and
    yes/no questions (``max_tokens`` 1) with log probabilities giving P(yes) = ``judge(messages)``
    (0.9 by default); ``tokenize``: "llama-server", "vllm", "llama-cpp-python" or None."""
    import math

    def route(request: Request) -> Any:
        if request.method == "GET" and request.path == "/v1/models":
            return {"object": "list", "data": [{"id": m, "object": "model"} for m in models]}
        if request.path == "/v1/chat/completions":
            body = request.body
            if body.get("max_tokens") == 1 and body.get("logprobs"):
                p = judge(body["messages"]) if judge else 0.9
                top = [
                    {"token": "Yes", "logprob": math.log(max(p, 1e-9))},
                    {"token": "No", "logprob": math.log(max(1 - p, 1e-9))},
                ]
                return Reply(body=chat("Yes" if p >= 0.5 else "No", logprobs=top), delay=delay)
            reply = responder(body["messages"])
            text = reply if isinstance(reply, str) else json.dumps(reply)
            if body.get("stream"):
                events = [
                    {"choices": [{"index": 0, "delta": {"content": text[i : i + 4]}}]} for i in range(0, len(text), 4)
                ]
                return Reply(events=events, delay=delay)
            return Reply(body=chat(text, completion_tokens=len(text.split())), delay=delay)
        words = lambda text: [w for w in str(text).split() if w]  # noqa: E731
        if tokenize == "llama-server" and request.path == "/tokenize" and "content" in request.body:
            return {"tokens": list(range(len(words(request.body["content"]))))}
        if tokenize == "vllm" and request.path == "/tokenize" and "prompt" in request.body:
            n = len(words(request.body["prompt"]))
            return {"count": n, "tokens": list(range(n)), "max_model_len": 4096}
        if tokenize == "llama-cpp-python" and request.path == "/extras/tokenize":
            return {"tokens": [1] + list(range(len(words(request.body["input"]))))}  # a BOS first
        return Reply(404, {"detail": "Not Found"})

    return ScriptedServer(route)
