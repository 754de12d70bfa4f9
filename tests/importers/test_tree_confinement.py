"""A folder or .zip ingest reads only what is inside it, and reports every entry it does not read.

Before: ``ln -s /etc/passwd d/passwd.txt; localmem ingest d`` stored 23 lines of /etc/passwd; a
member named ``../../x`` and an unreadable subfolder were skipped without a line in the report;
a 713 KB zip holding a 700 MiB member was refused only after memory peaked at 1.09 GB.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from localmem.config import Config
from tests.fakes import HashEmbedder
from tests.helpers import REPO, open_memory

SECRET = "KOALASECRET"


def row(text: str, i: int = 0) -> str:
    return json.dumps({"conversation": "c", "id": f"m{i}", "speaker": "Ana", "text": text}) + "\n"


def ingest(tmp_path: Path, what: Path, **config):
    with open_memory(tmp_path / "m.db", "t", config=Config(**config), embedder=HashEmbedder()) as mem:
        report = mem.ingest(what)
        texts = [r[0] for r in mem.conn.execute("select text from messages")]
    return report, texts


def test_a_symlink_leading_out_of_the_folder_is_not_followed_and_is_reported(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.jsonl").write_text(row(f"{SECRET} from outside"))
    folder = tmp_path / "d"
    (folder / "sub").mkdir(parents=True)
    (folder / "chat.jsonl").write_text(row("hello from inside"))
    (folder / "sub" / "more.jsonl").write_text(row("more from inside", 1))
    (folder / "passwd.jsonl").symlink_to(outside / "secret.jsonl")
    (folder / "inner.jsonl").symlink_to(folder / "sub" / "more.jsonl")  # stays inside: read
    (folder / "linked").symlink_to(outside, target_is_directory=True)
    report, texts = ingest(tmp_path, folder)
    assert not any(SECRET in t for t in texts)
    assert sorted(texts) == ["hello from inside", "more from inside"]  # the inner link: the same message
    why = {item["path"]: item["why"] for item in report.not_read}
    assert why["passwd.jsonl"].startswith("a symbolic link leading out of the folder (to ")
    assert str((outside / "secret.jsonl").resolve()) in why["passwd.jsonl"]
    assert why["linked"].startswith("a symbolic link to a folder")
    assert set(why) == {"passwd.jsonl", "linked"}


def test_a_folder_that_cannot_be_listed_is_reported(tmp_path, monkeypatch):
    folder = tmp_path / "d"
    (folder / "locked").mkdir(parents=True)
    (folder / "locked" / "x.jsonl").write_text(row("never read"))
    (folder / "chat.jsonl").write_text(row("hello"))
    real_scandir = os.scandir

    def scandir(path="."):  # as chmod 000 does for anyone but root
        if Path(path).name == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    report, texts = ingest(tmp_path, folder)
    assert texts == ["hello"]
    assert report.not_read == [{"path": "locked", "why": "cannot list the folder: Permission denied", "failed": True}]


def test_zip_members_leading_out_or_linked_are_reported_not_read(tmp_path):
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("chat.jsonl", row("inside the zip"))
        zf.writestr("../../x.jsonl", row(f"{SECRET} climbing out"))
        zf.writestr("/etc/abs.jsonl", row(f"{SECRET} absolute"))
        link = zipfile.ZipInfo("link.jsonl")
        link.external_attr = (0o120777 << 16) | 0  # a symbolic link member
        zf.writestr(link, "/etc/passwd")
        zf.writestr("__MACOSX/._chat.jsonl", b"\x00\x05")
    report, texts = ingest(tmp_path, archive)
    assert texts == ["inside the zip"]
    why = {item["path"]: item["why"] for item in report.not_read}
    assert why == {
        "../../x.jsonl": "a .zip member whose name leads out of the archive: not read",
        "/etc/abs.jsonl": "a .zip member whose name leads out of the archive: not read",
        "link.jsonl": "a symbolic link inside the .zip: not followed",
        "__MACOSX": "a hidden folder (not read)",
    }


def lying_zip(path: Path, unpacked: int, declared: int) -> Path:
    """A zip whose one member unpacks to ``unpacked`` bytes of JSONL but declares ``declared``."""
    line = row("x" * 100).encode()
    chunk = line * (2**20 // len(line))  # written a chunk at a time: this process stays small
    info = zipfile.ZipInfo("big.jsonl")
    info.compress_type = zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(path, "w") as zf, zf.open(info, "w") as fh:
        written = 0
        while written < unpacked:
            piece = chunk[: unpacked - written]
            fh.write(piece)
            written += len(piece)
    data = bytearray(path.read_bytes())
    local = data.index(b"PK\x03\x04")
    central = data.index(b"PK\x01\x02")
    struct.pack_into("<I", data, local + 22, declared)  # uncompressed size, local header
    struct.pack_into("<I", data, central + 24, declared)  # and in the central directory
    path.write_bytes(bytes(data))
    return path


def test_a_member_unpacking_to_more_than_it_declares_is_refused(tmp_path):
    archive = lying_zip(tmp_path / "liar.zip", unpacked=2_000_000, declared=1_000)
    with zipfile.ZipFile(archive) as zf:
        assert zf.infolist()[0].file_size == 1_000
    with pytest.raises(Exception, match="unpacks to more than the 1,000 bytes it declares|nothing to ingest"):
        ingest(tmp_path, archive)


BOMB = """
import sys
from localmem import Memory
from localmem.errors import LocalmemError
from tests.fakes import HashEmbedder
try:
    with Memory(sys.argv[2], "t", embedder=HashEmbedder()) as mem:
        report = mem.ingest(sys.argv[1])
        print("added", report.added, [i["why"] for i in report.not_read])
