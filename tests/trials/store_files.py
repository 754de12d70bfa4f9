"""Trial: exports that were cut or edited, other applications' files, corrupt stores, permissions.

    PYTHONPATH=$PWD python -m tests.trials.store_files

1. An export of 1,022 messages, cut at a line boundary, or edited (a line dropped, a text
   changed, the header's namespace renamed to merge into an existing one), imported with
   ``localmem import``: its exit code and what was stored.
2. Another application's SQLite file (``user_version`` 3, rollback journal) opened by
   localmem: was it changed (bytes, journal mode, tables, ``user_version``)?
3. A localmem store with a few damaged pages, opened by ``localmem stats``: the message and
   whether the file was written.
4. Under umask 022: the permissions of the database, its WAL and SHM, an export, and the data
   directory localmem creates.

Uses only the public API and the command line, so it runs on any checkout. Prints one JSON object.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import apsw

from ..fakes import HashEmbedder
from ..helpers import open_memory

REPO = Path(__file__).resolve().parents[2]


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "localmem", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


def _store(path: Path, n: int, namespace: str = "a", conversation: str = "c") -> None:
    rows = "".join(
        json.dumps(
            {
                "conversation": f"{conversation}{i // 100}",
                "speaker": "Ann" if i % 2 else "Bob",
                "text": f"message {i} about boats, trains and the weather",
            }
        )
        + "\n"
        for i in range(n)
    )
    src = path.with_suffix(".jsonl")
    src.write_text(rows, encoding="utf-8")
    with open_memory(path, namespace=namespace, embedder=HashEmbedder()) as mem:
        mem.ingest(src)


def _messages(path: Path) -> dict[str, Any]:
    with open_memory(path, embedder=HashEmbedder()) as mem:
        out: dict[str, Any] = {row.namespace: row.messages for row in mem.namespaces()}
        if out:
            out["with_vectors"] = mem.conn.execute("select count(*) from vec_messages").fetchone()[0]
        return out


def _import(root: Path, name: str, text: str, into: Path | None = None) -> dict[str, Any]:
    export = root / f"{name}.jsonl"
    export.write_text(text, encoding="utf-8")
    target = into or root / f"{name}.db"
    before = _messages(target) if target.exists() else {}
    done = cli("--db", str(target), "import", str(export))
    return {"exit": done.returncode, "stderr": done.stderr.strip()[:200], "before": before, "after": _messages(target)}


def exports(root: Path) -> dict[str, Any]:
    source = root / "source.db"
    _store(source, 1022)
    whole = cli("--db", str(source), "export").stdout
    lines = whole.splitlines(keepends=True)
    out: dict[str, Any] = {"lines": len(lines)}
    out["whole"] = _import(root, "whole", whole)
    out["cut_at_60pct"] = _import(root, "cut", "".join(lines[: int(len(lines) * 0.6)]))
    out["cut_at_20pct"] = _import(root, "cut20", "".join(lines[: int(len(lines) * 0.2)]))
    out["line_dropped"] = _import(root, "dropped", "".join(lines[:500] + lines[501:]))
    edited = [line.replace("about boats", "about planes") if i == 300 else line for i, line in enumerate(lines)]
    out["text_edited"] = _import(root, "edited", "".join(edited))
    # rename the header's namespace: does it merge into the existing 'a' of another store?
    other = root / "other.db"
    _store(other, 10, conversation="z")
    header = json.loads(lines[0])
    header["namespaces"] = ["b"]
    renamed = [json.dumps(header) + "\n"] + lines[1:]
    out["header_renamed_into_existing"] = _import(root, "renamed", "".join(renamed), into=other)
    return out


def foreign(root: Path) -> dict[str, Any]:
    path = root / "app.db"
    conn = apsw.Connection(str(path))
    conn.execute(
        "create table customers(id integer primary key, name text); "
        "insert into customers(name) values ('Ada'), ('Linus'); pragma user_version = 3"
    )
    conn.close()
    before = path.read_bytes()
    done = cli("--db", str(path), "stats")
    conn = apsw.Connection(str(path))
    after = {
        "journal_mode": conn.pragma("journal_mode"),
        "user_version": conn.pragma("user_version"),
        "tables": sorted(r[0] for r in conn.execute("select name from sqlite_schema where type = 'table'"))[:8],
    }
    conn.close()
    return {
        "exit": done.returncode,
        "stderr": done.stderr.strip()[:200],
        "bytes_unchanged": path.read_bytes() == before,
        "wal_created": Path(f"{path}-wal").exists(),
        **after,
    }


def corrupt(root: Path) -> dict[str, Any]:
    path = root / "corrupt.db"
    _store(path, 2000)
    data = bytearray(path.read_bytes())
    page = 4096
    for pgno in range(3, len(data) // page, 4):  # scribble over every fourth page
        data[pgno * page + 8 : pgno * page + 400] = os.urandom(392)
    path.write_bytes(bytes(data))
    before = path.read_bytes()
    stats = cli("--db", str(path), "stats")
    search = cli("--db", str(path), "search", "boats", "--channels", "bm25")
    add = cli("--db", str(path), "forget", "--namespace", "a", "--yes")
    return {
        "stats": {"exit": stats.returncode, "stderr": stats.stderr.strip()[:200]},
        "search": {"exit": search.returncode, "stderr": search.stderr.strip()[:200]},
        "forget": {"exit": add.returncode, "stderr": add.stderr.strip()[:200]},
        "bytes_unchanged": path.read_bytes() == before,
    }


def permissions(root: Path) -> dict[str, Any]:
    home = root / "xdg"
    env = {
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "LOCALMEM_HOME": "",
    }
    old = os.umask(0o022)
    try:
        script = (
            "import sys; from localmem import Memory; from tests.fakes import HashEmbedder\n"
            "mem = Memory(embedder=HashEmbedder()); mem.add('Ann', 'a private note')\n"
            "open(sys.argv[1], 'w').write(str(mem.path)); import time; time.sleep(3)\n"
        )
        marker = root / "where.txt"
        proc = subprocess.Popen([sys.executable, "-c", script, str(marker)], cwd=REPO, env={**os.environ, **env})
        import time

        while not marker.exists() or not marker.read_text():
            time.sleep(0.05)
        db = Path(marker.read_text())
        modes = {
            name: oct(stat.S_IMODE(p.stat().st_mode)) if p.exists() else None
            for name, p in (("db", db), ("wal", Path(f"{db}-wal")), ("shm", Path(f"{db}-shm")), ("data_dir", db.parent))
        }
        proc.wait(timeout=60)
        export = root / "export.jsonl"
        cli("--db", str(db), "export", "-o", str(export), env=env)
        modes["export"] = oct(stat.S_IMODE(export.stat().st_mode))
    finally:
        os.umask(old)
    return modes


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        out = {
            "exports": exports(root),
            "foreign": foreign(root),
            "corrupt": corrupt(root),
            "permissions_umask_022": permissions(root),
        }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
