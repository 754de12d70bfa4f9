"""Check the assistant eval set: structure, abstention rule, evidence, dates; print the counts.

    python3 evals/assistant/check.py

Python 3.11 stdlib only. Exits non-zero on the first list of problems. Also checks that
dev.json and test.json are what build.py makes from src/ (so the JSON is never hand-edited).
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
TYPES = [
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "knowledge-update",
    "temporal-reasoning",
]
DATE_RE = re.compile(r"^(\d{4})/(\d{2})/(\d{2}) \((Mon|Tue|Wed|Thu|Fri|Sat|Sun)\) (\d{2}):(\d{2})$")
LONG = (2000, 5000)

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
    if None not in moments and moments != sorted(moments):
        bad(where, "haystack_dates are not in order")
    asked = when(item["question_date"], f"{where} question_date")
    if asked and None not in moments and asked <= max(moments):
        bad(where, "question_date is not after the last session")
    answer_ids = item["answer_session_ids"]
    if not isinstance(answer_ids, list) or not set(answer_ids) <= set(ids):
        bad(where, "answer_session_ids is not a subset of haystack_session_ids")
        answer_ids = []
    evidence_sessions = set()
    for si, session in enumerate(sessions):
        if not isinstance(session, list) or not 3 <= len(session) <= 12:
            bad(where, f"session {ids[si]} has {len(session) if isinstance(session, list) else '?'} turns (want 3-12)")
            continue
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
            if ti and turn["role"] == session[ti - 1].get("role"):
                bad(tw, "two turns in a row from the same role")
            if "has_answer" in turn:
                if turn["has_answer"] is not True:
                    bad(tw, "has_answer, when present, is true")
                evidence_sessions.add(ids[si])
        if session and session[0].get("role") != "user":
            bad(where, f"session {ids[si]} does not open with the user")
    abstention = qid.endswith("_abs")
    if abstention:
        if evidence_sessions or answer_ids:
            bad(where, "an abstention item has no evidence (no has_answer, empty answer_session_ids)")
        if "not in the history" not in item["answer"]:
            bad(where, "an abstention answer says the information is not in the history")
    else:
        if not evidence_sessions:
            bad(where, "no turn with has_answer: true")
        if evidence_sessions != set(answer_ids):
            bad(
                where,
                f"answer_session_ids {answer_ids} do not match the has_answer sessions {sorted(evidence_sessions)}",
            )
        if "not in the history" in item["answer"]:
            bad(where, "a non-abstention answer says 'not in the history'")
    if "?" not in item["question"]:
        bad(where, "a question ends with a question mark")


def history_of(item: dict) -> str:
    return item["question_id"].split("-")[1]


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
        for it in items[1:]:
            if any(it[k] != first[k] for k in ("haystack_session_ids", "haystack_dates")) or [
                [{"role": t["role"], "content": t["content"]} for t in s] for s in it["haystack_sessions"]
            ] != [[{"role": t["role"], "content": t["content"]} for t in s] for s in first["haystack_sessions"]]:
                problems.append(f"{it['question_id']}: haystack differs from the rest of history {name}")
    split_of = {history_of(it): split for split, data in splits.items() for it in data}
    if {h for h, s in split_of.items() if s == "dev"} & {h for h, s in split_of.items() if s == "test"}:
        problems.append("a history appears in both splits")
    if len(histories) < 4:
        problems.append(f"{len(histories)} histories (want at least 4)")
    if len(all_items) < 80:
        problems.append(f"{len(all_items)} questions (want at least 80)")

    # The JSON must be exactly what build.py makes from src/.
    sys.path.insert(0, str(HERE))
    import build  # noqa: E402

    for split, names in build.SPLITS.items():
        rebuilt = [item for name in names for item in build.build_history(name, quiet=True)]
        if rebuilt != splits[split]:
            problems.append(f"{split}.json is out of date with src/: run build.py")

    if problems:
        print("\n".join(problems))
        sys.exit(f"{len(problems)} problem(s)")

    # Report.
    long_turns = 0
    chars = 0
    for items in histories.values():
        for session in items[0]["haystack_sessions"]:
            for turn in session:
                chars += len(turn["content"])
                long_turns += LONG[0] <= len(turn["content"]) <= LONG[1]
    columns = [t for t in TYPES if any(it["question_type"] == t for it in all_items)]
    short = {
        "single-session-user": "ss-user",
        "single-session-assistant": "ss-asst",
        "single-session-preference": "ss-pref",
        "multi-session": "multi",
        "knowledge-update": "k-update",
        "temporal-reasoning": "temporal",
    }
    print(f"{'split':<6}{'hist':>5}" + "".join(f"{short[t]:>10}" for t in columns) + f"{'(abs)':>8}{'total':>7}")
    for split, data in splits.items():
        counts = collections.Counter(it["question_type"] for it in data if not it["question_id"].endswith("_abs"))
        n_abs = sum(it["question_id"].endswith("_abs") for it in data)
        print(
            f"{split:<6}{len({history_of(it) for it in data}):>5}"
            + "".join(f"{counts[t]:>10}" for t in columns)
            + f"{n_abs:>8}{len(data):>7}"
        )
    n_abs = sum(q.endswith("_abs") for q in qids)
    print(
        f"{len(all_items)} questions ({n_abs} abstention, {100 * n_abs / len(all_items):.0f}%), "
        f"{len(histories)} histories, "
        f"{sum(len(items[0]['haystack_sessions']) for items in histories.values())} sessions, "
        f"{chars:,} characters of dialogue, {long_turns} turns of {LONG[0]:,}-{LONG[1]:,} characters"
    )
    if long_turns < 8:
        sys.exit("want at least 8 long turns")
    print("ok")


if __name__ == "__main__":
    main()
