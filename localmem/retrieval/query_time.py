"""The time a query names, as a date range, by rules (no LLM): the temporal channel's input.

"in June 2023", "last spring", "the week before Christmas 2022", "between March and May",
"before/after/since X", "two years ago", "on 8 May" and the relative phrases of
:func:`localmem.times.resolve_phrase` become a :class:`Range` relative to ``now`` (by
default the latest message time of the namespace). Month or season names without a year
mean the most recent one up to ``now``: questions about memory look back.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from ..text.time_words import to_english
from ..text.times import _MONTHS, DAY_MONTH, Span, day_and_month, find_time_phrases, resolve_phrase

EARLIEST = dt.date(1, 1, 1)
LATEST = dt.date(9999, 12, 31)

_MONTH = "|".join(sorted((m for m in _MONTHS if len(m) > 3 or m == "may"), key=len, reverse=True))
_SEASONS = {"spring": (3, 5), "summer": (6, 8), "autumn": (9, 11), "fall": (9, 11), "winter": (12, 2)}
_SEASON = "|".join(_SEASONS)
_HOLIDAY = (
    r"christmas(?: eve| day)?|new year'?s?(?: eve| day)?|easter|thanksgiving|halloween|"
    r"valentine'?s(?: day)?|independence day|the fourth of july|july 4th"
)


@dataclass(frozen=True)
class Range:
    """Inclusive dates; an open end is :data:`EARLIEST` or :data:`LATEST`."""

    start: dt.date
    end: dt.date
    phrase: str

    def contains(self, start: dt.date | None, end: dt.date | None = None) -> bool:
        """Whether a unit's time (``start``..``end``) overlaps the range."""
        if start is None:
            return False
        return start <= self.end and (end or start) >= self.start


def _easter(year: int) -> dt.date:
    """Gregorian Easter Sunday (anonymous Gregorian algorithm)."""
    a, b, c = year % 19, year // 100, year % 100
    d, e = b // 4, b % 4
    f = (b + 8) // 25
    g = (b - f + 1) // 3
    h = (19 * a + b - d - g + 15) % 30
    i, k = c // 4, c % 4
    l_ = (32 + 2 * e + 2 * i - h - k) % 7
    m = (a + 11 * h + 22 * l_) // 451
    month = (h + l_ - 7 * m + 114) // 31
    day = (h + l_ - 7 * m + 114) % 31 + 1
    return dt.date(year, month, day)


def _holiday(name: str, year: int) -> dt.date:
    name = name.lower()
    if "eve" in name:
        return _holiday(name.replace(" eve", ""), year + ("new year" in name)) - dt.timedelta(days=1)
    if name.startswith("christmas"):
        return dt.date(year, 12, 25)
    if name.startswith("new year"):
        return dt.date(year, 1, 1)
    if name == "easter":
        return _easter(year)
    if name == "thanksgiving":  # the fourth Thursday of November (US)
        first = dt.date(year, 11, 1)
        return first + dt.timedelta(days=(3 - first.weekday()) % 7 + 21)
    if name == "halloween":
        return dt.date(year, 10, 31)
    if name.startswith("valentine"):
        return dt.date(year, 2, 14)
    return dt.date(year, 7, 4)  # independence day / the fourth of july


def _month_range(year: int, month: int) -> tuple[dt.date, dt.date]:
    end = dt.date(year + (month == 12), month % 12 + 1, 1) - dt.timedelta(days=1)
    return dt.date(year, month, 1), end


def _season(name: str, year: int | None, which: str | None, now: dt.date) -> tuple[dt.date, dt.date]:
    first, last = _SEASONS[name.lower()]
    if year is None:
        # "last summer": the most recent one that has ended; "this summer": this year's.
        year = now.year
        start_month_passed = (now.month >= first) if first != 12 else now.month == 12
        if which == "last" or (which is None and not start_month_passed):
            year -= 1
        if which == "last" and start_month_passed and first != 12 and now.month > last:
            year += 1  # this year's has ended already
        if which == "next":
            year = now.year + (start_month_passed or first == 12 and now.month == 12)
    start = dt.date(year, first, 1)
    end_year = year + 1 if first == 12 else year
    return start, _month_range(end_year, last)[1]


def _point(text: str, now: dt.date) -> tuple[dt.date, dt.date] | None:
    """One time expression (no "before"/"between"): its start and end, or None."""
    text = text.strip().lower().removeprefix("the ")
    m = re.fullmatch(rf"(?:(week|day|month) (before|after) )?({_HOLIDAY})(?:,? (\d{{4}}))?", text)
    if m:
        unit, side, name, year = m.groups()
        day = _holiday(name, int(year) if year else now.year)
        if not year and day > now:
            day = _holiday(name, now.year - 1)
        if not unit:
            return day, day
        days = {"day": 1, "week": 7, "month": 30}[unit]
        if side == "before":
            return day - dt.timedelta(days=days), day - dt.timedelta(days=1)
        return day + dt.timedelta(days=1), day + dt.timedelta(days=days)
    m = re.fullmatch(rf"(?:(last|this|next|past) )?({_SEASON})(?: (?:of )?(\d{{4}}))?", text)
    if m:
        which, name, year = m.groups()
        return _season(name, int(year) if year else None, which, now)
    if re.fullmatch(DAY_MONTH, text, re.I):
        date = day_and_month(text, now, nearest=False)
        return (date, date) if date else None
    m = re.fullmatch(rf"({_MONTH}),? (\d{{4}})", text)
    if m:
        return _month_range(int(m.group(2)), _MONTHS[m.group(1)])
    m = re.fullmatch(rf"({_MONTH})", text)
    if m and text != "may":
        month = _MONTHS[m.group(1)]
        return _month_range(now.year if month <= now.month else now.year - 1, month)
    m = re.fullmatch(r"(\d{4})", text)
    if m and 1900 <= int(text) <= 2100:
        return dt.date(int(text), 1, 1), dt.date(int(text), 12, 31)
    span: Span | None = resolve_phrase(text, now)
    return (span.start, span.end) if span else None


