"""Counts, sums, the value now and the value before, worked out by code from what the model lists.

For a question of one of :data:`~localmem.answer.question.KINDS` the answer call is replaced by
one listing call (:mod:`localmem.prompts.tally`), read at ask time from the question's evidence,
so it works on a store made by the default ingest (no ``--extract llm``); the model only
lists, and code:

- **count, sum** ("how many", "how often", "how much in total"): one entry per thing with the
  item that tells it. Entries naming the same thing are one (:func:`same_thing`); a thing's
  status is its latest entry's, so what was later sold, returned, stolen or cancelled is taken
  out; what belongs to someone else is not counted. The count, or the sum of the amounts in
  one unit, is computed here, and the answer lists what it counted with dates, and what it
  left out and why ("2: the Dawes Galaxy (7 January 2024), …; not counted: the Carrera (gone,
  17 April 2024)").
- **current, before** ("where do I work now?", "… before my current job?"): every value an item
  gives, with the item. The values are read in time order (the evidence's); a value in a
  message a correction replaced (``correct``) is left out, and in a user's chat with an
  assistant the user's own words outrank the assistant's restatement of them. The answer is the
  latest value with the day it was first said and the one before it ("Leipzig (since 4 March
  2023; before that Lisbon)"), or, for "before", the value before the latest; for "at" ("where
  did I live in March?"), the latest value said by the end of the time the question names.

When the model lists nothing the question is answered by the usual answer call instead (the
caller's fallback), so a question wrongly routed here costs one listing call more, not a
wrong answer. How it is worked out is kept in :attr:`Answer.details` ("tally").
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any, Sequence

from ..models.structured import complete_structured
from ..prompts import tally as prompt
from ..text.times import day_text
from ..text.words import content_words, stem
from ..types import Hit
from .question import AT, BEFORE, COUNT, CURRENT, SUM

# The few words an answer composed here says, in the languages the answer stage supports.
_WORDS = {
    "en": {"until": "until", "then": "then", "since": "since", "before": "before that", "not": "not counted", "gone": "gone", "cancelled": "cancelled", "other": "someone else's"},
    "de": {"until": "bis", "then": "dann", "since": "seit", "before": "davor", "not": "nicht gezählt", "gone": "weg", "cancelled": "abgesagt", "other": "von jemand anderem"},
    "es": {"until": "hasta", "then": "luego", "since": "desde", "before": "antes", "not": "no contado", "gone": "ya no", "cancelled": "cancelado", "other": "de otra persona"},
    "fr": {"until": "jusqu'au", "then": "puis", "since": "depuis", "before": "avant", "not": "non compté", "gone": "plus là", "cancelled": "annulé", "other": "de quelqu'un d'autre"},
    "pt": {"until": "até", "then": "depois", "since": "desde", "before": "antes", "not": "não contado", "gone": "já não", "cancelled": "cancelado", "other": "de outra pessoa"},
    "zh": {"until": "直到", "then": "之后", "since": "自", "before": "之前", "not": "未计入", "gone": "已不在", "cancelled": "已取消", "other": "别人的"},
    "ja": {"until": "まで", "then": "その後", "since": "以降", "before": "以前", "not": "数えず", "gone": "もうない", "cancelled": "中止", "other": "他の人の"},
}  # fmt: skip


def words(language: str) -> dict[str, str]:
    """The words of a composed answer in ``language`` (English when it has none)."""
    return _WORDS.get(language, _WORDS["en"])


@dataclass
class Entry:
    """One thing (or value) the model listed: the evidence item ``n`` (1-based) that tells it."""

    n: int
    what: str
    hit: Hit
    status: str = "counts"
    amount: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "what": self.what,
            "status": self.status,
            "amount": self.amount,
            "day": self.hit.day.isoformat() if self.hit.day else None,
            "id": self.hit.id,
        }


def _stems(text: str) -> set[str]:
    return {stem(w) for w in content_words(text)} or {text.strip().lower()}


def same_thing(a: str, b: str) -> bool:
    """Whether two listed names name one thing: one's content words (stemmed) hold the other's
    ("the Carrera" and "Carrera hybrid"), or they share most of them."""
    sa, sb = _stems(a), _stems(b)
    shared = len(sa & sb)
    return bool(shared) and (sa <= sb or sb <= sa or 2 * shared > min(len(sa), len(sb)) + 1)


def _entries(data: dict[str, Any], key: str, evidence: Sequence[Hit]) -> list[Entry]:
    out = []
    for raw in data.get(key, []):
        n = raw.get("n", 0)
        text = " ".join(str(raw.get("what") or raw.get("value") or "").split())
        if 1 <= n <= len(evidence) and text:
            out.append(Entry(n, text, evidence[n - 1], raw.get("status", "counts"), str(raw.get("amount", "")).strip()))
    return out


def call(llm: Any, messages: list[dict[str, str]], kind: str) -> tuple[Any, dict[str, Any] | None]:
    """The listing call for ``kind``: its :class:`~localmem.models.structured.Structured`
    result and data (``None``: no valid reply)."""
    schema = prompt.COUNT_SCHEMA if kind in (COUNT, SUM) else prompt.VALUES_SCHEMA
    result = complete_structured(llm, messages, schema, prompt.MAX_TOKENS)
    return result, result.data


def system(kind: str) -> str:
    """The listing prompt's instructions for a question of ``kind``."""
    return prompt.COUNT_SYSTEM if kind in (COUNT, SUM) else prompt.VALUES_SYSTEM


