"""Write the questions ``localmem bench ask`` times: every 40th question of categories 1–4 of
LoCoMo files, in file order, as JSONL with ``query`` and ``namespace`` (the sample's id, the
namespace ``localmem eval locomo`` ingests it into), so the bench runs on the eval's store.

usage: python evals/speed_questions.py locomo-dev.json locomo-dev-more.json [--every 40] > q.jsonl
       localmem --db "$LOCALMEM_HOME/eval-locomo.db" bench ask q.jsonl --json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--every", type=int, default=40)
    args = parser.parse_args()
    answerable = [
        {"query": qa["question"], "namespace": sample["sample_id"]}
        for path in args.files
        for sample in json.loads(path.read_text(encoding="utf-8"))
        for qa in sample["qa"]
        if qa.get("category") in (1, 2, 3, 4)
    ]
    for item in answerable[:: args.every]:
        print(json.dumps(item, ensure_ascii=False))


if __name__ == "__main__":
    main()