# Expressions tried in this order; each group(1) is handed to _point.
_POINT = (
    rf"(?:the )?(?:(?:week|day|month) (?:before|after) )?(?:{_HOLIDAY})(?:,? \d{{4}})?"
    rf"|(?:the )?(?:(?:last|this|next|past) )?(?:{_SEASON})(?: (?:of )?\d{{4}})?"
    rf"|{DAY_MONTH}"
    rf"|(?:{_MONTH})(?:,? \d{{4}})?"
    r"|\d{4}"
)
_BETWEEN = re.compile(rf"\b(?:between|from) ({_POINT}) (?:and|to|until) ({_POINT})\b", re.I)
_SIDED = re.compile(rf"(?<!week )(?<!day )(?<!month )\b(before|after|since|until|by) ({_POINT})\b", re.I)
_ANY = re.compile(rf"\b(?:in |on |during )?({_POINT})\b", re.I)


def parse_query_time(query: str, now: dt.date) -> Range | None:
    """The date range ``query`` names, or ``None`` when it names no time. The time words of
    German, Spanish, French, Portuguese, Chinese and Japanese are read too ("gestern", "la
    semana pasada", "上周": :mod:`localmem.text.time_words`)."""
    query = to_english(query)
    m = _BETWEEN.search(query)
    if m:
        first, second = _point(m.group(1), now), _point(m.group(2), now)
        if first and second and second[1] < first[0] and not re.search(r"\d{4}", m.group(2)):
            # "between November and February": the second one after the first
            for year in (first[0].year, first[0].year + 1):
                second = _point(f"{m.group(2)} {year}", now) or second
                if second[1] >= first[0]:
                    break
        if first and second:
            return Range(first[0], second[1], m.group(0))
    m = _SIDED.search(query)
    if m:
        point = _point(m.group(2), now)
        if point:
            side = m.group(1).lower()
            if side == "before":
                return Range(EARLIEST, point[0] - dt.timedelta(days=1), m.group(0))
            if side in ("until", "by"):
                return Range(EARLIEST, point[1], m.group(0))
            if side == "since":
                return Range(point[0], now, m.group(0))
            return Range(point[1] + dt.timedelta(days=1), LATEST, m.group(0))
    for m in _ANY.finditer(query):
        phrase = m.group(1)
        bare_year = phrase.isdigit()
        if phrase.lower() == "may" or (bare_year and not m.group(0).lower().startswith(("in ", "during "))):
            continue  # "I may", or a number that need not be a year
        point = _point(phrase, now)
        if point:
            return Range(point[0], point[1], m.group(0).strip())
    found = find_time_phrases(query, now)
    if found:
        phrase, span = found[0]
        return Range(span.start, span.end, phrase)
    return None


# A question about how things are now: a word that says so, or the present tense in the first
# person ("where do I work?", "what's my job title?"). "Before", "used to" and the like ask
# about an earlier state, and a time the question names is the temporal channel's business.
_NOW_WORDS = re.compile(
    r"\b(?:now|currently|current|these days|nowadays|at the moment|at present|"
    r"any ?more|still|lately|latest|most recent)\b",
    re.I,
)
_PRESENT_FIRST_PERSON = re.compile(
    r"\b(?:do|does|am|are|is)(?: \w+)? (?:i|we|my|our)\b"
    r"|\b(?:what|where|who|which|how)(?:'s| is| are) (?:my|our)\b"
    r"|\b(?:i|we) (?:have|own|live|work|drive|drink|eat|use)\b",
    re.I,
)
_EARLIER = re.compile(
    r"\b(?:before|previous(?:ly)?|used to|formerly|former|earlier|prior|first|originally|"
    r"ago|did|was|were|had)\b",
    re.I,
)


def asks_present(query: str, now: dt.date | None = None) -> bool:
    """Whether ``query`` asks how things are now (its answer is the newest statement on the
    subject), by rules: "now", "currently", "these days"..., or the first-person present tense;
    not when it asks about an earlier state ("before", "used to", the past tense) or names a
    time of its own."""
    if _EARLIER.search(query) and not _NOW_WORDS.search(query):
        return False
    if re.search(r"\b(?:before|previous(?:ly)?|used to|formerly|former|prior)\b", query, re.I):
        return False
    if now is not None and parse_query_time(query, now) is not None:
        return False
    return bool(_NOW_WORDS.search(query) or _PRESENT_FIRST_PERSON.search(query))


_ASKS_WHEN = re.compile(
    r"^\s*(?:when\b|since when\b|how long ago\b|(?:in |on )?(?:what|which) (?:year|month|day|date|week|time)\b)"
    # German, Spanish, French, Portuguese ("wann", "¿cuándo", "quand", "quando"); Chinese, Japanese
    r"|^\s*(?:seit )?wann\b|^\s*¿?\s*(?:desde )?cu[áa]ndo\b|^\s*(?:depuis )?quand\b|^\s*(?:desde )?quando\b"
    r"|什么时候|何时|哪天|いつ",
    re.I,
)


def asks_when(query: str) -> bool:
    """Whether ``query`` asks for a time ("When did ...", "In what year ...", "How long ago
    ..."): its answer is a message that says when, or the date of the one that tells of it."""
    return bool(_ASKS_WHEN.search(query))
