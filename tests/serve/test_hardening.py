"""`localmem serve` against a hostile local client: a real server on 127.0.0.1 in its own
process (scripted models), driven by raw sockets and an ordinary HTTP client. Each test is a
finding of the hostile test (issue 43) that failed before its fix:

- the URL was printed before the port was bound (a taken port printed a URL pointing at
  whoever held it), and ``--address 127.0.0.1:0`` was refused;
- connections that never finish their headers exhausted the file descriptors and locked the
  owner out; no header or body timeout; an upload had no HTTP-level size limit;
- ``--debug`` logged the ``?token=`` URL and the search text;
- an open redirect (``/%2Fevil.example?token=`` answered ``Location: //evil.example``);
- malformed requests answered 500 "unexpected" (one showing the private upload path)."""

from __future__ import annotations

import json
import resource
import socket
import subprocess
import sys
import threading
import time
from urllib.parse import urljoin, urlparse

import pytest

from tests.serve.server import STORY, env, seed, spawn

httpx2 = pytest.importorskip("httpx2")
pytest.importorskip("starlette", reason="pip install 'localmem[mcp]' to test localmem serve")

pytestmark = [pytest.mark.plain_only, pytest.mark.slow]

SEARCHED = "zebracrossing"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hardening")
    db = tmp / "m.db"
    seed(db, STORY)
    server = spawn(tmp, db)
    yield server
    assert server.stop() == 0, server.stderr.read_text()


# -- the URL, once bound ---------------------------------------------------------------------


def test_a_taken_port_is_one_line_and_no_url(tmp_path):
    db = tmp_path / "m.db"
    seed(db, STORY[:1])
    with socket.socket() as holder:  # another program holds the port
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "localmem", "--db", str(db), "serve", "--address", f"127.0.0.1:{port}"],
            env=env(tmp_path),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""  # nothing a program could take for this server's URL
    assert done.stderr == (
        f"error: 127.0.0.1:{port} is already in use (another localmem serve, or another program); nothing was "
        f"started; stop it, or choose another port: --address 127.0.0.1:0 takes any free one\n"
    )


def test_port_0_listens_on_a_free_port_and_prints_it(served):
    assert served.port > 0  # spawn() passed --address 127.0.0.1:0 and connected to the printed port
    with httpx2.Client(base_url=served.base, headers=served.auth, timeout=30) as http:
        assert http.get("/api/stats").status_code == 200


# -- stalled connections and large bodies --------------------------------------------------


def _few_files() -> None:  # in the server's process: as on a machine with `ulimit -n 256`
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))


def _closed(sock: socket.socket, deadline: float) -> bytes:
    """What the server sent before it closed ``sock``; fails if it is still open at ``deadline``."""
    got = b""
    while True:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            chunk = sock.recv(4096)
        except (ConnectionResetError, BrokenPipeError):
            return got
        except socket.timeout:
            raise AssertionError(f"still open: {got[:80]!r}") from None
        if not chunk:
            return got
        got += chunk


def test_stalled_connections_do_not_lock_the_owner_out(tmp_path):
    db = tmp_path / "m.db"
    seed(db, STORY)
    server = spawn(
        tmp_path,
        db,
        preexec_fn=_few_files,
        LOCALMEM_SERVE_HEADER_TIMEOUT="3",
        LOCALMEM_SERVE_BODY_TIMEOUT="3",
    )
    host = f"127.0.0.1:{server.port}".encode()
    stalled: list[socket.socket] = []
    try:
        # 400 connections that never finish their headers: more than the server's 256 files.
        for _ in range(400):
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=2)
            sock.sendall(b"GET /api/stats HTTP/1.1\r\nHost: " + host + b"\r\n")  # no blank line, ever
            stalled.append(sock)
        # A body that stops after 4 bytes of the 100 it announced.
        body = socket.create_connection(("127.0.0.1", server.port), timeout=2)
        body.sendall(
            b"POST /api/add HTTP/1.1\r\nHost: "
            + host
            + b"\r\nAuthorization: Bearer "
            + server.token.encode()
            + b'\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"sp'
        )
        flooded = time.monotonic()
        # The owner is answered during the flood, at once.
        took: list[float] = []
        with httpx2.Client(base_url=server.base, headers=server.auth, timeout=5) as http:
            for _ in range(5):
                started = time.monotonic()
                assert http.get("/api/stats").status_code == 200
                took.append(time.monotonic() - started)
        print("owner's requests during the flood, s:", [round(t, 3) for t in took])
        assert max(took) < 3, took  # well within the header timeout that frees the stalled ones
        # Every stalled connection is closed: evicted for newer ones, or at the header timeout.
        deadline = flooded + 3 + 5
        answers = [_closed(sock, deadline) for sock in stalled]
        assert all(a == b"" or a.startswith(b"HTTP/1.1 408 ") for a in answers)
        assert any(a.startswith(b"HTTP/1.1 408 ") for a in answers)  # the newest waited for their timeout
        assert _closed(body, deadline).startswith(b"HTTP/1.1 408 ")
        stalled.append(body)
    finally:
        for sock in stalled:
            sock.close()
        assert server.stop() == 0, server.stderr.read_text()


