"""Search recall@10 per language on localmem's own multilingual set, with each embedder.

The set (``tests/fixtures/multilingual/conversations.json``, written for localmem) holds six
conversations: German, Spanish, French, Portuguese, Chinese, and one mixing Spanish and English,
each turn with its English translation, each question in the conversation's language and in
English. Three ways of asking:

- native: the history as written, the questions in its language;
- english: the same set translated: the English history, the English questions (the yardstick:
  native recall should be within 5 points of it);
- cross: the history as written, the questions in English.

All six conversations go into one namespace of one store (about 180 messages; with
``--distract FILE``, also the English LoCoMo turns of FILE as a haystack), so a question must
find its turn among the other conversations' too. A question's recall@k is the share of its gold
turns among the sources of the top k hits (``localmem search``, default recipe). Each embedder
gets its own fresh stores in a temporary folder.

Usage::

    python evals/multilingual_recall.py [--embedders minilm,multilingual] [--k 10] \
        [--distract ../shared/data/locomo/locomo-dev.json] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from localmem import Memory
from localmem.config import Config

SET = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "multilingual" / "conversations.json"
NS = "ml"


def locomo_samples(doc: dict[str, Any], history: str, questions: str) -> list[dict[str, Any]]:
    """The set as LoCoMo samples: ``history`` "native" or "english" turns, ``questions``
    "native" or "english"."""
    samples = []
    for conv in doc["conversations"]:
        c: dict[str, Any] = {"speaker_a": conv["speaker_a"], "speaker_b": conv["speaker_b"]}
        for si, session in enumerate(conv["sessions"], 1):
            c[f"session_{si}_date_time"] = session["date_time"]
            c[f"session_{si}"] = [
                {"speaker": speaker, "dia_id": f"D{si}:{ti}", "text": text if history == "native" else english}
                for ti, (speaker, text, english) in enumerate(session["turns"], 1)
            ]
        qa = [
            {
                "question": item["question"] if questions == "native" else item["question_en"],
                "answer": item["answer"] if questions == "native" else item["answer_en"],
                "evidence": item["evidence"],
                "category": item["category"],
            }
            for item in conv["qa"]
        ]
        samples.append({"sample_id": conv["id"], "conversation": c, "qa": qa})
    return samples


def build_store(folder: Path, name: str, samples: list[dict[str, Any]], config: Config, distract: Path | None):
    """A store holding ``samples`` (and the distractors) in namespace :data:`NS`; returns its
    path and the seconds ingest took."""
    data = folder / f"{name}.json"
    data.write_text(json.dumps(samples, ensure_ascii=False), encoding="utf-8")
    db = folder / f"{name}.db"
    started = time.perf_counter()
    with Memory(db, namespace=NS, config=config) as mem:
        mem.ingest(data, format="locomo", namespace=NS)
        if distract is not None:
            mem.ingest(distract, format="locomo", namespace=NS)
    return db, time.perf_counter() - started


def recall(db: Path, config: Config, samples: list[dict[str, Any]], k: int) -> dict[str, list[float]]:
    """Per conversation id, each question's recall@k."""
    asked = [(s["sample_id"], item) for s in samples for item in s["qa"]]
    out: dict[str, list[float]] = {}
    with Memory(db, namespace=NS, config=config) as mem:
        results = mem.search_many([item["question"] for _, item in asked], k=k)
        for (sid, item), hits in zip(asked, results):
            found = {(s.conversation, s.external_id) for h in hits for s in h.sources}
            gold = item["evidence"]
            out.setdefault(sid, []).append(sum((sid, g) in found for g in gold) / len(gold))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedders", default="minilm,multilingual")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--distract", type=Path, help="a LoCoMo file whose English turns join the namespace")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    doc = json.loads(SET.read_text(encoding="utf-8"))
    base = Config.load()
    languages = {c["id"]: c["language"] for c in doc["conversations"]}
    results: dict[str, dict[str, dict[str, list[float]]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for embedder in args.embedders.split(","):
            config = replace(base, embed_backend=embedder)
            native = locomo_samples(doc, "native", "native")
            english = locomo_samples(doc, "english", "english")
            cross = locomo_samples(doc, "native", "english")
            db_native, s1 = build_store(folder, f"native-{embedder}", native, config, args.distract)
            db_english, s2 = build_store(folder, f"english-{embedder}", english, config, args.distract)
            print(f"{embedder}: ingest {s1:.1f} s (native), {s2:.1f} s (english)", file=sys.stderr)
            results[embedder] = {
                "native": recall(db_native, config, native, args.k),
                "english": recall(db_english, config, english, args.k),
                "cross": recall(db_native, config, cross, args.k),
            }
    embedders = list(results)
    cols = [(way, e) for way in ("native", "english", "cross") for e in embedders]
    print(
        f"search recall@{args.k} (%), all six conversations in one namespace"
        + (" + distractors" if args.distract else "")
    )
    print("| conversation | language | n | " + " | ".join(f"{way} {e}" for way, e in cols) + " |")
    print("|---|---|---:|" + "---:|" * len(cols))

    def cell(values: list[float]) -> str:
        return f"{100 * sum(values) / len(values):.1f}"

    for sid, lang in languages.items():
        n = len(results[embedders[0]]["native"][sid])
        cells = [cell(results[e][way][sid]) for way, e in cols]
        print(f"| {sid} | {lang} | {n} | " + " | ".join(cells) + " |")
    pooled = [cell([v for sid in languages for v in results[e][way][sid]]) for way, e in cols]
    total = sum(len(results[embedders[0]]["native"][sid]) for sid in languages)
    print(f"| **pooled** | | {total} | " + " | ".join(pooled) + " |")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
