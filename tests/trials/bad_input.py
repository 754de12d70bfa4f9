"""Trial (issue 17, item 8): does bad input leave a stuck source?

Runs the CLI of the checkout ``--src`` on: a JSONL of 400 messages with one lone surrogate
(ingested twice), a search for a lone surrogate, JSON nested 990 levels, a JSONL line nested
1,000 levels, a FIFO with no writer (20 s timeout), /dev/zero (30 s timeout, 4 GB address
space) and, as root on Linux, a full 2 MB tmpfs (then grown to 32 MB and the ingest run again).
Prints each exit code, the first line on stderr and the store's state afterwards.

    python tests/trials/bad_input.py [--src DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import apsw

REPO = Path(__file__).resolve().parents[2]


def rows(n: int, broken: int | None = None) -> str:
    out = []
    for i in range(n):
        text = f"message number {i} about the garden"
        if i == broken:
            text = "broken emoji \ud83d here"
        out.append(
            json.dumps({"speaker": "Ana" if i % 2 else "Ben", "text": text, "time": f"2024-01-02 10:{i % 60:02d}"})
        )
    return "\n".join(out) + "\n"


def state(db: Path) -> str:
    if not db.exists():
        return "no store"
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        messages = conn.execute("select count(*) from messages").fetchone()[0]
        loading = conn.execute("select count(*) from sources where status != 'loaded'").fetchone()[0]
        return f"{messages} messages, {loading} source(s) not loaded"
    except apsw.Error as exc:
        return f"unreadable: {exc}"
    finally:
        conn.close()


def run(src: Path, home: Path, db: Path, args: list, timeout: float = 120, memory: int | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALMEM_")}
    env.update(LOCALMEM_HOME=str(home), PYTHONPATH=str(src))

    def limit() -> None:
        if memory:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    try:
        done = subprocess.run(
            [sys.executable, "-m", "localmem", "--db", str(db), *args],
            capture_output=True,
            env=env,
            timeout=timeout,
            preexec_fn=limit,
        )
    except subprocess.TimeoutExpired:
        return f"no exit after {timeout:.0f} s (killed)"
    first = (done.stderr.decode(errors="replace").strip().splitlines() or [""])[0]
    return f"exit {done.returncode}: {first[:150]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", type=Path, default=REPO, help="the localmem checkout to run")
    src = parser.parse_args().src.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        home = t / "home"
        (t / "cut.jsonl").write_text(rows(400, broken=300), encoding="ascii")
        db = t / "surrogate.db"
        for attempt in (1, 2):
            print(f"lone surrogate, run {attempt}: {run(src, home, db, ['ingest', t / 'cut.jsonl'])}; {state(db)}")
        query = os.fsdecode(b"caf\xed\xa0\xbd")  # a surrogate's bytes: Python keeps them as surrogates
        print(f"search for a lone surrogate: {run(src, home, db, ['search', query])}")
        (t / "deep.json").write_text("[" * 990 + "]" * 990)
        print(f"JSON nested 990 levels: {run(src, home, t / 'deep.db', ['ingest', t / 'deep.json'])}")
        (t / "deep.jsonl").write_text(
            '{"speaker": "A", "text": "hi"}\n{"speaker": "B", "text": "x", "extra": ' + "[" * 1000 + "]" * 1000 + "}\n"
        )
        print(
            f"JSONL line nested 1,000 levels: {run(src, home, t / 'deep.db', ['ingest', t / 'deep.jsonl'])}; "
            f"{state(t / 'deep.db')}"
        )
        os.mkfifo(t / "fifo.jsonl")
        print(f"FIFO without a writer: {run(src, home, t / 'fifo.db', ['ingest', t / 'fifo.jsonl'], timeout=20)}")
        print(f"/dev/zero: {run(src, home, t / 'zero.db', ['ingest', '/dev/zero'], timeout=30, memory=4 << 30)}")
        disk = t / "disk"
        disk.mkdir()
        if (
            os.geteuid() == 0
            and subprocess.run(
                ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)], capture_output=True
            ).returncode
            == 0
        ):
            try:
                (t / "clean.jsonl").write_text(rows(400), encoding="ascii")
                db = disk / "m.db"
                print(f"full disk (2 MB tmpfs): {run(src, home, db, ['ingest', t / 'clean.jsonl'], 300)}; {state(db)}")
                subprocess.run(["mount", "-o", "remount,size=32m", str(disk)], check=True)
                print(
                    f"after growing it to 32 MB: {run(src, home, db, ['ingest', t / 'clean.jsonl'], 300)}; {state(db)}"
                )
            finally:
                subprocess.run(["umount", "-l", str(disk)], capture_output=True)
        else:
            print("full disk: skipped (mounting a tmpfs needs root)")


if __name__ == "__main__":
    main()