class SlowBodies:
    """``count`` connections that hold a public route open without the token (issue 50): a GET
    with a Content-Length, then one body byte every ``every`` seconds. A connection the server
    closes is opened again at once, so ``count`` stay open; the trickle stops at ``stop()`` or
    after ``most`` seconds, whichever comes first."""

    PATHS = (b"/static/app.js", b"/api/hello?nonce=" + b"n" * 24)

    def __init__(self, port: int, count: int, every: float = 1.5, most: float = 60) -> None:
        self.port, self.count, self.every, self.most = port, count, every, most
        self.opened = 0
        self.closed_by_server = 0
        self._stop = threading.Event()
        self.socks = [self._open(i) for i in range(count)]
        self._thread = threading.Thread(target=self._trickle, daemon=True)
        self._thread.start()

    def _open(self, i: int) -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=2)
        path = self.PATHS[i % len(self.PATHS)]
        host = f"127.0.0.1:{self.port}".encode()
        sock.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: " + host + b"\r\nContent-Length: 100000\r\n\r\nx")
        sock.setblocking(False)
        self.opened += 1
        return sock

    def _closed(self, sock: socket.socket) -> bool:
        try:
            while True:
                if not sock.recv(65536):  # the response, if any, is read and dropped
                    return True
        except BlockingIOError:
            return False
        except OSError:
            return True

    def _trickle(self) -> None:
        ends = time.monotonic() + self.most
        while not self._stop.wait(self.every) and time.monotonic() < ends:
            for i, sock in enumerate(self.socks):
                alive = not self._closed(sock)
                if alive:
                    try:
                        sock.send(b"x")
                    except OSError:
                        alive = False
                if not alive:
                    self.closed_by_server += 1
                    sock.close()
                    try:
                        self.socks[i] = self._open(i)
                    except OSError:  # the server refused it now; tried again next round
                        self.socks[i] = socket.socket()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        for sock in self.socks:
            sock.close()


def _owner_get(server, path: bytes = b"/api/stats") -> tuple[float, bytes]:
    """One request of the owner (the token) on a new connection: (seconds, the status line),
    or what went wrong instead of a status line."""
    started = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
            sock.sendall(_request(server, path))
            status = _status_line(sock)
            return time.monotonic() - started, status
    except OSError as exc:
        return time.monotonic() - started, f"refused: {exc!r}".encode()


def _request(server, path: bytes) -> bytes:
    host = f"127.0.0.1:{server.port}".encode()
    return (
        b"GET "
        + path
        + b" HTTP/1.1\r\nHost: "
        + host
        + b"\r\nAuthorization: Bearer "
        + server.token.encode()
        + b"\r\n\r\n"
    )


