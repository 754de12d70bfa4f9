"""Build the assistant-style eval set (LongMemEval JSON) from the hand-written sources in src/.

    python3 evals/assistant/build.py        # writes dev.json (h1, h2) and test.json (h3, h4)

Sources (plain text, written by hand):

* ``src/hN.txt``: one history. ``=== <session_id> | <YYYY/MM/DD (Day) HH:MM>`` opens a
  session; ``>>> user {tag, tag}`` or ``>>> assistant {tag}`` opens a turn, whose text runs
  to the next marker. Tags name the evidence a turn holds; they are not written out.
* ``src/hN_q.txt``: its questions. ``### <id> <question_type>`` opens one, then ``Q:``
  (question), ``A:`` (gold answer), ``E:`` (evidence tags, comma separated; empty for an
  abstention), optional ``D:`` (question date; else the file's ``@question_date``) and
  optional ``C:`` checks of the date arithmetic, ``C: days 2024/01/22 2024/04/15 = 84``
  (the answer must then contain the number).

An item's ``answer_session_ids`` are the sessions holding a turn with one of its tags, and
those turns (only) get ``"has_answer": true``. Python 3.11 stdlib only.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE / "src"
SPLITS = {"dev": ["h1", "h2"], "test": ["h3", "h4"]}
TYPES = {
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "knowledge-update",
    "temporal-reasoning",
}
DATE_RE = re.compile(r"^(\d{4})/(\d{2})/(\d{2}) \((\w{3})\) (\d{2}):(\d{2})$")


def parse_date(text: str, where: str) -> dt.datetime:
    m = DATE_RE.match(text.strip())
    if not m:
        sys.exit(f"{where}: bad date {text!r}")
    y, mo, d, wd, h, mi = m.groups()
    when = dt.datetime(int(y), int(mo), int(d), int(h), int(mi))
    if when.strftime("%a") != wd:
        sys.exit(f"{where}: {text!r} is a {when.strftime('%a')}, not a {wd}")
    return when


def read_history(name: str) -> tuple[dict, list[dict]]:
    meta: dict = {}
    sessions: list[dict] = []
    turn: dict | None = None
    for n, line in enumerate((SRC / f"{name}.txt").read_text(encoding="utf-8").splitlines(), 1):
        where = f"src/{name}.txt:{n}"
        if line.startswith("@"):
            key, _, value = line[1:].partition(" ")
            meta[key] = value.strip()
        elif line.startswith("==="):
            sid, _, date = line[3:].partition("|")
            sessions.append({"id": sid.strip(), "date": date.strip(), "turns": [], "when": parse_date(date, where)})
            turn = None
        elif line.startswith(">>>"):
            m = re.match(r"^>>> (user|assistant)\s*(?:\{([^}]*)\})?\s*$", line)
            if not m or not sessions:
                sys.exit(f"{where}: bad turn marker {line!r}")
            tags = {t.strip() for t in (m.group(2) or "").split(",") if t.strip()}
            turn = {"role": m.group(1), "tags": tags, "lines": []}
            sessions[-1]["turns"].append(turn)
        elif line.startswith("#") and turn is None:
            continue
        elif turn is not None:
            turn["lines"].append(line)
        elif line.strip():
            sys.exit(f"{where}: text outside a turn")
    for s in sessions:
        for t in s["turns"]:
            t["content"] = "\n".join(t.pop("lines")).strip()
            if not t["content"]:
                sys.exit(f"{name}: empty turn in {s['id']}")
    whens = [s["when"] for s in sessions]
    if whens != sorted(whens) or len({s["id"] for s in sessions}) != len(sessions):
        sys.exit(f"{name}: sessions must be in date order with unique ids")
    return meta, sessions


def read_questions(name: str) -> list[dict]:
    items: list[dict] = []
    for n, line in enumerate((SRC / f"{name}_q.txt").read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or (line.startswith("#") and not line.startswith("###")):
            continue
        if line.startswith("###"):
            qid, qtype = line[3:].split()
            items.append({"id": qid, "type": qtype, "checks": [], "line": n})
        elif line[:2] in ("Q:", "A:", "E:", "D:"):
            items[-1][line[0]] = line[2:].strip()
        elif line.startswith("C:"):
            items[-1]["checks"].append(line[2:].strip())
        else:
            sys.exit(f"src/{name}_q.txt:{n}: unexpected line {line!r}")
    return items


def run_check(check: str, answer: str, where: str) -> None:
    m = re.match(r"^(days|weeks|age) (\S+) (\S+) = (\d+)$", check)
    if not m:
        sys.exit(f"{where}: bad check {check!r}")
    kind, a, b, expected = m.group(1), *(dt.date(*map(int, x.split("/"))) for x in m.group(2, 3)), int(m.group(4))
    if kind == "days":
        got = (b - a).days
    elif kind == "weeks":
        got = (b - a).days // 7
    else:  # age at date b of someone born on a
        got = b.year - a.year - ((b.month, b.day) < (a.month, a.day))
    if got != expected:
        sys.exit(f"{where}: {check} computes {got}")
    if not re.search(rf"\b{expected}\b", answer):
        sys.exit(f"{where}: answer {answer!r} does not contain {expected}")


def build_history(name: str, quiet: bool = False) -> list[dict]:
    meta, sessions = read_history(name)
    all_tags = {t for s in sessions for turn in s["turns"] for t in turn["tags"]}
    used: set[str] = set()
    out = []
    for q in read_questions(name):
        where = f"src/{name}_q.txt:{q['line']}"
        if q["type"] not in TYPES or not all(k in q for k in "QAE"):
            sys.exit(f"{where}: needs a known type and Q:, A:, E:")
        tags = {t.strip() for t in q["E"].split(",") if t.strip()}
        if unknown := tags - all_tags:
            sys.exit(f"{where}: unknown tags {sorted(unknown)}")
        if q["id"].endswith("_abs") == bool(tags):
            sys.exit(f"{where}: abstention items (and only they) have no evidence tags")
        used |= tags
        qdate = q.get("D") or meta["question_date"]
        if parse_date(qdate, where) <= sessions[-1]["when"]:
            sys.exit(f"{where}: question date must follow the last session")
        for check in q["checks"]:
            run_check(check, q["A"], where)
        haystack = []
        for s in sessions:
            haystack.append(
                [
                    {"role": t["role"], "content": t["content"], **({"has_answer": True} if t["tags"] & tags else {})}
                    for t in s["turns"]
                ]
            )
        out.append(
            {
                "question_id": f"asst-{name}-{q['id']}",
                "question_type": q["type"],
                "question": q["Q"],
                "answer": q["A"],
                "question_date": qdate,
                "haystack_session_ids": [s["id"] for s in sessions],
                "haystack_dates": [s["date"] for s in sessions],
                "haystack_sessions": haystack,
                "answer_session_ids": [s["id"] for s in sessions if any(t["tags"] & tags for t in s["turns"])],
            }
        )
    if (unused := all_tags - used) and not quiet:
        print(f"{name}: note, tags never asked about: {sorted(unused)}")
    return out


def main() -> None:
    for split, names in SPLITS.items():
        items = [item for name in names for item in build_history(name)]
        (HERE / f"{split}.json").write_text(json.dumps(items, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"{split}.json: {len(items)} items")


if __name__ == "__main__":
    main()
