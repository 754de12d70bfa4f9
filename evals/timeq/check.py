"""Check the time-and-owner eval set: structure, abstention rule, evidence, dates, exports; print counts.

    python3 evals/timeq/check.py

Python 3.11 stdlib only. Exits non-zero on the first list of problems. Also checks that
dev.json, test.json and exports/ are what build.py makes from src/ (never hand-edited), and that
the two halves ask the same mix of question types.
"""

from __future__ import annotations

import collections
import datetime as dt
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FILES = {"dev": HERE / "dev.json", "test": HERE / "test.json"}
KEYS = [
    "question_id",
    "question_type",
    "question",
    "answer",
    "question_date",
    "haystack_session_ids",
    "haystack_dates",
    "haystack_sessions",
    "answer_session_ids",
]
TYPES = ["knowledge-update", "count-sum", "as-of", "date-arithmetic"]
DATE_RE = re.compile(r"^(\d{4})/(\d{2})/(\d{2}) \((Mon|Tue|Wed|Thu|Fri|Sat|Sun)\) (\d{2}):(\d{2})$")
REFUSAL = "not in the history"

problems: list[str] = []


def bad(where: str, what: str) -> None:
    problems.append(f"{where}: {what}")


def when(text: object, where: str) -> dt.datetime | None:
    m = DATE_RE.match(text) if isinstance(text, str) else None
    if not m:
        bad(where, f"date {text!r} is not like '2024/01/08 (Mon) 19:02'")
        return None
    y, mo, d, wd, h, mi = m.groups()
    try:
        moment = dt.datetime(int(y), int(mo), int(d), int(h), int(mi))
    except ValueError:
        bad(where, f"impossible date {text!r}")
        return None
    if moment.strftime("%a") != wd:
        bad(where, f"{text!r}: that day is a {moment.strftime('%a')}")
    return moment


def check_item(item: object, where: str) -> None:
    if not isinstance(item, dict):
        return bad(where, "item is not an object")
    if missing := [k for k in KEYS if k not in item]:
        return bad(where, f"missing keys {missing}")
    qid = item["question_id"]
    for key in ("question_id", "question", "answer", "question_type"):
        if not isinstance(item[key], str) or not item[key].strip():
            bad(where, f"{key} must be a non-empty string")
    if item["question_type"] not in TYPES:
        bad(where, f"unknown question_type {item['question_type']!r}")
    ids, dates, sessions = item["haystack_session_ids"], item["haystack_dates"], item["haystack_sessions"]
    if not (
        isinstance(ids, list)
        and isinstance(dates, list)
        and isinstance(sessions, list)
        and len(ids) == len(dates) == len(sessions)
        and ids
    ):
        return bad(where, "haystack_session_ids, haystack_dates and haystack_sessions differ in length")
    if len(set(ids)) != len(ids):
        bad(where, "duplicate haystack session ids")
    if not 8 <= len(sessions) <= 15:
        bad(where, f"{len(sessions)} sessions (want 8-15)")
    moments = [when(d, f"{where} haystack_dates[{i}]") for i, d in enumerate(dates)]
    known = [m for m in moments if m is not None]
    if len(known) == len(moments) and known != sorted(known):
        bad(where, "haystack_dates are not in order")
    asked = when(item["question_date"], f"{where} question_date")
    if asked and known and len(known) == len(moments) and asked <= max(known):
        bad(where, "question_date is not after the last session")
    answer_ids = item["answer_session_ids"]
    if not isinstance(answer_ids, list) or not set(answer_ids) <= set(ids):
        bad(where, "answer_session_ids is not a subset of haystack_session_ids")
        answer_ids = []
    evidence_sessions = set()
    for si, session in enumerate(sessions):
        if not isinstance(session, list) or not 2 <= len(session) <= 12:
            bad(where, f"session {ids[si]} has {len(session) if isinstance(session, list) else '?'} turns (want 2-12)")
            continue
        whatsapp = any("speaker" in t for t in session if isinstance(t, dict))
        for ti, turn in enumerate(session):
            tw = f"{where} {ids[si]}[{ti}]"
            if (
                not isinstance(turn, dict)
                or turn.get("role") not in ("user", "assistant")
                or not isinstance(turn.get("content"), str)
                or not turn["content"].strip()
            ):
                bad(tw, "a turn needs role user/assistant and non-empty content")
                continue
            if whatsapp and not isinstance(turn.get("speaker"), str):
                bad(tw, "every turn of a WhatsApp session names its speaker")
            if ti and turn["role"] == session[ti - 1].get("role"):
                bad(tw, "two turns in a row from the same role")
            if "has_answer" in turn:
                if turn["has_answer"] is not True:
                    bad(tw, "has_answer, when present, is true")
                evidence_sessions.add(ids[si])
        if session and session[0].get("role") != "user" and not whatsapp:
            bad(where, f"assistant session {ids[si]} does not open with the user")
    if qid.endswith("_abs"):
        if evidence_sessions or answer_ids:
            bad(where, "an abstention item has no evidence (no has_answer, empty answer_session_ids)")
        if REFUSAL not in item["answer"]:
            bad(where, f"an abstention answer says the information is {REFUSAL!r}")
    else:
        if not evidence_sessions:
            bad(where, "no turn with has_answer: true")
        if evidence_sessions != set(answer_ids):
            bad(
                where,
                f"answer_session_ids {answer_ids} differ from the has_answer sessions {sorted(evidence_sessions)}",
            )
        if REFUSAL in item["answer"]:
            bad(where, f"a non-abstention answer says {REFUSAL!r}")
    if "?" not in item["question"]:
        bad(where, "a question ends with a question mark")


