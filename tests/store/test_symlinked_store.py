"""A store reached through a symbolic link: every command that writes the store file anew
(encrypt, rekey, decrypt, import --force into it, vacuum, a forget that vacuums) changes the
file the link leads to, and the link stays a link to it.

Before the fix, encrypt replaced the link with a new regular file and reported success: the real
file kept its 40 plaintext markers. Each test counts the marker in the real file's bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localmem import Memory
from localmem.cli import cli
from localmem.store import cipher
from tests.fakes import HashEmbedder
from tests.helpers import runner, snapshot, write_jsonl

pytestmark = [pytest.mark.own_keys, pytest.mark.plain_stores]
needs_cipher = pytest.mark.skipif(
    cipher.cipher_version() is None, reason="needs the cipher build of apsw: pip install 'localmem[encrypt]'"
)

MARKER = "WOMBATMARKER"
PASS, NEW = "first passphrase 9f2c", "second passphrase 0a7e"


def rows(n: int) -> list[dict]:
    return [
        {"conversation": "c", "id": f"m{i}", "speaker": "Ana", "text": f"{MARKER} {i}: the lighthouse in Oslo."}
        for i in range(n)
    ]


def linked_store(tmp_path: Path, n: int = 40) -> tuple[Path, Path]:
    """A plain store at real/real.db with ``n`` marked messages, and link.db -> real/real.db."""
    real = tmp_path / "real" / "real.db"
    real.parent.mkdir()
    with Memory(real, namespace="t", embedder=HashEmbedder()) as mem:
        mem.ingest(write_jsonl(tmp_path / "in.jsonl", rows(n)))
    link = tmp_path / "link.db"
    link.symlink_to(real)
    return link, real


def markers(path: Path) -> int:
    """The marker's copies in a file and its WAL (what ``grep -a -c`` counts, and a bit more)."""
    return sum(p.read_bytes().count(MARKER.encode()) for p in (path, Path(f"{path}-wal")) if p.exists())


def run(args: list[str], env: dict[str, str] | None = None):
    result = runner().invoke(cli, args, env=env)
    assert result.exit_code == 0, (result.output, result.stderr)
    return result


def assert_still_linked(link: Path, real: Path) -> None:
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert not list(link.parent.glob("*.localmem-new*")) and not list(real.parent.glob("*.localmem-new*"))


@needs_cipher
def test_encrypt_rekey_decrypt_change_the_file_a_symlinked_store_leads_to(tmp_path, use_models):
    use_models(embedder=HashEmbedder())
    link, real = linked_store(tmp_path)
    original = snapshot(real)
    assert markers(real) >= 40
    env = {"K1": PASS, "K2": NEW}

    report = json.loads(run(["--db", str(link), "--key-env", "K1", "encrypt", "--json"], env=env).output)
    assert report["real_path"] == str(real.resolve())
    assert_still_linked(link, real)
    assert cipher.file_state(real) == "encrypted" and markers(real) == 0
    assert snapshot(real, key=PASS) == original

    run(["--db", str(link), "--key-env", "K1", "rekey", "--new-key-env", "K2"], env=env)
    assert_still_linked(link, real)
    assert markers(real) == 0 and snapshot(real, key=NEW) == original

    run(["--db", str(link), "--key-env", "K2", "decrypt"], env=env)
    assert_still_linked(link, real)
    assert cipher.file_state(real) == "plain" and markers(real) >= 40
    assert snapshot(real) == original


def test_import_force_into_a_symlinked_store_writes_the_real_file(tmp_path, use_models):
    use_models(embedder=HashEmbedder())
    source = tmp_path / "source.db"
    with Memory(source, namespace="t", embedder=HashEmbedder()) as mem:
        mem.ingest(write_jsonl(tmp_path / "in.jsonl", rows(30)))
    run(["--db", str(source), "export", "-o", str(tmp_path / "dump.jsonl")])
    lines = (tmp_path / "dump.jsonl").read_text(encoding="utf-8").splitlines()
    (tmp_path / "untrailed.jsonl").write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")  # trailer gone

    real = tmp_path / "real" / "real.db"
    real.parent.mkdir()
    Memory(real, namespace="t", embedder=HashEmbedder()).close()  # an empty store
    link = tmp_path / "link.db"
    link.symlink_to(real)
    assert markers(real) == 0
    run(["--db", str(link), "import", "--force", str(tmp_path / "untrailed.jsonl")])
    assert_still_linked(link, real)
    with Memory(real, namespace="t", embedder=HashEmbedder()) as mem:
        mem.admin.vacuum()  # the WAL into the file
    assert markers(real) >= 30


def test_vacuum_and_a_forget_that_rewrites_the_file_keep_the_link(tmp_path, use_models):
    use_models(embedder=HashEmbedder())
    link, real = linked_store(tmp_path)
    assert markers(real) >= 40
    report = json.loads(run(["--db", str(link), "vacuum", "--json"]).output)
    assert report["bytes_before"] > 0 and report["bytes_after"] > 0  # measured on the real file
    assert_still_linked(link, real)
    assert markers(real) >= 40

    run(["--db", str(link), "--namespace", "t", "forget", "--match", MARKER, "--yes"])
    assert_still_linked(link, real)
    assert markers(real) == 0
    with Memory(link, namespace="t", embedder=HashEmbedder()) as mem:
        assert mem.stats().messages == 0
