"""Bad input never leaves a stuck source: text that cannot be stored as it is (lone surrogates),
JSON nested beyond reason, files that are not files (a FIFO, /dev/zero), files too large and a
full disk each end with one line and an exit code of their own, and nothing half-done: no source
left "loading" that a re-run cannot finish, and a re-run that works."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import apsw
import pytest

from localmem import Memory
from localmem.cli import cli
from localmem.config import MAX_JSON_DEPTH, Config
from localmem.errors import DiskFullError, InputError, InvalidTextError
from tests.fakes import HashEmbedder, ScriptedLLM
from tests.helpers import (
    REPO,
    STORE_KEY_VAR,
    assert_one_line_error,
    default_embedder_installed,
    open_memory,
    runner,
    snapshot,
    write_jsonl,
)

HALF_EMOJI = "\ud83d"  # the first half of 😀's UTF-16 pair, as an export that cut it writes it


def _rows(n: int = 400) -> list[dict]:
    return [
        {
            "id": f"m{i}",
            "speaker": "Ana" if i % 2 else "Ben",
            "text": f"message {i} about the garden",
            "time": f"2024-01-02 10:{i % 60:02d}",
        }
        for i in range(n)
    ]


def _surrogate_file(path: Path) -> Path:
    """400 messages; three strings hold a lone surrogate (a high half, a low half in a speaker
    name, one in a key of the record); one holds a whole emoji written as a pair of escapes."""
    rows = _rows()
    rows[300]["text"] = f"broken emoji {HALF_EMOJI} here"
    rows[301]["speaker"] = "Ana\udc00"
    rows[302]["meta\udfff"] = 1
    rows[303]["text"] = "a whole one \U0001f600 stays"
    # json.dumps escapes every non-ASCII character: the file is valid UTF-8, the escapes are not text.
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="ascii")
    return path


def _status(mem: Memory) -> list[tuple[str, int]]:
    return [
        (status, n)
        for status, n in mem.conn.execute(
            "select s.status, count(m.id) from sources s left join messages m on m.source_id = s.id "
            "group by s.id order by s.id"
        )
    ]


# -- lone surrogates ---------------------------------------------------------------------------------


def test_lone_surrogates_are_repaired_with_a_note_and_every_message_is_stored(mem, tmp_path):
    path = _surrogate_file(tmp_path / "cut.jsonl")
    report = mem.ingest(path)
    assert report.added == 400 and _status(mem) == [("loaded", 400)]
    (note,) = report.notes
    assert "3 lone surrogate(s)" in note and "line 301, line 302, line 303" in note
    texts = dict(mem.conn.execute("select external_id, text from messages"))
    assert texts["m300"] == "broken emoji \ufffd here" and texts["m303"] == "a whole one \U0001f600 stays"
    assert mem.conn.execute("select speaker from messages where external_id = 'm301'").fetchone()[0] == "Ana\ufffd"
    raw = json.loads(mem.conn.execute("select raw from messages where external_id = 'm302'").fetchone()[0])
    assert "meta\ufffd" in raw
    assert mem.ingest(path).added == 0  # a re-run is a no-op
    assert mem.search(f"broken emoji {HALF_EMOJI}")  # a query is repaired, not refused


def test_lone_surrogates_in_a_json_document_are_repaired_too(mem, tmp_path):
    path = tmp_path / "chat.json"
    path.write_text(
        json.dumps([{"role": "user", "content": f"hi {HALF_EMOJI}"}, {"role": "assistant", "content": "hello"}]),
        encoding="ascii",
    )
    report = mem.ingest(path)
    assert report.added == 2 and "1 lone surrogate(s)" in report.notes[0]


def test_text_that_cannot_be_stored_is_refused_where_a_caller_gives_it(mem):
    with pytest.raises(InvalidTextError, match="the message text is not valid Unicode.*character 7"):
        mem.add("Ana", f"broken{HALF_EMOJI}")
    with pytest.raises(InvalidTextError, match="the speaker"):
        mem.add(f"Ana{HALF_EMOJI}", "fine")
    with pytest.raises(InvalidTextError, match="the namespace"):
        open_memory(mem.path, namespace=f"ns{HALF_EMOJI}", embedder=HashEmbedder())
    assert mem.conn.execute("select count(*) from messages").fetchone()[0] == 0


@pytest.mark.slow  # the real embedder embeds 400 messages
@pytest.mark.skipif(not default_embedder_installed(), reason="the default embedder is not installed")
def test_cli_with_the_real_embedder_stores_every_message_and_says_what_it_repaired(tmp_path):
    """Before: the tokenizer's TypeError stopped the ingest at 256 of 400, on every re-run."""
    path = _surrogate_file(tmp_path / "cut.jsonl")
    db = tmp_path / "m.db"
    done = runner().invoke(cli, ["--db", str(db), "ingest", str(path)])
    assert done.exit_code == 0, done.stderr
    assert done.stdout.count("U+FFFD") == 1 and "note: 3 lone surrogate(s)" in done.stdout
    with open_memory(db, embedder=HashEmbedder()) as mem:  # opening never embeds
        assert _status(mem) == [("loaded", 400)]
    # Arguments that were not UTF-8 (Python keeps their bytes as surrogates):
    found = runner().invoke(cli, ["--db", str(db), "search", f"broken emoji {HALF_EMOJI}", "--json"])
    assert found.exit_code == 0 and json.loads(found.stdout)["hits"]
    err = assert_one_line_error(runner().invoke(cli, ["--db", str(db), "add", "Ana", "caf\udce9"]), code=2)
    assert "not valid Unicode" in err
    err = assert_one_line_error(
        runner().invoke(cli, ["--db", str(db), "forget", "--namespace", "\udcff", "--yes"]), code=2
    )
    assert "the namespace is not valid Unicode" in err and "not UTF-8" in err