def _status_line(sock: socket.socket) -> bytes:
    """The status line of the response, its headers and body read whole (Content-Length)."""
    got = b""
    while b"\r\n\r\n" not in got:
        chunk = sock.recv(65536)
        if not chunk:
            return got.split(b"\r\n", 1)[0] or b"closed without an answer"
        got += chunk
    head, _, body = got.partition(b"\r\n\r\n")
    length = next(
        (int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return head.split(b"\r\n", 1)[0]


def test_unauthenticated_slow_bodies_do_not_lock_the_owner_out(tmp_path):
    """Issue 50, finding 7: 140 connections without the token, each a GET of a public route
    with a body trickled one byte every 1.5 s (more than the 128 connections the server holds),
    kept open by opening a new one for each the server closes: the owner is answered within a
    second, every time."""
    db = tmp_path / "m.db"
    seed(db, STORY[:2])
    server = spawn(tmp_path, db)  # the default limits: 128 connections, a 30 s body timeout
    flood = None
    try:
        flood = SlowBodies(server.port, 140)
        time.sleep(3.5)  # two rounds of the trickle: every connection is in its body by now
        answers = []
        for _ in range(12):
            answers.append(_owner_get(server))
            time.sleep(0.25)
        print("owner during the flood (s, status):", [(round(t, 3), s.decode()) for t, s in answers])
        print(f"flood: {flood.opened} connections opened, {flood.closed_by_server} closed by the server")
        assert [s for _, s in answers] == [b"HTTP/1.1 200 OK"] * len(answers)
        assert max(t for t, _ in answers) < 1.0
        # The server did close the trickling connections (the short body deadline), and the
        # flood kept 140 open all along by opening new ones.
        assert flood.closed_by_server >= 140
    finally:
        if flood is not None:
            flood.stop()
        assert server.stop() == 0, server.stderr.read_text()


def test_an_owners_open_connection_outlives_a_flood_without_the_token(tmp_path):
    """Issue 50, finding 7: when connections must be closed for newer ones, those that never
    showed the token go first: the owner's kept-alive connection is still there after 140
    newcomers without it (it used to be the first closed, the oldest between two requests)."""
    db = tmp_path / "m.db"
    seed(db, STORY[:2])
    server = spawn(tmp_path, db)
    flood = None
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as owner:
            owner.sendall(_request(server, b"/api/stats"))
            assert _status_line(owner) == b"HTTP/1.1 200 OK"
            flood = SlowBodies(server.port, 140)
            time.sleep(0.5)  # every newcomer is seen (and the room made) well within the keep-alive
            owner.sendall(_request(server, b"/api/stats"))
            assert _status_line(owner) == b"HTTP/1.1 200 OK"
    finally:
        if flood is not None:
            flood.stop()
        assert server.stop() == 0, server.stderr.read_text()


def test_a_body_without_the_token_must_come_whole_within_seconds(served):
    """Issue 50, finding 7: a public route's body, a byte every half second, is cut after the
    short deadline of anyone's body (2 s, not reset by each byte); the owner's own slow body,
    at the same pace for longer, is read whole."""
    host = f"127.0.0.1:{served.port}".encode()
    with socket.create_connection(("127.0.0.1", served.port), timeout=5) as anyone:
        anyone.sendall(b"GET /static/app.js HTTP/1.1\r\nHost: " + host + b"\r\nContent-Length: 1000\r\n\r\nx")
        assert _status_line(anyone) == b"HTTP/1.1 200 OK"  # the file, without waiting for the body
        started = time.monotonic()
        cut = None
        for _ in range(20):  # 10 s at most; the body timeout of the owner's bodies is 30 s
            time.sleep(0.5)
            try:
                anyone.sendall(b"x")
            except OSError:
                cut = time.monotonic() - started
                break
        assert cut is not None and cut < 6.0, cut  # 2 s, and the round trips that find it closed
    body = json.dumps({"speaker": "Ann", "text": "a slow body of the owner", "conversation": "slow"}).encode()
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as owner:
        owner.sendall(
            b"POST /api/add HTTP/1.1\r\nHost: "
            + host
            + b"\r\nAuthorization: Bearer "
            + served.token.encode()
            + b"\r\nContent-Type: application/json\r\nContent-Length: "
            + str(len(body)).encode()
            + b"\r\n\r\n"
        )
        for i in range(0, len(body), len(body) // 8 + 1):  # 9 pieces over 4.5 s
            time.sleep(0.5)
            owner.sendall(body[i : i + len(body) // 8 + 1])
        assert _status_line(owner) == b"HTTP/1.1 201 Created"


def test_an_upload_over_the_limit_is_refused_before_it_is_read(tmp_path):
    db = tmp_path / "m.db"
    seed(db, STORY[:1])
    server = spawn(tmp_path, db, LOCALMEM_MAX_INPUT_BYTES="100000")
    try:
        host = f"127.0.0.1:{server.port}".encode()
        for path, size in ((b"/api/ingest", 50 * 2**20), (b"/api/add", 9 * 2**20)):
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
            sock.sendall(
                b"POST "
                + path
                + b" HTTP/1.1\r\nHost: "
                + host
                + b"\r\nAuthorization: Bearer "
                + server.token.encode()
                + b"\r\nContent-Type: multipart/form-data; boundary=x\r\n"
                + b"Content-Length: "
                + str(size).encode()
                + b"\r\n\r\n"
            )  # and not a byte of the body
            answer = _closed(sock, time.monotonic() + 5)
            sock.close()
            head, _, data = answer.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 413 ") and b"connection: close" in head.lower(), answer[:200]
            error = json.loads(data)
            assert error["code"] == "too_large" and set(error) == {"error", "code", "hint", "exit_code"}
        with httpx2.Client(base_url=server.base, headers=server.auth, timeout=30) as http:  # within: read
            r = http.post("/api/ingest", files={"file": ("chat.txt", b"[2024-01-01 10:00] Ann: hi\n" * 100)})
            assert r.status_code == 200 and '"event": "report"' in r.text
    finally:
        assert server.stop() == 0, server.stderr.read_text()


# -- what is logged ----------------------------------------------------------------------------


def test_debug_logs_hold_neither_the_token_nor_the_search_text(tmp_path):
    db = tmp_path / "m.db"
    seed(db, STORY)
    log = tmp_path / "logs" / "serve.log"
    server = spawn(tmp_path, db, "--log-file", str(log), before=("--debug",))
    try:
        page_host = server.page.split("//", 1)[1]
        with httpx2.Client(base_url=server.base, timeout=60) as http:
            http.get("/", params={"token": server.token})
            http.get("/", params={"token": server.token}, headers={"Host": page_host})
            http.get("/", params={"q": SEARCHED}, headers=server.auth)
            http.get("/api/search", params={"q": SEARCHED}, headers=server.auth)
            http.post("/api/ask", json={"question": f"{SEARCHED}?", "stream": False}, headers=server.auth)
            http.get("/api/hello", params={"nonce": "n" * 24})
    finally:
        assert server.stop() == 0, server.stderr.read_text()
    text = log.read_text()
    assert "DEBUG" in text and "serving" in text  # it logged, at debug level
    assert server.token not in text and SEARCHED not in text.lower()
    assert page_host.split(".", 1)[0] not in text


# -- redirects and malformed requests ------------------------------------------------------------


def test_the_token_redirect_never_leaves_the_server(served):
    with httpx2.Client(base_url=served.base, timeout=30) as http:
        for target in ("/%2Fevil.example", "//evil.example", "/%5Cevil.example", "/%2F%2Fevil.example/x"):
            r = http.get(target, params={"token": served.token})
            assert r.status_code == 303, target
            where = urlparse(urljoin(f"{served.base}{target}", r.headers["location"]))
            assert where.hostname in ("127.0.0.1", urlparse(served.page).hostname), (target, r.headers["location"])


def test_malformed_requests_are_400_with_the_error_shape(served):
    huge = "m:99999999999999999999999"
    with httpx2.Client(base_url=served.base, headers=served.auth, timeout=30) as http:
        cases = {
            "two files": http.post("/api/ingest", files=[("file", ("a.txt", b"x")), ("file", ("b.txt", b"y"))]),
            "no boundary": http.post(
                "/api/ingest", content=b"--x\r\n", headers={"content-type": "multipart/form-data"}
            ),
            "a part too large": http.post(
                "/api/ingest", data={"conversation": "x" * (2 << 20)}, files={"file": ("a.txt", b"x")}
            ),
            "a huge id": http.get(f"/api/show/{huge}"),
            "ids not a list": http.post("/api/forget", json={"ids": 5}),
            "ids of numbers": http.post("/api/forget", json={"ids": [1, 2]}),
            "nested JSON": http.post("/api/add", content=b"[" * 100_000, headers={"content-type": "application/json"}),
            "nested objects": http.post(
                "/api/forget", content=b'{"a":' * 50_000, headers={"content-type": "application/json"}
            ),
            "a number field of text": http.post("/api/forget", json={"source_id": "abc"}),
            "an infinite number": http.post(
                "/api/ask",
                content=b'{"question": "x", "steps": 1e400, "stream": false}',
                headers={"content-type": "application/json"},
            ),
            "a number of 5,000 digits": http.post(
                "/api/add",
                content=b'{"speaker": "a", "text": ' + b"9" * 5000 + b"}",
                headers={"content-type": "application/json"},
            ),
        }
        for name, r in cases.items():
            assert r.status_code == 400, (name, r.status_code, r.text[:200])
            error = r.json()
            assert set(error) == {"error", "code", "hint", "exit_code"} and error["code"] != "unexpected", name
            assert "localmem-upload" not in r.text, name
        page = http.get(f"/memory/{huge}")
        assert page.status_code == 400 and "not a memory id" in page.text
        form = http.get("/curate/forget", params={"source_id": "abc"})
        assert form.status_code == 400 and "must be a whole number" in form.text


def test_a_long_file_name_is_kept_short_enough_and_no_private_path_shows(served):
    name = "\U0001d400" * 120 + ".txt"  # 120 four-byte letters: 484 bytes, more than a file name may have
    with httpx2.Client(base_url=served.base, headers=served.auth, timeout=60) as http:
        r = http.post("/api/ingest", files={"file": (name, b"[2024-01-01 10:00] Ann: the long name\n")})
    assert r.status_code == 200 and "localmem-upload" not in r.text and "/tmp" not in r.text
    report = [json.loads(line) for line in r.text.splitlines() if line.strip()][-1]
    assert report["event"] == "report", report
    kept = report["report"]["file"]
    assert kept.endswith(".txt") and kept.startswith("\U0001d400" * 40) and len(kept.encode()) <= 200
