"""Trial (issue 17, item 2): which setting stops onnxruntime's telemetry?

One onnxruntime session on the default embedder, a few runs, then ``--idle`` seconds of
waiting, under ``strace -f -e trace=network`` with a fresh ``$HOME``, four ways: nothing set;
``ORT_DISABLE_TELEMETRY=1`` before the import; the same variable set after the import;
``onnxruntime.disable_telemetry_events()`` after the import. Prints the network sockets and DNS
lookups seen, and the files written under ``$HOME``. (The lookups come some seconds after the
session starts: a short run shows none.)

    python tests/trials/ort_telemetry.py [--idle 40]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

SESSION = r"""
import os, sys, time
mode, model, idle = sys.argv[1], sys.argv[2], float(sys.argv[3])
if mode == "variable before import":
    os.environ["ORT_DISABLE_TELEMETRY"] = "1"
import numpy as np
import onnxruntime as ort
if mode == "variable after import":
    os.environ["ORT_DISABLE_TELEMETRY"] = "1"
if mode == "disable_telemetry_events()":
    ort.disable_telemetry_events()
session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
ids = np.ones((1, 8), dtype=np.int64)
feeds = {"input_ids": ids, "attention_mask": ids}
if "token_type_ids" in {i.name for i in session.get_inputs()}:
    feeds["token_type_ids"] = np.zeros_like(ids)
for _ in range(3):
    session.run(None, feeds)
time.sleep(idle)
"""
MODES = ["nothing set", "variable before import", "variable after import", "disable_telemetry_events()"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--idle", type=float, default=40.0, help="seconds the session stays open")
    idle = parser.parse_args().idle
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from localmem.config import Config
    from localmem.models.catalog import resolve_embedder

    model = str(resolve_embedder(Config()).model_path)
    for mode in MODES:
        with tempfile.TemporaryDirectory() as tmp:
            home, trace = Path(tmp) / "user", Path(tmp) / "trace.txt"
            home.mkdir()
            env = {k: v for k, v in os.environ.items() if not k.startswith("ORT_")}
            env["HOME"] = str(home)
            subprocess.run(
                [
                    "strace",
                    "-f",
                    "-e",
                    "trace=network",
                    "-o",
                    str(trace),
                    sys.executable,
                    "-c",
                    SESSION,
                    mode,
                    model,
                    str(idle),
                ],
                env=env,
                check=True,
            )
            log = trace.read_text(errors="replace")
            sockets = [f for f in re.findall(r"\bsocket\((AF_[A-Z0-9]+)", log) if f != "AF_UNIX"]
            dns = re.findall(r"connect\(\d+, \{sa_family=AF_INET6?, sin6?_port=htons\(53\)", log)
            files = sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file())
            print(f"{mode:28} {len(sockets)} network sockets, {len(dns)} DNS lookups, files: {files or 'none'}")


if __name__ == "__main__":
    main()
