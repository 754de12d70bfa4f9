"""Test-only plugin for a spawned ``localmem mcp``: on PYTHONPATH, Python imports it at start-up,
and it registers scripted models as the "test-fake" backends (selected with
LOCALMEM_EMBED_BACKEND / LOCALMEM_LLM_BACKEND=test-fake), the way tests/conftest.py's
``use_models`` does in-process.

- LOCALMEM_TEST_NOISE=1: the models write to stdout when built and called, with print() and
  straight to file descriptor 1 (as llama.cpp's C code would), to show that none of it reaches
  the protocol stream.
- LOCALMEM_TEST_LLM_LOG=PATH: every LLM call appends a line to PATH as it starts: its kind
  ("answer" or "build") and the server's process id.
- LOCALMEM_TEST_BLOCK=PATH: the LLM waits until PATH exists before it answers.
- LOCALMEM_TEST_SUPPORTS=1,2: the evidence items the answer cites (default: the first).
- LOCALMEM_TEST_WARM=PATH: the LLM can be warmed (serve preloads it in the background), and
  loading it takes until PATH exists: warming waits for it, and so does every answer.
- LOCALMEM_TEST_DEFAULTS=1: the scripted models also stand in for the default backends ("onnx",
  "llama"), for code that builds a ``Memory`` with the defaults and reads no LOCALMEM_ setting
  (the README's Python snippet).
"""

import os
import time

from localmem.models.factory import register
from localmem.prompts import answer
from tests.fakes import HashEmbedder, ScriptedLLM


def _noise(what: str) -> None:
    if os.environ.get("LOCALMEM_TEST_NOISE"):
        print(f"NOISE: print() from {what}")
        os.write(1, f"NOISE: fd 1 from {what}\n".encode())


def _responder(messages):
    from tests.pipeline.test_pipeline import _responder as build_responder

    kind = "answer" if messages[0]["content"] == answer.SYSTEM else "build"
    if os.environ.get("LOCALMEM_TEST_LLM_LOG"):
        with open(os.environ["LOCALMEM_TEST_LLM_LOG"], "a", encoding="utf-8") as fh:
            fh.write(f"{kind} {os.getpid()}\n")
    _loaded()
    while os.environ.get("LOCALMEM_TEST_BLOCK") and not os.path.exists(os.environ["LOCALMEM_TEST_BLOCK"]):
        time.sleep(0.05)
    _noise(f"the LLM ({kind})")
    if kind == "build":
        return build_responder(messages)
    # The answer: the words of the first evidence item ("[1] 8 May 2023 - Ann: I moved to Oslo").
    first = next(line for line in messages[-1]["content"].splitlines() if line.startswith("[1]"))
    said = first.split(" - ", 1)[1].split(": ", 1)[-1]
    supports = [int(n) for n in os.environ.get("LOCALMEM_TEST_SUPPORTS", "1").split(",")]
    return {"answer": said[: answer.MAX_ANSWER_CHARS], "supports": supports, "confidence": 0.9}


def _loaded() -> None:
    """Until LOCALMEM_TEST_WARM's file exists, the model is still loading."""
    while os.environ.get("LOCALMEM_TEST_WARM") and not os.path.exists(os.environ["LOCALMEM_TEST_WARM"]):
        time.sleep(0.05)


class WarmingLLM(ScriptedLLM):
    """A scripted LLM that serve can preload (models.protocols.Warmable), slowly."""

    def warm(self, messages):
        started = time.perf_counter()
        _loaded()
        return time.perf_counter() - started


def _llm(config):
    _noise("building the LLM")
    if os.environ.get("LOCALMEM_TEST_WARM"):
        return WarmingLLM(responder=_responder)
    return ScriptedLLM(responder=_responder)


def _embedder(config):
    _noise("building the embedder")
    return HashEmbedder()


register("llm", "test-fake", _llm)
register("embedder", "test-fake", _embedder)
if os.environ.get("LOCALMEM_TEST_DEFAULTS"):
    register("llm", "llama", _llm)
    register("embedder", "onnx", _embedder)
