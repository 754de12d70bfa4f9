"""Trial: after a forget, are the forgotten messages' text and vectors still in the file's bytes?

    PYTHONPATH=$PWD python -m tests.trials.forget_bytes [--dir DIR]

Builds a store (a kept namespace, a namespace to forget, built with a scripted LLM so it has
units and an LLM call log; a source to forget whose last message is the context of a kept
message), forgets, and counts a unique marker and the forgotten vectors (float32 as stored
in vec0, int8 and binary codes, sentence-part vectors) in the database file and its WAL:
right after the forget returns (the store still open) and after it is closed. Uses only the
public API, so it runs on any checkout. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from pathlib import Path
from typing import Any

from ..fakes import HashEmbedder, ScriptedLLM
from ..helpers import open_memory

GONE = "zqgonemark4417x9"  # the namespace's marker
SOURCE = "zqsrcmark8203k7"  # the source's marker
DIM = 128  # binary codes of 16 bytes


class DenseEmbedder(HashEmbedder):
    """HashEmbedder's vectors plus seeded noise in every dimension, so that every 16 bytes of a
    vector (and of its codes) are distinctive, and a piece of one found in the file is that one."""

    def embed(self, texts, role="passage"):
        import hashlib

        import numpy as np

        out = super().embed(texts)
        for row, text in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
            out[row] += np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32) * 0.2
            out[row] /= np.linalg.norm(out[row])
        return out


def file_bytes(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in (path, Path(f"{path}-wal")) if p.is_file())


def count(data: bytes, needle: str | bytes) -> int:
    raw = needle.encode() if isinstance(needle, str) else needle
    return data.count(raw)


def found(data: bytes, blob: bytes) -> bool:
    """Whether ``blob`` (or what is left of it) is in ``data``: its first or last 16 bytes. A blob
    in a row larger than a page runs over into overflow pages and may be cut in two at a page
    boundary; one of its ends is then whole."""
    return blob[:16] in data or blob[-16:] in data


def responder(messages: list[dict[str, str]]) -> dict[str, Any]:
    """A plausible model: no boundaries; every message becomes a fact quoting it."""
    user = messages[-1]["content"]
    if "Where do new episodes start?" in user:
        return {"boundaries": []}
    facts, names = [], set()
    for line in user.splitlines():
        found = re.match(r"\[(\d+)\] ([^:]+): (.*)", line)
        if found:
            idx, speaker, text = int(found[1]), found[2], found[3]
            names.add(speaker)
            facts.append(
                {
                    "text": f"{speaker} said {text[:80]}",
                    "subject": speaker,
                    "predicate": "said",
                    "object": text[:60],
                    "time": "",
                    "source": idx,
                }
            )
    return {
        "title": "A chat",
        "narrative": "They talked: " + " ".join(f["object"] for f in facts[:3]),
        "facts": facts[:8],
        "entities": [{"name": n, "type": "person", "tag": "chat"} for n in sorted(names)],
    }


def lines(n: int, conversation: str, marker: str | None = None, start: int = 0) -> str:
    out = []
    for i in range(start, start + n):
        words = f"{marker} " if marker else ""
        text = (
            f"Entry {i}: {words}we walked along the harbour near pier {i} at dawn. "
            f"Then {words}the ferry number {i * 7} left for the island with forty people aboard."
        )
        out.append(
            json.dumps(
                {
                    "conversation": conversation,
                    "session": "s1",
                    "id": f"m{i}",
                    "speaker": "Ann" if i % 2 else "Bob",
                    "text": text,
                    "time": f"2024-01-{1 + i % 28:02d}T10:{i % 60:02d}:00",
                }
            )
        )
    return "\n".join(out) + "\n"


def blobs(conn: Any, message_ids: list[int], unit_ids: list[int]) -> set[bytes]:
    """Every vector blob of these messages (with their parts) and units: float32, int8, binary."""
    m, u = json.dumps(message_ids), json.dumps(unit_ids)
    parts = json.dumps(
        [
            r[0]
            for r in conn.execute(
                "select p.id from message_parts p join json_each(?) j on j.value = p.message_id", (m,)
            )
        ]
    )
    queries = [
        ("select embedding from vec_messages where rowid in (select value from json_each(?))", m),
        ("select code from vec_message_codes where id in (select value from json_each(?))", m),
        ("select q8 from vec_message_codes where id in (select value from json_each(?))", m),
        ("select embedding from vec_message_parts where rowid in (select value from json_each(?))", parts),
        ("select code from vec_part_codes where id in (select value from json_each(?))", parts),
        ("select q8 from vec_part_codes where id in (select value from json_each(?))", parts),
        ("select embedding from vec_units where rowid in (select value from json_each(?))", u),
        ("select code from vec_unit_codes where id in (select value from json_each(?))", u),
        ("select q8 from vec_unit_codes where id in (select value from json_each(?))", u),
    ]
    found: set[bytes] = set()
    for sql, ids in queries:
        found |= {bytes(r[0]) for r in conn.execute(sql, (ids,)) if r[0] is not None}
    return found


def make_store(root: Path) -> tuple[Path, dict[str, Any]]:
    path = root / "trial.db"
    emb, llm = DenseEmbedder(dim=DIM), ScriptedLLM(responder=responder)
    first = root / "first.jsonl"
    first.write_text(lines(30, "harbour", SOURCE), encoding="utf-8")
    appended = root / "appended.jsonl"  # the same file grown: its new messages follow the first's
    appended.write_text(lines(30, "harbour", SOURCE) + lines(30, "harbour", None, start=30), encoding="utf-8")
    kept = root / "kept.jsonl"
    kept.write_text(lines(120, "kept", None, start=100), encoding="utf-8")
    gone = root / "gone.jsonl"
    gone.write_text(lines(80, "gone", GONE, start=500), encoding="utf-8")
    with open_memory(path, namespace="keep", embedder=emb, llm=llm) as mem:
        mem.ingest(kept, extract="llm")
        mem.ingest(first, extract="llm")
        mem.ingest(appended, extract="llm")
        mem.ingest(gone, namespace="gone", extract="llm")
        conn = mem.conn
        source_id = mem.browse.sources()[1].id
        ids = {
            "gone_messages": [r[0] for r in conn.execute("select id from messages where ns = 'gone'")],
            "gone_units": [r[0] for r in conn.execute("select id from units where ns = 'gone'")],
            "source_messages": [
                r[0] for r in conn.execute("select id from messages where source_id = ?", (source_id,))
            ],
            "source_units": [
                r[0]
                for r in conn.execute(
                    "select distinct us.unit_id from unit_sources us join messages m on m.id = us.message_id "
                    "where m.source_id = ?",
                    (source_id,),
                )
            ],
        }
        kept_ids = [
            r[0] for r in conn.execute("select id from messages where ns = 'keep' and source_id != ?", (source_id,))
        ]
        kept_units = [
            r[0]
            for r in conn.execute(
                "select id from units where ns = 'keep' and id not in (select value from json_each(?))",
                (json.dumps(ids["source_units"]),),
            )
        ]
        keep_blobs = blobs(conn, kept_ids, kept_units)
        info = {
            "source_id": source_id,
            "gone_blobs": blobs(conn, ids["gone_messages"], ids["gone_units"]) - keep_blobs,
            "source_blobs": blobs(conn, ids["source_messages"], ids["source_units"]) - keep_blobs,
            "gone_llm_calls": conn.execute("select count(*) from llm_calls where ns = 'gone'").fetchone()[0],
            "messages": conn.execute("select count(*) from messages").fetchone()[0],
        }
    return path, info


def present(path: Path, marker: str, vectors: set[bytes]) -> dict[str, int]:
    data = file_bytes(path)
    return {
        "marker": count(data, marker),
        "marker_tail": count(data, marker[-8:]),
        "vectors_found": sum(1 for b in vectors if found(data, b)),
        "vectors": len(vectors),
    }


def trial(root: Path) -> dict[str, Any]:
    path, info = make_store(root)
    out: dict[str, Any] = {"messages": info["messages"], "gone_llm_calls": info["gone_llm_calls"]}
    out["before"] = {
        "namespace": present(path, GONE, info["gone_blobs"]),
        "source": present(path, SOURCE, info["source_blobs"]),
    }
    with open_memory(path, namespace="keep", embedder=DenseEmbedder(dim=DIM)) as mem:
        mem.forget(namespace="gone")
        out["namespace_open"] = present(path, GONE, info["gone_blobs"])
        out["llm_calls_left"] = mem.conn.execute("select count(*) from llm_calls where ns = 'gone'").fetchone()[0]
        mem.forget(source_id=info["source_id"])
        out["source_open"] = present(path, SOURCE, info["source_blobs"])
        out["source_search_hits"] = len(mem.search(SOURCE, channels=["bm25"]))
    out["namespace_closed"] = present(path, GONE, info["gone_blobs"])
    out["source_closed"] = present(path, SOURCE, info["source_blobs"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, help="work here (default: a temporary directory)")
    args = parser.parse_args()
    if args.dir:
        args.dir.mkdir(parents=True, exist_ok=True)
        print(json.dumps(trial(args.dir), indent=1))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps(trial(Path(tmp)), indent=1))


if __name__ == "__main__":
    main()
