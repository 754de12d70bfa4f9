"""Build the time-and-owner eval set (LongMemEval JSON, plus real export files) from src/.

    python3 evals/timeq/build.py     # writes dev.json (t1, t2), test.json (t3, t4) and exports/

Sources (plain text, written by hand), the layout of ``evals/assistant`` with three additions:

* ``src/tN.txt``: one history. ``@question_date``, ``@owner`` (the user's own name) and, for a
  history that mixes sources, ``@other`` (the other person of its WhatsApp chat) head the file.
  ``=== <session_id> | <YYYY/MM/DD HH:MM> [| whatsapp]`` opens a session (the weekday is
  written by the builder; a session is an assistant chat unless marked ``whatsapp``).
  ``>>> user {tag, tag}`` / ``>>> assistant {tag}`` opens an assistant-chat turn; in a WhatsApp
  session the marker names the sender, ``>>> Daniel Ruiz {tag}``, and every line of the turn is
  one WhatsApp message. Tags name the evidence a turn holds; they are not written out.
* ``src/tN_q.txt``: its questions. ``### <id> <type>`` with type one of ``knowledge-update``,
  ``count-sum``, ``as-of``, ``date-arithmetic`` (an abstention, id ending ``_abs``, takes the type
  it imitates), then ``Q:``, ``A:``, ``E:`` (evidence tags; empty for an abstention), optional
  ``D:`` and ``C:`` checks of the date arithmetic: ``C: days 2024/05/12 2024/07/15 = 64``,
  ``weeks``, ``age <born> <on> = N`` and ``first <a> <b> = a|b`` (which date is earlier; the
  answer must then hold the first event's date, day first), and ``C: sum 640 180 95 = 915``.

In the JSON a WhatsApp turn is the sender's messages of one stretch, with ``role`` "user" for the
owner and "assistant" for the other person (LongMemEval knows no other roles) and an extra
``speaker`` key with the name. ``exports/tN/`` holds the same history as a user's exports: an
Android WhatsApp ``WhatsApp Chat with <other>.txt`` and a ChatGPT ``conversations.json`` (times
in UTC), for ``localmem ingest`` as a user would run it. Python 3.11 stdlib only.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE / "src"
EXPORTS = HERE / "exports"
SPLITS = {"dev": ["t1", "t2"], "test": ["t3", "t4"]}
TYPES = {"knowledge-update", "count-sum", "as-of", "date-arithmetic"}
DATE_RE = re.compile(r"^(\d{4})/(\d{2})/(\d{2})(?: \((\w{3})\))? (\d{2}):(\d{2})$")
MONTHS = {  # month names a "first" check accepts in an answer, by language
    "en": "January February March April May June July August September October November December".split(),
    "de": "Januar Februar März April Mai Juni Juli August September Oktober November Dezember".split(),
    "es": "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre".split(),
}


def parse_date(text: str, where: str) -> dt.datetime:
    m = DATE_RE.match(text.strip())
    if not m:
        sys.exit(f"{where}: bad date {text!r}")
    y, mo, d, wd, h, mi = m.groups()
    when = dt.datetime(int(y), int(mo), int(d), int(h), int(mi))
    if wd and when.strftime("%a") != wd:
        sys.exit(f"{where}: {text!r} is a {when.strftime('%a')}, not a {wd}")
    return when


def stamp(when: dt.datetime) -> str:
    """LongMemEval's date format, weekday included: ``2024/05/14 (Tue) 19:02``."""
    return when.strftime("%Y/%m/%d (%a) %H:%M")


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
            sid, date, *kind = [part.strip() for part in line[3:].split("|")]
            source = kind[0] if kind else "chat"
            if source not in ("chat", "whatsapp"):
                sys.exit(f"{where}: unknown source {source!r}")
            sessions.append({"id": sid, "when": parse_date(date, where), "source": source, "turns": []})
            turn = None
        elif line.startswith(">>>"):
            m = re.match(r"^>>> ([^{]+?)\s*(?:\{([^}]*)\})?\s*$", line)
            if not m or not sessions:
                sys.exit(f"{where}: bad turn marker {line!r}")
            who = m.group(1)
            if sessions[-1]["source"] == "chat":
                if who not in ("user", "assistant"):
                    sys.exit(f"{where}: a chat turn is 'user' or 'assistant', not {who!r}")
                role = who
            else:
                if who not in (meta.get("owner"), meta.get("other")):
                    sys.exit(f"{where}: a WhatsApp turn is by @owner or @other, not {who!r}")
                role = "user" if who == meta["owner"] else "assistant"
            tags = {t.strip() for t in (m.group(2) or "").split(",") if t.strip()}
            turn = {"role": role, "speaker": who, "tags": tags, "lines": []}
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


def _day(text: str) -> dt.date:
    return dt.date(*map(int, text.split("/")))


def run_check(check: str, answer: str, where: str) -> None:
    """Recompute one stated figure and require it in the answer."""
    if m := re.match(r"^sum ([\d. ]+) = ([\d.]+)$", check):
        got = sum(float(x) for x in m.group(1).split())
        if abs(got - float(m.group(2))) > 1e-9:
            sys.exit(f"{where}: {check} computes {got:g}")
        if not re.search(rf"(?<![\d.,]){re.escape(m.group(2))}(?![\d,])", answer.replace(",", "")):
            sys.exit(f"{where}: answer {answer!r} does not contain {m.group(2)}")
        return
    if m := re.match(r"^first (\S+) (\S+) = (a|b)$", check):
        a, b = _day(m.group(1)), _day(m.group(2))
        first = a if a < b else b
        if (a < b) != (m.group(3) == "a") or a == b:
            sys.exit(f"{where}: {check} is wrong")
        written = [
            rf"\b{first.day}\.? (?:de )?{names[first.month - 1]}(?: de)? {first.year}" for names in MONTHS.values()
        ]
        if not any(re.search(w, answer) for w in written):
            sys.exit(f"{where}: answer {answer!r} does not give the first date ({first})")
        return
    m = re.match(r"^(days|weeks|age) (\S+) (\S+) = (\d+)$", check)
    if not m:
        sys.exit(f"{where}: bad check {check!r}")
    kind, a, b, expected = m.group(1), _day(m.group(2)), _day(m.group(3)), int(m.group(4))
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