@dataclass
class Worked:
    """A composed answer: its text, the items it rests on (1-based) and how it was worked out."""

    answer: str
    supports: list[int]
    details: dict[str, Any]


def work_out(
    kind: str,
    data: dict[str, Any],
    evidence: Sequence[Hit],
    language: str,
    user: str | None,
    until: dt.date | None = None,
) -> Worked | None:
    """The answer to a question of ``kind`` from the model's listing ``data`` over
    ``evidence`` (as numbered in the prompt); ``user``: the user's speaker label in a chat
    with an assistant; ``until``: the last day of the time the question names, for "at" and
    for a count or sum of a time that has ended.
    ``None``: nothing was listed (the caller answers as usual)."""
    if kind in (COUNT, SUM):
        listed = _entries(data, "entries", evidence)
        if until is not None:  # a count as of a time that has ended: what had been said by then
            listed = [e for e in listed if e.hit.day is not None and e.hit.day <= until]
        return _tally(kind, listed, language)
    entries = _entries(data, "values", evidence)
    if kind == AT:
        if until is None:
            return None
        # The value then: what had been said by the end of the time asked about.
        entries = [e for e in entries if e.hit.day is not None and e.hit.day <= until]
    return _latest(kind, entries, language, user)


# -- count and sum ------------------------------------------------------------------------


def _when(hit: Hit) -> str:
    return day_text(hit.day) if hit.day else "date unknown"


def _things(entries: Sequence[Entry]) -> list[list[Entry]]:
    """Entries grouped by the thing they name, each group in time order, groups in the order
    their thing was first told."""
    groups: list[list[Entry]] = []
    for entry in sorted(entries, key=lambda e: (e.hit.time or "", e.n)):
        group = next((g for g in groups if any(same_thing(entry.what, e.what) for e in g)), None)
        if group is None:
            groups.append([entry])
        else:
            group.append(entry)
    return groups


_AMOUNT = re.compile(r"(?P<pre>[£$€¥₹]|US\$|R\$)?\s*(?P<num>\d[\d,]*(?:\.\d+)?)\s*(?P<post>[A-Za-z%€£]+)?")
_NUMBER_WORDS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty".split()
    )
}


def amount(text: str) -> tuple[float, str] | None:
    """An amount as the model gave it ("£95", "110 km", "$2,250", "three") as (number, unit)."""
    text = text.strip()
    if text.lower() in _NUMBER_WORDS:
        return float(_NUMBER_WORDS[text.lower()]), ""
    found = _AMOUNT.search(text)
    if not found:
        return None
    number = float(found.group("num").replace(",", ""))
    return number, (found.group("pre") or "") + "|" + (found.group("post") or "").lower()


def _shown(number: float, unit: str) -> str:
    pre, _, post = unit.partition("|")
    value = f"{number:,.2f}".rstrip("0").rstrip(".") if number != int(number) else f"{int(number):,}"
    return f"{pre}{value}{' ' + post if post else ''}"