except LocalmemError as exc:
    print("refused", exc)
# VmHWM: this process's own peak (ru_maxrss can carry the forking parent's over exec)
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0]
print("peak_mib", int(hwm.split()[1]) // 1024)
"""


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the peak from /proc")
@pytest.mark.parametrize("declared", ["700 MiB", "400 MiB", "lying"])
def test_a_zip_bomb_is_refused_before_memory_reaches_200_mb(tmp_path, declared):
    archive = tmp_path / "bomb.zip"
    if declared != "lying":  # 700 (over max_input_bytes) or 400 MiB of zeros in < 1 MB, declared as such
        with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            info = zipfile.ZipInfo("conversations.json")
            info.compress_type = zipfile.ZIP_DEFLATED
            with zf.open(info, "w", force_zip64=True) as fh:
                chunk = b"\x00" * (1 << 20)
                for _ in range(int(declared.split()[0])):
                    fh.write(chunk)
            zf.writestr("chat.jsonl", row("the one real message"))
    else:  # 300 MB of JSONL that claims 1,000 bytes
        lying_zip(archive, unpacked=300_000_000, declared=1_000)
    assert archive.stat().st_size < 2_000_000
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", BOMB, str(archive), str(tmp_path / "m.db")],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    peak = int(done.stdout.split("peak_mib")[1])
    print(f"{declared}: {done.stdout.splitlines()[0][:160]} peak {peak} MiB")
    assert peak < 200, done.stdout
    if declared == "700 MiB":
        assert "added 1" in done.stdout and "declares 734,003,200 bytes unpacked, more than" in done.stdout
    elif declared == "400 MiB":
        assert "added 1" in done.stdout and "a zip bomb:" in done.stdout
    else:
        assert "unpacks to more than the 1,000 bytes it declares" in done.stdout or "CRC" in done.stdout


@pytest.mark.parametrize("swapped", ["file", "inner link"])
def test_a_file_swapped_for_a_link_after_the_walk_is_not_read(tmp_path, monkeypatch, swapped):
    """The race of the hostile test (2 runs in 12 read /etc/passwd): a file the walk saw is
    replaced by a link leading out of the folder before it is opened. Made certain here: the
    swap happens inside the read, between the walk's look and the open."""
    import localmem.importers.tree as tree

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.jsonl").write_text(row(f"{SECRET} from outside"))
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "chat.jsonl").write_text(row("hello from inside"))
    (folder / "real.jsonl").write_text(row("more from inside", 1))
    if swapped == "inner link":
        (folder / "chat.jsonl").unlink()
        (folder / "chat.jsonl").symlink_to(folder / "real.jsonl")  # inside: the walk allows it
    real_read = tree.read_input

    def read_after_a_swap(path, *args, **kwargs):
        if path.name == "chat.jsonl":
            path.unlink()
            path.symlink_to(outside / "secret.jsonl")
        return real_read(path, *args, **kwargs)

    monkeypatch.setattr(tree, "read_input", read_after_a_swap)
    report, texts = ingest(tmp_path, folder)
    assert not any(SECRET in t for t in texts)
    assert texts == ["more from inside"]
    why = {item["path"]: item["why"] for item in report.not_read}
    assert "chat.jsonl" in why and "while the folder was read" in why["chat.jsonl"], report.not_read