def json_turn(turn: dict, tags: set[str], source: str) -> dict:
    out: dict = {"role": turn["role"], "content": turn["content"]}
    if source == "whatsapp":
        out["speaker"] = turn["speaker"]
    if turn["tags"] & tags:
        out["has_answer"] = True
    return out


def build_history(name: str, quiet: bool = False) -> list[dict]:
    meta, sessions = read_history(name)
    all_tags = {t for s in sessions for turn in s["turns"] for t in turn["tags"]}
    used: set[str] = set()
    out = []
    for q in read_questions(name):
        where = f"src/{name}_q.txt:{q['line']}"
        if q["id"].endswith("_abs"):
            q.setdefault("E", "")
        if q["type"] not in TYPES or not all(k in q for k in "QAE"):
            sys.exit(f"{where}: needs a known type and Q:, A:, E:")
        tags = {t.strip() for t in q["E"].split(",") if t.strip()}
        if unknown := tags - all_tags:
            sys.exit(f"{where}: unknown tags {sorted(unknown)}")
        if q["id"].endswith("_abs") == bool(tags):
            sys.exit(f"{where}: abstention items (and only they) have no evidence tags")
        used |= tags
        qdate = stamp(parse_date(q.get("D") or meta["question_date"], where))
        if parse_date(qdate, where) <= sessions[-1]["when"]:
            sys.exit(f"{where}: question date must follow the last session")
        for check in q["checks"]:
            run_check(check, q["A"], where)
        out.append(
            {
                "question_id": f"timeq-{name}-{q['id']}",
                "question_type": q["type"],
                "question": q["Q"],
                "answer": q["A"],
                "question_date": qdate,
                "haystack_session_ids": [s["id"] for s in sessions],
                "haystack_dates": [stamp(s["when"]) for s in sessions],
                "haystack_sessions": [[json_turn(t, tags, s["source"]) for t in s["turns"]] for s in sessions],
                "answer_session_ids": [s["id"] for s in sessions if any(t["tags"] & tags for t in s["turns"])],
            }
        )
    if (unused := all_tags - used) and not quiet:
        print(f"{name}: note, tags never asked about: {sorted(unused)}")
    return out


def exports(name: str) -> dict[str, str]:
    """A mixed history as the files its owner would export: {file name: text}; {} for others."""
    meta, sessions = read_history(name)
    if "other" not in meta:
        return {}
    lines: list[str] = []
    conversations: list[dict] = []
    for s in sessions:
        if s["source"] == "whatsapp":
            k = 0
            for t in s["turns"]:
                for text in t["content"].splitlines():
                    if text.strip():
                        when = s["when"] + dt.timedelta(minutes=k)
                        lines.append(f"{when:%d/%m/%Y, %H:%M} - {t['speaker']}: {text.strip()}")
                        k += 1
            continue
        start = s["when"].replace(tzinfo=dt.timezone.utc).timestamp()
        mapping: dict = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
        parent = "root"
        for k, t in enumerate(s["turns"]):
            node = f"{s['id']}-m{k + 1}"
            mapping[parent]["children"].append(node)
            mapping[node] = {
                "id": node,
                "message": {
                    "id": node,
                    "author": {"role": t["role"], "name": None, "metadata": {}},
                    "create_time": start + 120 * k,
                    "content": {"content_type": "text", "parts": [t["content"]]},
                    "status": "finished_successfully",
                    "recipient": "all",
                    "metadata": {},
                },
                "parent": parent,
                "children": [],
            }
            parent = node
        first_line = s["turns"][0]["content"].split("\n", 1)[0]
        conversations.append(
            {
                "title": " ".join(first_line.split()[:6]).rstrip(".,!?:;"),
                "create_time": start,
                "update_time": start + 120 * (len(s["turns"]) - 1),
                "mapping": mapping,
                "current_node": parent,
                "conversation_id": f"timeq-{s['id']}",
                "id": f"timeq-{s['id']}",
            }
        )
    chat = "12/01/2024, 09:00 - Messages and calls are end-to-end encrypted. No one outside of this chat, not even WhatsApp, can read or listen to them.\n"
    return {
        f"WhatsApp Chat with {meta['other']}.txt": chat + "\n".join(lines) + "\n",
        "conversations.json": json.dumps(conversations, ensure_ascii=False, indent=1) + "\n",
    }


def main() -> None:
    for split, names in SPLITS.items():
        items = [item for name in names for item in build_history(name)]
        (HERE / f"{split}.json").write_text(json.dumps(items, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"{split}.json: {len(items)} items")
        for name in names:
            for file, text in exports(name).items():
                (EXPORTS / name).mkdir(parents=True, exist_ok=True)
                (EXPORTS / name / file).write_text(text, encoding="utf-8")
                print(f"exports/{name}/{file}")


if __name__ == "__main__":
    main()
