"""The stages of an ask, reported from where they happen: the model assembled from its packages
(once), loaded (once, also when another thread is loading it), memory read, the answer written;
to the listener of the call only, and a listener that fails never fails the work."""

from __future__ import annotations

import hashlib
import threading
import time
from types import SimpleNamespace

from localmem import progress
from localmem.models import catalog
from localmem.models.backends import llama as llama_backend
from tests.fakes import HashEmbedder, ScriptedLLM
from tests.helpers import open_memory


def _recorder() -> tuple[list[str], progress.Listener]:
    seen: list[str] = []
    return seen, lambda stage, words: seen.append(stage)


def test_ask_reports_reading_then_answering_and_only_to_its_listener(tmp_path):
    llm = ScriptedLLM(responder=lambda messages: {"answer": "Oslo", "supports": [1], "confidence": 0.9})
    words: list[str] = []
    with open_memory(tmp_path / "m.db", embedder=HashEmbedder(), llm=llm) as mem:
        mem.add("Ann", "I moved to Oslo last spring.", time="2024-03-02T10:00")
        mem.ask("Where did Ann move?", on_progress=lambda stage, text: words.append(f"{stage}: {text}"))
        assert words == ["search: reading memory", "answer: answering"]
        seen, listener = _recorder()
        with progress.reporting(listener):
            mem.search("Oslo")  # outside an ask nothing reports, even with a listener set
            mem.ask("Where did Ann move?")  # without on_progress the caller's listener hears it
        assert seen == ["search", "answer"]
        mem.ask("Where did Ann move?", mode="agentic", steps=1, on_progress=lambda s, text: words.append(text))
    assert words[2:4] == ["reading memory", "looking through memory (step 1 of at most 1)"]


def test_a_failing_listener_does_not_fail_the_ask(tmp_path):
    llm = ScriptedLLM(responder=lambda messages: {"answer": "Oslo", "supports": [1], "confidence": 0.9})

    def broken(stage: str, words: str) -> None:
        raise BrokenPipeError("the terminal went away")

    with open_memory(tmp_path / "m.db", embedder=HashEmbedder(), llm=llm) as mem:
        mem.add("Ann", "I moved to Oslo last spring.", time="2024-03-02T10:00")
        assert mem.ask("Where did Ann move?", on_progress=broken).answer == "Oslo"


def test_assembling_is_reported_once(tmp_path, monkeypatch):
    parts = []
    for i, data in enumerate([b"GGUF" + b"a" * 100, b"b" * 50]):
        path = tmp_path / f"part{i}"
        path.write_bytes(data)
        parts.append(path)
    whole = b"".join(p.read_bytes() for p in parts)
    man = catalog.Manifest(
        "test-llm",
        "llm",
        "model-test",
        {},
        {"file_name": "test.gguf", "sha256": hashlib.sha256(whole).hexdigest(), "size": len(whole), "install": "x"},
    )
    seen, listener = _recorder()
    with progress.reporting(listener):
        target = catalog.assemble(man, parts, tmp_path / "cache")
        assert catalog.assemble(man, parts, tmp_path / "cache") == target  # assembled already: nothing to say
    assert target.read_bytes() == whole and seen == ["assemble"]


def _fake_llama_cpp(monkeypatch, seconds: float) -> None:
    class Llama:
        def __init__(self, **kwargs):
            time.sleep(seconds)

    module = SimpleNamespace(
        Llama=Llama,
        llama_supports_gpu_offload=lambda: False,
        llama_print_system_info=lambda: b"test",
        __version__="0",
    )
    monkeypatch.setattr(llama_backend, "library", lambda name: module)


def test_loading_is_reported_once_also_while_another_thread_loads(tmp_path, monkeypatch):
    _fake_llama_cpp(monkeypatch, 0.3)
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    llm = llama_backend.LlamaLLM(gguf, "test", fast=False)
    preload = threading.Thread(target=llm._model)  # as serve's preload does
    preload.start()
    time.sleep(0.05)
    seen, listener = _recorder()
    with progress.reporting(listener):
        llm._model()  # waits for the preload: the question's listener hears why
        llm._model()
    preload.join()
    assert seen == ["load"] and llm.load_seconds is not None


def test_a_question_waiting_for_the_model_another_thread_builds_hears_why(monkeypatch):
    from localmem.config import Config
    from localmem.models.factory import Models, register

    def build(config):
        time.sleep(0.3)  # as assembling and loading would
        return ScriptedLLM()

    undo = register("llm", "test-slow", build)
    monkeypatch.setenv("LOCALMEM_LLM_BACKEND", "test-slow")
    try:
        models = Models(Config(llm_backend="test-slow"))
        preload = threading.Thread(target=lambda: models.llm)
        preload.start()
        time.sleep(0.05)
        words: list[str] = []
        with progress.reporting(lambda stage, text: words.append(f"{stage}: {text}")):
            assert models.llm is not None
            assert models.llm is not None  # built: nothing more to say
        preload.join()
    finally:
        undo()
    assert words == ["load: waiting for the model to be put together and loaded"]
