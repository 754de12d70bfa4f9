"""Trial: random forgets of every kind, each checked for copies of what it deleted left in the file.

    PYTHONPATH=$PWD python -m tests.trials.forget_random [--trials 40] [--messages 1500] [--seed 100]

Each trial builds a store of three files of chat (conversations of 50 messages, sessions of 10,
texts of 3 to 70 words) plus a few messages added one by one, every message holding a unique
marker. Then three forgets in a row, of three of the kinds (ids, --conversation, --before,
--match, --source; the kind rotates with the seed). After each, the markers of every message
no longer stored are counted in the database file and its WAL, with the store still open.
Prints one JSON line per forget, then a summary. Public API only, so it runs on any checkout.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from localmem import Memory

from ..fakes import HashEmbedder

LETTERS = "abcdefghijklmnopqrstuvwxyz0123456789"
WORDS = "harbour ferry island morning coffee train station museum garden dinner friends weekend job".split()
KINDS = ("ids", "conversation", "before", "match", "source")


def _marker(rng: random.Random) -> str:
    return "qz" + "".join(rng.choice(LETTERS) for _ in range(14))


def _copies(path: Path, markers: list[str]) -> int:
    """Copies of the markers (their last 10 characters) in the file and its WAL."""
    data = b"".join(p.read_bytes() for p in (path, Path(f"{path}-wal")) if p.exists())
    return sum(data.count(m[-10:].encode()) for m in markers)


def trial(root: Path, seed: int, n: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    path = root / f"s{seed}.db"
    marks: dict[tuple[str, str], str] = {}
    files = []
    for f in range(3):
        rows = []
        for i in range(n // 3):
            mark = _marker(rng)
            text = (
                " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 40)))
                + f" {mark} "
                + " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 30)))
            )
            conversation, ext = f"c{f}-{i // 50}", f"f{f}m{i}"
            marks[(conversation, ext)] = mark
            rows.append(
                {
                    "conversation": conversation,
                    "session": f"s{i // 10}",
                    "id": ext,
                    "speaker": rng.choice(["Ann", "Bob"]),
                    "text": text,
                    "time": f"2023-{1 + f * 3 + i * 3 // n:02d}-{1 + i % 27:02d}T10:{i % 60:02d}",
                }
            )
        files.append(root / f"in{seed}-{f}.jsonl")
        files[-1].write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    results = []
    with Memory(path, namespace="me", embedder=HashEmbedder(dim=64)) as mem:
        for file in files:
            mem.ingest(file)
        for _ in range(rng.randint(0, 20)):  # some messages added one by one, as a chat app does
            mark = _marker(rng)
            added = mem.add(
                "Ann",
                f"added note {mark} " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 30))),
                conversation=rng.choice(["chat", "work"]),
            )
            marks[(added.conversation, added.external_id)] = mark
        by_id = {h.id: marks[(h.sources[0].conversation, h.sources[0].external_id)] for h in mem.recent(n + 100)}
        for round_ in range(3):
            alive = [h.id for h in mem.recent(n + 100)]
            if not alive:
                break
            kind = KINDS[(seed + round_) % len(KINDS)]
            args = _target(mem, rng, kind, alive, by_id)
            started = time.perf_counter()
            done = mem.forget(**args).to_dict()
            seconds = time.perf_counter() - started
            alive = {h.id for h in mem.recent(n + 100)}
            gone = [m for m in by_id if m not in alive]
            scrub = done.get("file") or {}
            results.append(
                {
                    "seed": seed,
                    "kind": kind,
                    "deleted": len(done["messages"]),
                    "copies_left": _copies(path, [by_id[m] for m in gone]),
                    "kept_found": sum(_copies(path, [by_id[m]]) > 0 for m in alive),
                    "kept": len(alive),
                    "vacuumed": scrub.get("vacuumed"),
                    "why": scrub.get("vacuum_reason"),
                    "seconds": round(seconds, 3),
                }
            )
    return results


def _target(mem: Memory, rng: random.Random, kind: str, alive: list[str], by_id: dict[str, str]) -> dict[str, Any]:
    if kind == "ids":
        return {"ids": rng.sample(alive, min(len(alive), rng.randint(1, 5)))}
    if kind == "conversation":
        some = rng.sample(alive, min(5, len(alive)))
        return {"conversation": rng.choice(sorted({mem.browse.get(m).conversation for m in some}))}
    if kind == "before":
        return {"before": f"2023-{rng.randint(2, 9):02d}-{rng.randint(1, 28):02d}"}
    if kind == "match":
        return {"match": by_id[rng.choice(alive)]}
    return {"source_id": rng.choice([s.id for s in mem.browse.sources()])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--messages", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=100)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.seed, args.seed + args.trials):
            for row in trial(Path(tmp), seed, args.messages):
                rows.append(row)
                print(json.dumps(row), flush=True)
            for leftover in Path(tmp).glob(f"s{seed}.db*"):
                leftover.unlink()
    vacuums = [r for r in rows if r["vacuumed"]]
    print(
        json.dumps(
            {
                "trials": args.trials,
                "forgets": len(rows),
                "forgets_leaving_copies": sum(r["copies_left"] > 0 for r in rows),
                "copies_left": sum(r["copies_left"] for r in rows),
                "kept_messages_lost": sum(r["kept"] - r["kept_found"] for r in rows),
                "vacuumed": len(vacuums),
                "vacuumed_by_kind": {k: sum(r["kind"] == k for r in vacuums) for k in KINDS},
                "forgets_by_kind": {k: sum(r["kind"] == k for r in rows) for k in KINDS},
                "seconds_max": max((r["seconds"] for r in rows), default=0),
            }
        )
    )


if __name__ == "__main__":
    main()
