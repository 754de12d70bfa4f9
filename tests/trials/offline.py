"""Trial (issue 17, item 2): does the CLI touch the network, or write outside its own home?

Runs ``ingest``, ``search`` and ``ask`` (with the tiny SmolLM2 model) of the checkout ``--src``
under ``strace -f -e trace=network``, with a fresh ``$HOME`` each trial, and counts per command
the socket() calls of any family but AF_UNIX, the DNS lookups (connects to port 53), and the files
written under ``$HOME`` outside ``$LOCALMEM_HOME``. Linux with strace only.

    python tests/trials/offline.py [--src DIR] [--trials 3]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "examples" / "sample-chat.txt"
TINY = "smollm2-135m-instruct-q4_1"


def trial(src: Path) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "user"
        home.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ORT_", "HF_", "LOCALMEM_", "XDG_"))}
        env.update(HOME=str(home), LOCALMEM_HOME=str(home / "localmem"), LOCALMEM_N_THREADS="1", PYTHONPATH=str(src))
        commands = [
            ["ingest", str(SAMPLE)],
            ["search", "Where did Priya move?"],
            ["--llm-model", TINY, "ask", "Where did Priya move?", "--max-tokens", "64"],
        ]
        for args in commands:
            trace = Path(tmp) / "trace.txt"
            done = subprocess.run(
                ["strace", "-f", "-e", "trace=network", "-o", str(trace), sys.executable, "-m", "localmem", *args],
                capture_output=True,
                text=True,
                env=env,
            )
            log = trace.read_text(errors="replace")
            sockets = [m for m in re.findall(r"\bsocket\((AF_[A-Z0-9]+)", log) if m != "AF_UNIX"]
            dns = len(re.findall(r"connect\(\d+, \{sa_family=AF_INET6?, sin6?_port=htons\(53\)", log))
            written = sorted(
                str(p.relative_to(home))
                for p in home.rglob("*")
                if p.is_file() and not p.is_relative_to(home / "localmem")
            )
            rows.append(
                {
                    "command": args[0] if args[0] != "--llm-model" else "ask",
                    "exit": done.returncode,
                    "network_sockets": len(sockets),
                    "dns_queries": dns,
                    "files_outside_home": written,
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", type=Path, default=REPO, help="the localmem checkout to run")
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    for n in range(args.trials):
        for row in trial(args.src.resolve()):
            print(
                f"trial {n + 1} {row['command']:7} exit {row['exit']}: {row['network_sockets']} network sockets, "
                f"{row['dns_queries']} DNS queries, files outside LOCALMEM_HOME: {row['files_outside_home'] or 'none'}"
            )


if __name__ == "__main__":
    main()
