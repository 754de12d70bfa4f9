"""``localmem serve``'s start: the LLM preloaded in the background (``serve_preload``)."""

from __future__ import annotations

import logging
from dataclasses import replace

from localmem.config import Config
from localmem.prompts import answer as answer_prompt
from localmem.serve.app import preload
from tests.fakes import HashEmbedder, ScriptedLLM
from tests.helpers import open_memory


class WarmableLLM(ScriptedLLM):
    """A scripted LLM that records what it was asked to warm (or fails to load)."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.warmed: list[list[dict]] = []
        self.fail = fail

    def warm(self, messages):
        if self.fail:
            raise RuntimeError("cannot load the GGUF model")
        self.warmed.append([dict(m) for m in messages])
        return 0.5


def _writer(tmp_path, llm, **settings):
    config = replace(Config(), **settings)
    return open_memory(tmp_path / "m.db", config=config, embedder=HashEmbedder(), llm=llm)


def test_preload_warms_the_answer_instructions_once_in_the_background(tmp_path):
    llm = WarmableLLM()
    with _writer(tmp_path, llm) as writer:
        load, thread = preload(writer)
        assert thread is not None and thread.daemon
        thread.join(timeout=10)
        assert (load.mode, load.state, load.seconds) == ("background", "ready", 0.5)
    assert len(llm.warmed) == 1
    assert llm.warmed[0][0] == {"role": "system", "content": answer_prompt.SYSTEM}
    assert llm.calls == []  # nothing is answered


def test_no_preload_when_turned_off_or_with_a_model_server(tmp_path):
    llm = WarmableLLM()
    with _writer(tmp_path, llm, serve_preload=False) as writer:
        load, thread = preload(writer)
        assert thread is None and load.mode == "first-ask" and not load.loading
    with _writer(tmp_path, llm, llm_url="http://127.0.0.1:9/v1") as writer:
        load, thread = preload(writer)
        assert thread is None and load.mode == "none"
    assert llm.warmed == []


def test_a_model_that_cannot_load_is_logged_and_serve_goes_on(tmp_path, caplog):
    with _writer(tmp_path, WarmableLLM(fail=True)) as writer, caplog.at_level(logging.INFO, "localmem.serve"):
        load, thread = preload(writer)
        assert thread is not None
        thread.join(timeout=10)
        assert writer.stats() is not None
        assert load.state == "failed" and "cannot load" in load.error
    assert "not preloaded: cannot load the GGUF model" in caplog.text