def history_of(item: dict) -> str:
    return item["question_id"].split("-")[1]


def kind(item: dict) -> str:
    return "abstention" if item["question_id"].endswith("_abs") else item["question_type"]


def main() -> None:
    splits = {}
    for split, path in FILES.items():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            sys.exit(f"{path.name}: {exc}")
        if not isinstance(data, list) or not data:
            sys.exit(f"{path.name}: want a non-empty JSON list")
        for i, item in enumerate(data):
            check_item(item, f"{path.name}[{i}] {item.get('question_id') if isinstance(item, dict) else ''}")
        splits[split] = data
    if problems:
        print("\n".join(problems))
        sys.exit(f"{len(problems)} problem(s)")

    all_items = [it for data in splits.values() for it in data]
    qids = [it["question_id"] for it in all_items]
    if len(set(qids)) != len(qids):
        problems.append("duplicate question_ids")
    histories: dict[str, list[dict]] = collections.defaultdict(list)
    for it in all_items:
        histories[history_of(it)].append(it)
    for name, items in histories.items():
        first = items[0]

        def strip(item: dict) -> list:
            return [[{k: v for k, v in t.items() if k != "has_answer"} for t in s] for s in item["haystack_sessions"]]

        for it in items[1:]:
            if any(it[k] != first[k] for k in ("haystack_session_ids", "haystack_dates")) or strip(it) != strip(first):
                problems.append(f"{it['question_id']}: haystack differs from the rest of history {name}")
    split_of = {history_of(it): split for split, data in splits.items() for it in data}
    if {h for h, s in split_of.items() if s == "dev"} & {h for h, s in split_of.items() if s == "test"}:
        problems.append("a history appears in both splits")
    if len(histories) < 4:
        problems.append(f"{len(histories)} histories (want at least 4)")
    if len(all_items) < 60:
        problems.append(f"{len(all_items)} questions (want at least 60)")
    mixes = {split: collections.Counter(kind(it) for it in data) for split, data in splits.items()}
    if mixes["dev"] != mixes["test"]:
        problems.append(
            f"the halves ask different mixes of question types: {dict(mixes['dev'])} vs {dict(mixes['test'])}"
        )
    if not any("speaker" in t for items in histories.values() for s in items[0]["haystack_sessions"] for t in s):
        problems.append("no history mixes a WhatsApp chat with an assistant chat")

    # The JSON and the export files must be exactly what build.py makes from src/.
    sys.path.insert(0, str(HERE))
    import build  # noqa: E402

    for split, names in build.SPLITS.items():
        rebuilt = [item for name in names for item in build.build_history(name, quiet=True)]
        if rebuilt != splits[split]:
            problems.append(f"{split}.json is out of date with src/: run build.py")
        for name in names:
            for file, text in build.exports(name).items():
                path = build.EXPORTS / name / file
                if not path.is_file() or path.read_text(encoding="utf-8") != text:
                    problems.append(f"exports/{name}/{file} is out of date with src/: run build.py")

    if problems:
        print("\n".join(problems))
        sys.exit(f"{len(problems)} problem(s)")

    columns = [*TYPES, "abstention"]
    print(f"{'split':<6}{'hist':>5}" + "".join(f"{c:>17}" for c in columns) + f"{'total':>7}")
    for split, data in splits.items():
        print(
            f"{split:<6}{len({history_of(it) for it in data}):>5}"
            + "".join(f"{mixes[split][c]:>17}" for c in columns)
            + f"{len(data):>7}"
        )
    chars = sum(len(t["content"]) for items in histories.values() for s in items[0]["haystack_sessions"] for t in s)
    print(
        f"{len(all_items)} questions, {len(histories)} histories, "
        f"{sum(len(items[0]['haystack_sessions']) for items in histories.values())} sessions, "
        f"{chars:,} characters of dialogue"
    )
    print("ok")


if __name__ == "__main__":
    main()