def _tally(kind: str, entries: list[Entry], language: str) -> Worked | None:
    if not entries:
        return None
    say = words(language)
    counted, left = [], []
    for group in _things(entries):
        last = group[-1]
        (counted if last.status == "counts" else left).append((group, last))
    listed = [
        {"what": g[0].what, "status": last.status, "day": g[0].hit.day.isoformat() if g[0].hit.day else None,
         "amount": next((e.amount for e in reversed(g) if e.amount), ""), "ids": [e.hit.id for e in g]}
        for g, last in counted + left
    ]  # fmt: skip
    details: dict[str, Any] = {"kind": kind, "entries": [e.to_dict() for e in entries], "things": listed}
    supports = sorted({e.n for g, _ in counted for e in g} | {last.n for _, last in left})
    not_counted = [f"{g[0].what} ({say.get(last.status, last.status)}, {_when(last.hit)})" for g, last in left]
    tail = f"; {say['not']}: {', '.join(not_counted)}" if not_counted else ""
    if kind == SUM:
        amounts = [(g, amount(next((e.amount for e in reversed(g) if e.amount), ""))) for g, _ in counted]
        known = [(g, a) for g, a in amounts if a is not None]
        units = {a[1] for _, a in known}
        if not known or len(units) != 1:
            return None  # nothing to add up, or amounts in different units: the model answers
        unit = units.pop()
        total = sum(a[0] for _, a in known)
        parts = " + ".join(f"{_shown(a[0], unit)} ({g[0].what}, {_when(g[0].hit)})" for g, a in known)
        details["arithmetic"] = f"{' + '.join(_shown(a[0], unit) for _, a in known)} = {_shown(total, unit)}"
        details["total"] = total
        return Worked(f"{_shown(total, unit)}: {parts}{tail}", supports, details)
    things = ", ".join(f"{g[0].what} ({_when(g[0].hit)})" for g, _ in counted)
    details["count"] = len(counted)
    return Worked(f"{len(counted)}{': ' + things if things else ''}{tail}", supports, details)


# -- current and before ----------------------------------------------------------------------


def _latest(kind: str, entries: list[Entry], language: str, user: str | None) -> Worked | None:
    # What a correction replaced is no longer true (correct m:ID): its values are not read.
    entries = [e for e in entries if not e.hit.superseded_by]
    if not entries:
        return None
    entries.sort(key=lambda e: (e.hit.time or "", e.n))
    if user is not None:
        # The user's own words outrank the assistant's restatement of them (the assistant may
        # misquote): on a day the user stated a value, the assistant's others that day are not read.
        said = {e.hit.day for e in entries if e.hit.speaker == user}
        entries = [e for e in entries if e.hit.speaker == user or e.hit.day not in said]
    runs: list[list[Entry]] = []  # consecutive entries naming one value
    for entry in entries:
        if runs and same_thing(entry.what, runs[-1][0].what):
            runs[-1].append(entry)
        else:
            runs.append([entry])
    say = words(language)
    details: dict[str, Any] = {
        "kind": kind,
        "entries": [e.to_dict() for e in entries],
        "values": [{"value": r[0].what, "since": r[0].hit.day.isoformat() if r[0].hit.day else None} for r in runs],
    }
    latest, earlier = runs[-1], runs[:-1]
    if kind == BEFORE:
        if not earlier:
            return None  # no change in the evidence: the model answers
        before = earlier[-1]
        text = f"{before[-1].what} ({say['until']} {_when(latest[0].hit)}; {say['then']} {latest[0].what})"
        return Worked(text, sorted({e.n for e in before} | {latest[0].n}), details)
    value = latest[-1].what  # as said most recently
    if kind == AT:
        return Worked(f"{value} ({_when(latest[-1].hit)})", sorted({e.n for e in latest}), details)
    if not earlier:
        return Worked(value, sorted({e.n for e in latest}), details)
    previous = earlier[-1]
    text = f"{value} ({say['since']} {_when(latest[0].hit)}; {say['before']} {previous[-1].what})"
    return Worked(text, sorted({latest[0].n, latest[-1].n, previous[-1].n}), details)


KINDS_ANSWERED = (COUNT, SUM, CURRENT, BEFORE, AT)
