"""Trial: what a forget costs, and what merging the full-text indexes costs, by store size.

    PYTHONPATH=$PWD python -m tests.trials.forget_cost [--sizes 10000] [--dir DIR]

For each size: a store of that many messages (384-dim vectors, two sentences each, so with
sentence parts), of which 10% are in a namespace to forget and 10% in a source to forget.
Times ``forget --namespace``, ``forget --source``, then one more full-text ``optimize``
(with nothing left to merge), and the file's size before and after. Public API only.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from ..fakes import HashEmbedder
from ..helpers import open_memory

WORDS = (
    "harbour ferry island morning coffee train station museum garden dinner friends weekend job "
    "office project deadline concert guitar painting school daughter son birthday cake hiking "
    "mountain lake camping dog cat doctor book novel movie"
).split()


def _write(path: Path, n: int, start: int, conversation: str) -> Path:
    rng = random.Random(start)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(start, start + n):
            a = " ".join(rng.choice(WORDS) for _ in range(9))
            b = " ".join(rng.choice(WORDS) for _ in range(8))
            fh.write(
                json.dumps(
                    {
                        "conversation": f"{conversation}{i // 2000}",
                        "session": f"s{i // 200}",
                        "id": f"m{i}",
                        "speaker": "Ann" if i % 2 else "Bob",
                        "text": f"Today I saw the {a} near home. Then we talked about {b} for an hour.",
                    }
                )
                + "\n"
            )
    return path


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.is_file())


def trial(root: Path, size: int) -> dict[str, Any]:
    path = root / f"cost-{size}.db"
    tenth = size // 10
    keep = _write(root / "keep.jsonl", size - 2 * tenth, 0, "k")
    source = _write(root / "source.jsonl", tenth, size, "s")
    gone = _write(root / "gone.jsonl", tenth, 2 * size, "g")
    emb = HashEmbedder(dim=384)
    t0 = time.perf_counter()
    with open_memory(path, namespace="keep", embedder=emb) as mem:
        mem.ingest(keep)
        mem.ingest(source)
        mem.ingest(gone, namespace="gone")
        source_id = mem.browse.sources()[1].id
    out: dict[str, Any] = {"messages": size, "ingest_s": round(time.perf_counter() - t0, 1), "bytes": _size(path)}
    with open_memory(path, namespace="keep", embedder=emb) as mem:
        t0 = time.perf_counter()
        mem.forget(namespace="gone")
        out["forget_namespace_s"] = round(time.perf_counter() - t0, 3)
        t0 = time.perf_counter()
        mem.forget(source_id=source_id)
        out["forget_source_s"] = round(time.perf_counter() - t0, 3)
        t0 = time.perf_counter()
        with mem.conn:
            mem.conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('optimize')")
        out["optimize_again_s"] = round(time.perf_counter() - t0, 3)
        out["bytes_after"] = _size(path)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000")
    parser.add_argument("--dir", type=Path)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.dir:
        args.dir.mkdir(parents=True, exist_ok=True)
        print(json.dumps([trial(args.dir, n) for n in sizes], indent=1))
        return
    with tempfile.TemporaryDirectory() as tmp:
        print(json.dumps([trial(Path(tmp), n) for n in sizes], indent=1))


if __name__ == "__main__":
    main()
