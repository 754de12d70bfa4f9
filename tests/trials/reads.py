"""Trial (issue 17, item 9): do the commands that only read write anything?

With a fresh ``$HOME`` and ``$LOCALMEM_HOME``, ingests the sample chat with the checkout
``--src``, then runs each read command and reports, per command: whether it imported llama_cpp,
whether the store file's bytes changed, and the files that appeared under ``$HOME``. The CLI is
started as ``python -c "from localmem.cli import cli; cli()"`` so older checkouts (without
``localmem.__main__``) run too.

    python tests/trials/reads.py [--src DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "examples" / "sample-chat.txt"
READS = [
    ["search", "Where did Priya move?"],
    ["search", "Where did Priya move?", "--max-tokens", "120"],
    ["stats"],
    ["export"],
    ["namespaces"],
]


def tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", type=Path, default=REPO, help="the localmem checkout to run")
    src = parser.parse_args().src.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "user"
        (home / "localmem").mkdir(parents=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LOCALMEM_", "XDG_"))}
        env.update(HOME=str(home), LOCALMEM_HOME=str(home / "localmem"), PYTHONPATH=str(src))
        cli = [
            sys.executable,
            "-X",
            "importtime",
            "-c",
            "import sys; from localmem.cli import cli; sys.argv[0] = 'localmem'; cli()",
        ]
        subprocess.run([*cli, "ingest", str(SAMPLE)], capture_output=True, env=env, check=True)
        before = tree(home)
        for args in READS:
            done = subprocess.run([*cli, *args], capture_output=True, text=True, env=env)
            llama = any(
                line.split("|")[-1].strip().startswith("llama_cpp")
                for line in done.stderr.splitlines()
                if line.startswith("import time:")
            )
            after = tree(home)
            store = "unchanged" if after.get("localmem/memory.db") == before.get("localmem/memory.db") else "CHANGED"
            new = sorted(set(after) - set(before))
            size = sum((home / n).stat().st_size for n in new)
            print(
                f"{' '.join(args):45} exit {done.returncode}; llama_cpp imported: {llama}; store bytes {store}; "
                f"new files: {new or 'none'}{f' ({size / 1e6:,.0f} MB)' if new else ''}"
            )
            before = after


if __name__ == "__main__":
    main()