def test_cli_asks_with_a_query_holding_a_lone_surrogate(tmp_path, use_models):
    use_models(
        embedder=HashEmbedder(),
        llm=ScriptedLLM(responder=lambda m: {"answer": "the garden", "supports": [1], "confidence": 0.8}),
    )
    path = write_jsonl(tmp_path / "ok.jsonl", _rows(10))
    assert runner().invoke(cli, ["ingest", str(path)]).exit_code == 0
    done = runner().invoke(cli, ["ask", f"What about the garden {HALF_EMOJI}?", "--json"])
    assert done.exit_code == 0, done.stderr


# -- JSON nested too deep ----------------------------------------------------------------------------


def _nested(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


DEEP = {
    "array.json": _nested(990),
    "array_5000.json": _nested(5000),
    "just_over.json": json.dumps([{"role": "user", "content": "hi", "x": json.loads(_nested(MAX_JSON_DEPTH))}]),
    "objects.json": '{"a": ' * 2000 + "1" + "}" * 2000,
    "line.jsonl": json.dumps({"speaker": "A", "text": "hi"})
    + "\n"
    + '{"speaker": "B", "text": "x", "extra": '
    + _nested(1000)
    + "}\n",
}


@pytest.mark.parametrize("name", sorted(DEEP))
def test_json_nested_too_deep_is_refused_in_one_line(mem, tmp_path, name):
    mem.ingest(write_jsonl(tmp_path / "seed.jsonl", _rows(3)))
    before = snapshot(mem.path)
    path = tmp_path / name
    path.write_text(DEEP[name], encoding="utf-8")
    with pytest.raises(InputError, match=f"nested more than {MAX_JSON_DEPTH} levels") as info:
        mem.ingest(path)
    assert ("line 2" in str(info.value)) == name.endswith(".jsonl")
    assert snapshot(mem.path) == before
    err = assert_one_line_error(runner().invoke(cli, ["--db", str(mem.path), "ingest", str(path)]), code=2)
    assert "nested more than" in err


def test_json_nested_as_deep_as_allowed_is_stored_and_exported(mem, tmp_path):
    deep = json.loads(_nested(MAX_JSON_DEPTH - 2))  # inside a message object inside the list
    path = tmp_path / "ok.json"
    path.write_text(json.dumps([{"role": "user", "content": "hi", "x": deep}]), encoding="utf-8")
    assert mem.ingest(path).added == 1
    out = tmp_path / "export.jsonl"
    with out.open("w", encoding="utf-8") as fh:
        mem.admin.export(fh)
    assert "hi" in out.read_text(encoding="utf-8")


# -- files that are not regular files, files too large -------------------------------------------------


def _cli(args: list[str], env_home: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    # A --stores=encrypted run's key settings pass: the CLI opens the same encrypted stores.
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("LOCALMEM_") or k in ("LOCALMEM_KEY_ENV", STORE_KEY_VAR)
    }
    # What the suite runs with comes first (the cipher build of apsw, in an encrypted run).
    env.update(
        LOCALMEM_HOME=str(env_home),
        PYTHONPATH=os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), str(REPO)) if p),
    )
    return subprocess.run(
        [sys.executable, "-m", "localmem", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_is_refused_at_once(tmp_path):
    """Before: the ingest waited forever for a writer (a subprocess, so a regression fails the
    test by its timeout instead of hanging the suite)."""
    fifo = tmp_path / "chat.jsonl"
    os.mkfifo(fifo)
    done = _cli(["ingest", str(fifo)], tmp_path / "home", timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1
    assert "is a FIFO (named pipe), not a regular file" in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null", "/dev/urandom"])
def test_a_device_is_refused_without_reading_it(tmp_path, device):
    """Before: /dev/zero was read until memory ran out."""
    if not os.path.exists(device):
        pytest.skip(f"no {device}")
    link = tmp_path / "export.json"
    link.symlink_to(device)  # a path that looks like a file changes nothing
    for path in (device, str(link)):
        done = _cli(["ingest", path], tmp_path / "home", timeout=60)
        assert done.returncode == 2, done.stderr
        assert "is a character device, not a regular file" in done.stderr and done.stderr.count("\n") == 1


def test_a_file_over_max_input_bytes_is_refused(tmp_path):
    path = write_jsonl(tmp_path / "big.jsonl", _rows(100))
    with open_memory(config=Config(db_path=tmp_path / "m.db", max_input_bytes=1000), embedder=HashEmbedder()) as mem:
        with pytest.raises(InputError, match="larger than 1,000 bytes .*max_input_bytes"):
            mem.ingest(path)
        assert mem.conn.execute("select count(*) from sources").fetchone()[0] == 0
    err = assert_one_line_error(
        runner().invoke(
            cli, ["--db", str(tmp_path / "m.db"), "ingest", str(path)], env={"LOCALMEM_MAX_INPUT_BYTES": "1000"}
        ),
        code=2,
    )
    assert "max_input_bytes" in err


# -- a full disk ------------------------------------------------------------------------------------


class _QuotaFile(apsw.VFSFile):
    def __init__(self, vfs: "_QuotaVFS", base: str, name, flags) -> None:
        super().__init__(base, name, flags)
        self.vfs = vfs
        self.wal = bool(flags[0] & apsw.SQLITE_OPEN_WAL)

    def xWrite(self, data, offset: int) -> None:
        if self.vfs.left is not None and self.wal:
            if len(data) > self.vfs.left:
                raise apsw.FullError("database or disk is full (simulated ENOSPC)")
            self.vfs.left -= len(data)
        super().xWrite(data, offset)


class _QuotaVFS(apsw.VFS):
    """SQLite's own file layer, with writes failing as on a full disk (SQLITE_FULL) once
    ``left`` bytes have been written: where the operating system's ENOSPC would surface.

    Only the write-ahead log, where every transaction is written, runs out: SQLite ignores a
    checkpoint that cannot write the main file (at commit or close), but apsw would re-raise
    the Python exception of this fake there, which a real disk never does."""

    def __init__(self) -> None:
        self.base = apsw.vfs_names()[0]
        self.left: int | None = None
        super().__init__("localmem-test-quota", base=self.base, makedefault=True)

    def xOpen(self, name, flags):
        return _QuotaFile(self, self.base, name, flags)


@contextlib.contextmanager
def quota_disk() -> Iterator[_QuotaVFS]:
    vfs = _QuotaVFS()
    try:
        yield vfs
    finally:
        vfs.unregister()


def test_a_full_disk_stops_an_ingest_cleanly_and_a_rerun_completes_it(tmp_path):
    path = write_jsonl(tmp_path / "chat.jsonl", _rows(400))
    config = Config(db_path=tmp_path / "m.db", ingest_batch=50)
    with quota_disk() as disk:
        with open_memory(config=config, embedder=HashEmbedder()) as mem:
            mem.add("Cy", "stored before the disk filled", id="c1")
            disk.left = 300_000  # about half of what the ingest writes
            with pytest.raises(DiskFullError) as info:
                mem.ingest(path)
            message = str(info.value)
            assert message.startswith(f"the disk holding {config.db_path} is full")
            stored = mem.conn.execute(
                "select count(*) from messages where source_id != "
                "(select source_id from messages where external_id = 'c1')"
            ).fetchone()[0]
            assert 0 < stored < 400 and stored % 50 == 0  # whole batches only
            assert f"({stored:,} of the input's 400 messages are stored" in message
            assert [h.text for h in mem.search("stored before the disk filled", k=1)]  # still readable
            with pytest.raises(DiskFullError):
                mem.add("Cy", "no room for this one")
            disk.left = None  # space freed
            report = mem.ingest(path)
            assert (report.added, report.skipped) == (400 - stored, stored)
            assert _status(mem) == [("loaded", 1), ("loaded", 400)]
            assert mem.conn.execute(
                "select count(distinct external_id), count(*) from messages where external_id like 'm%'"
            ).fetchone() == (400, 400)


def test_a_full_disk_is_one_line_with_its_own_exit_code(tmp_path, use_models):
    use_models(embedder=HashEmbedder())
    path = write_jsonl(tmp_path / "chat.jsonl", _rows(400))
    db = tmp_path / "m.db"
    assert runner().invoke(cli, ["--db", str(db), "add", "Cy", "hello"]).exit_code == 0
    with quota_disk() as disk:
        disk.left = 100_000
        err = assert_one_line_error(
            runner().invoke(cli, ["--db", str(db), "ingest", str(path)]), code=DiskFullError.exit_code
        )
        assert "is full" in err and "a re-run adds the rest" in err and "free some space" in err
    done = runner().invoke(cli, ["--db", str(db), "ingest", str(path)])
    assert done.exit_code == 0 and "already stored" in done.stdout


def _can_mount_tmpfs(where: Path) -> bool:
    if sys.platform != "linux" or os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(where)], capture_output=True)
    return done.returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(not default_embedder_installed(), reason="the default embedder is not installed")
def test_a_real_full_disk_with_the_real_cli(tmp_path):
    """A 2 MB tmpfs (root only; skipped elsewhere: the quota VFS above covers the logic)."""
    disk = tmp_path / "disk"
    if not _can_mount_tmpfs(disk):
        pytest.skip("cannot mount a tmpfs here (needs root on Linux)")
    try:
        path = write_jsonl(tmp_path / "chat.jsonl", _rows(400))
        db = disk / "m.db"
        done = _cli(["--db", str(db), "ingest", str(path)], tmp_path / "home", timeout=300)
        assert done.returncode == DiskFullError.exit_code, done.stderr
        error = done.stderr.removeprefix(f"created a new store at {db}\n")  # what the batches before stored
        assert error.startswith("error: the disk holding") and error.count("\n") == 1, done.stderr
        subprocess.run(["mount", "-o", "remount,size=32m", str(disk)], check=True)
        done = _cli(["--db", str(db), "ingest", str(path)], tmp_path / "home", timeout=300)
        assert done.returncode == 0, done.stderr
        done = _cli(["--db", str(db), "stats", "--json"], tmp_path / "home")
        stats = json.loads(done.stdout)
        assert stats["messages"] == 400 and stats["unfinished_sources"] == 0
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_inside_a_folder_is_reported_and_the_rest_is_read(tmp_path):
    folder = tmp_path / "export"
    folder.mkdir()
    write_jsonl(folder / "good.jsonl", _rows(5))
    os.mkfifo(folder / "stuck.jsonl")
    done = _cli(["ingest", str(folder), "--json"], tmp_path / "home", timeout=60)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["added"] == 5
    assert [(r["path"], r["failed"]) for r in report["not_read"]] == [("stuck.jsonl", True)]
    assert "FIFO" in report["not_read"][0]["why"]


@pytest.mark.slow
def test_standard_input_and_zip_members_are_read_up_to_max_input_bytes(tmp_path):
    import zipfile

    data = "".join(json.dumps(r) + "\n" for r in _rows(100))
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALMEM_")}
    env.update(LOCALMEM_HOME=str(tmp_path / "home"), PYTHONPATH=str(REPO), LOCALMEM_MAX_INPUT_BYTES="1000")
    done = subprocess.run(
        [sys.executable, "-m", "localmem", "ingest", "-", "--format", "jsonl"],
        input=data,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2 and "stdin: holds more than 1,000 bytes" in done.stderr, done.stderr
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("big.jsonl", data)  # compresses far below the limit, unpacks above it
        zf.writestr("small.jsonl", json.dumps(_rows(1)[0]) + "\n")
    assert archive.stat().st_size < 1000 * 2
    with open_memory(config=Config(db_path=tmp_path / "m.db", max_input_bytes=1000), embedder=HashEmbedder()) as mem:
        report = mem.ingest(archive)
    assert report.added == 1
    assert [r["path"] for r in report.not_read] == ["big.jsonl"]
    assert "declares 9,880 bytes unpacked, more than 1,000" in report.not_read[0]["why"]  # before unpacking
