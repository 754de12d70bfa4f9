"""Timestamps as they appear in chat exports, normalised to ISO 8601 text.

Stored times are ``YYYY-MM-DDTHH:MM:SS`` (naive, as the source gave them) or
with a UTC offset when the source had one; ISO text sorts chronologically.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from ..config import zone  # noqa: F401 (times are read in the zone a setting names)

# "1:56 pm on 8 May, 2023" (LoCoMo session stamps)
_LOCOMO = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*([ap]\.?m\.?)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$", re.I)
# Spelled out rather than strftime("%B"), which follows the process locale.
MONTH_NAMES = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_MONTHS = {m.lower(): i for i, m in enumerate(MONTH_NAMES, 1)}
_MONTHS.update({name[:3]: num for name, num in list(_MONTHS.items())})
_MONTHS["sept"] = 9

_FORMATS = (
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%d %H:%M",
    "%Y-%m-%d",
    "%Y/%m/%d %H:%M:%S",
    "%Y/%m/%d %H:%M",
    "%Y/%m/%d",
    "%d %B %Y %H:%M",
    "%d %B %Y",
    "%d %b %Y %H:%M",
    "%d %b %Y",
    "%B %d, %Y %H:%M",
    "%B %d, %Y",
    "%b %d, %Y %H:%M",
    "%b %d, %Y",
    "%d %B, %Y",
    "%B %d %Y",
    "%d.%m.%Y %H:%M",
    "%d.%m.%Y",
    "%Y-%m-%d %I:%M %p",
    "%B %d, %Y %I:%M %p",
    "%d %B %Y %I:%M %p",
    "%A, %B %d, %Y",
    "%A, %d %B %Y",
    "%a, %d %b %Y %H:%M:%S",
    "%Y/%m/%d (%a) %H:%M",
)


def to_iso(value: dt.datetime) -> str:
    value = value.replace(microsecond=0)
    return value.isoformat()


def in_zone(iso: str | None, tz: str | None) -> str | None:
    """``iso`` moved to the zone ``tz`` names when it carries an offset; a time without one
    (a local wall-clock time) is returned as it is. ``tz=None`` changes nothing."""
    if iso is None or tz is None or len(iso) <= 19:
        return iso
    value = dt.datetime.fromisoformat(iso)
    if value.tzinfo is None:
        return iso
    return to_iso(value.astimezone(zone(tz)))


def parse_timestamp(value: object, tz: str | None = None) -> str | None:
    """Parse a timestamp (ISO text, common date formats, LoCoMo stamps, epoch seconds/ms).

    Returns ISO 8601 text, ``None`` for empty input; raises ``ValueError`` when
    the value is not a time. Epoch seconds are UTC; with ``tz`` (a :func:`zone` name) a
    time that names its offset (epoch, ``Z``, ``+02:00``) is moved to that zone, while a time
    without one stays as written.
    """
    if tz is not None:
        return in_zone(parse_timestamp(value), tz)
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValueError(f"not a time: {value!r}")
    if isinstance(value, (int, float)):
        seconds = value / 1000 if abs(value) > 1e11 else value
        return to_iso(dt.datetime.fromtimestamp(seconds, tz=dt.timezone.utc))
    if not isinstance(value, str):
        raise ValueError(f"not a time: {value!r}")
    text = value.strip()
    match = _LOCOMO.match(text)
    if match:
        hour, minute, ampm, day, month, year = match.groups()
        month_num = _MONTHS.get(month.lower())
        if month_num is None:
            raise ValueError(f"unknown month in {value!r}")
        h = int(hour) % 12 + (12 if ampm.lower().startswith("p") else 0)
        return to_iso(dt.datetime(int(year), month_num, int(day), h, int(minute)))
    iso = text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text
    try:
        return to_iso(dt.datetime.fromisoformat(iso))
    except ValueError:
        pass
    if re.fullmatch(r"\d{9,13}(\.\d+)?", text):
        return parse_timestamp(float(text))
    for fmt in _FORMATS:
        try:
            return to_iso(dt.datetime.strptime(text, fmt))
        except ValueError:
            continue
    raise ValueError(f"not a time: {value!r}")


def day_or_time(value: Any, what: str) -> str | None:
    """A day (``YYYY-MM-DD``, kept as a day) or a time (ISO text) from a date, a datetime or text."""
    from ..errors import LocalmemError

    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):
        return to_iso(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, str) and len(value.strip()) == 10:
        try:
            return dt.date.fromisoformat(value.strip()).isoformat()
        except ValueError:
            pass
    try:
        parsed = parse_timestamp(value)
    except (ValueError, OverflowError, OSError) as exc:
        raise LocalmemError(f"{what}: {exc}", "give a date like 2023-05-08 or a time like 2023-05-08T18:30") from exc
    if parsed is None:
        raise LocalmemError(f"{what} needs a date or a time")
    return parsed


def looks_like_timestamp(text: str) -> str | None:
    """ISO text if the whole of ``text`` (without brackets/rules) is a time, else ``None``."""
    stripped = text.strip().strip("[]()#=-*_ ").strip()
    if not stripped or len(stripped) > 60 or not re.search(r"\d", stripped):
        return None
    try:
        return parse_timestamp(stripped)
    except ValueError:
        return None


# -- relative time phrases ------------------------------------------------------------

_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "couple of": 2,
    "few": 3,
    "a few": 3,
    "several": 3,
}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_WEEKDAY_ABBR = {
    "mon": "monday",
    "tue": "tuesday",
    "tues": "tuesday",
    "wed": "wednesday",
    "thu": "thursday",
    "thur": "thursday",
    "thurs": "thursday",
    "fri": "friday",
    "sat": "saturday",
    "sun": "sunday",
}


@dataclass(frozen=True)
class Span:
    """A resolved time: ``start``..``end`` (inclusive dates) at a precision."""

    start: dt.date
    end: dt.date
    precision: str  # "day", "week", "month" or "year"

    def iso(self) -> str:
        if self.precision == "year":
            return f"{self.start.year:04d}"
        if self.precision == "month":
            return f"{self.start.year:04d}-{self.start.month:02d}"
        return self.start.isoformat()


def _month_span(year: int, month: int) -> Span:
    last = dt.date(year + (month == 12), month % 12 + 1, 1) - dt.timedelta(days=1)
    return Span(dt.date(year, month, 1), last, "month")


def _shift_month(day: dt.date, months: int) -> tuple[int, int]:
    index = day.year * 12 + day.month - 1 + months
    return index // 12, index % 12 + 1


def resolve_phrase(phrase: str, ref: dt.date) -> Span | None:
    """Resolve a time phrase ("yesterday", "last week", "two years ago", "in June 2022",
    "last Friday", "2023-05-07") against the reference date ``ref``; ``None`` if not understood.

    Weeks run Monday–Sunday. "last <weekday>" is that weekday of the previous week's run
    up to yesterday (the most recent one before ``ref``).
    """
    text = re.sub(r"\s+", " ", phrase.lower().strip(" .,!?"))
    text = text.removeprefix("the ")
    if not text:
        return None
    one_day = dt.timedelta(days=1)
    fixed = {
        "today": 0,
        "tonight": 0,
        "this morning": 0,
        "this afternoon": 0,
        "this evening": 0,
        "yesterday": -1,
        "last night": -1,
        "day before yesterday": -2,
        "tomorrow": 1,
        "day after tomorrow": 2,
    }
    if text in fixed:
        day = ref + fixed[text] * one_day
        return Span(day, day, "day")
    monday = ref - dt.timedelta(days=ref.weekday())
    weeks = {
        "this week": 0,
        "last week": -1,
        "past week": -1,
        "previous week": -1,
        "next week": 1,
        "this weekend": 0,
        "last weekend": -1,
        "next weekend": 1,
    }
    if text in weeks:
        start = monday + dt.timedelta(weeks=weeks[text])
        if "weekend" in text:
            start += dt.timedelta(days=5)
            return Span(start, start + one_day, "week")
        return Span(start, start + dt.timedelta(days=6), "week")
    months = {"this month": 0, "last month": -1, "previous month": -1, "next month": 1}
    if text in months:
        return _month_span(*_shift_month(ref, months[text]))
    years = {"this year": 0, "last year": -1, "previous year": -1, "next year": 1}
    if text in years:
        year = ref.year + years[text]
        return Span(dt.date(year, 1, 1), dt.date(year, 12, 31), "year")
    match = re.fullmatch(r"(last|this|next|on|past)? ?(" + "|".join(_WEEKDAYS + list(_WEEKDAY_ABBR)) + r")", text)
    if match:
        day_name = _WEEKDAY_ABBR.get(match.group(2), match.group(2))
        which, target = match.group(1), _WEEKDAYS.index(day_name)
        delta = (ref.weekday() - target) % 7
        if which == "next":
            day = ref + dt.timedelta(days=(target - ref.weekday()) % 7 or 7)
        elif which == "this" and target >= ref.weekday():
            day = ref + dt.timedelta(days=target - ref.weekday())
        else:
            day = ref - dt.timedelta(days=delta or 7)
        return Span(day, day, "day")
    match = re.fullmatch(
        r"(a couple of|a few|couple of|few|several|an|a|one|two|three|four|five|"
        r"six|seven|eight|nine|ten|\d+) (day|weekend|week|month|year)s? "
        r"(ago|later|from now)",
        text,
    )
    if match:
        count = _NUMBERS.get(match.group(1).replace("a couple of", "couple of"))
        count = count if count is not None else int(match.group(1))
        sign = -1 if match.group(3) == "ago" else 1
        unit = match.group(2)
        if unit == "weekend":
            saturday = monday + dt.timedelta(days=5) + sign * count * dt.timedelta(weeks=1)
            return Span(saturday, saturday + one_day, "week")
        if unit == "year":
            year = ref.year + sign * count
            return Span(dt.date(year, 1, 1), dt.date(year, 12, 31), "year")
        if unit == "month":
            return _month_span(*_shift_month(ref, sign * count))
        day = ref + sign * count * _UNIT_DAYS[unit] * one_day
        if unit == "week":
            start = day - dt.timedelta(days=day.weekday())
            return Span(start, start + dt.timedelta(days=6), "week")
        return Span(day, day, "day")
    day = day_and_month(text.removeprefix("on "), ref, nearest=True)
    if day is not None:
        return Span(day, day, "day")
    match = re.fullmatch(
        r"(?:in |on |during )?(?:(early|mid|late) )?("
        + "|".join(m for m in _MONTHS if len(m) > 3 or m in ("may",))
        + r")(?:,? (\d{4}))?",
        text,
    )
    if match:
        month = _MONTHS[match.group(2)]
        if match.group(3):
            year = int(match.group(3))
        else:  # the most recent such month, this one included
            year = ref.year if month <= ref.month else ref.year - 1
        return _month_span(year, month)
    match = re.fullmatch(r"(?:in |during )?(\d{4})", text)
    if match and 1900 <= int(match.group(1)) <= 2100:
        year = int(match.group(1))
        return Span(dt.date(year, 1, 1), dt.date(year, 12, 31), "year")
    return parse_date_value(text)


def parse_date_value(value: str) -> Span | None:
    """A date as a model might write it: ``YYYY-MM-DD``, ``YYYY-MM``, ``YYYY`` or a full date."""
    text = value.strip()
    if re.fullmatch(r"\d{4}", text):
        return Span(dt.date(int(text), 1, 1), dt.date(int(text), 12, 31), "year")
    match = re.fullmatch(r"(\d{4})-(\d{1,2})", text)
    if match and 1 <= int(match.group(2)) <= 12:
        return _month_span(int(match.group(1)), int(match.group(2)))
    try:
        iso = parse_timestamp(text)
    except (ValueError, OverflowError, OSError):
        return None
    if iso is None:
        return None
    day = dt.date.fromisoformat(iso[:10])
    return Span(day, day, "day")


_COUNT = r"(?:a couple of|a few|couple of|several|an|a|one|two|three|four|five|six|seven|eight|nine|ten|\d+)"
_DAY_NAMES = "|".join(_WEEKDAYS + sorted(_WEEKDAY_ABBR, key=len, reverse=True))
_MONTH_NAMES = "|".join(m for m in _MONTHS if len(m) > 3 or m == "may")
# A day written with its month, either way round, a weekday and a year optional: "15 April",
# "Monday 15 April", "the 3rd of May", "April 15th, 2024", "Thursday, February 15".
DAY_MONTH = (
    rf"(?:(?:{_DAY_NAMES}),? )?(?:the )?\d{{1,2}}(?:st|nd|rd|th)? (?:of )?(?:{_MONTH_NAMES})(?:,? \d{{4}})?"
    rf"|(?:(?:{_DAY_NAMES}),? )?(?:{_MONTH_NAMES}) \d{{1,2}}(?:st|nd|rd|th)?\b(?:,? \d{{4}})?"
)
_DAY_MONTH_PARTS = re.compile(
    rf"(?:(?:{_DAY_NAMES}),? )?(?:the )?(?:(\d{{1,2}})(?:st|nd|rd|th)? (?:of )?({_MONTH_NAMES})"
    rf"|({_MONTH_NAMES}) (\d{{1,2}})(?:st|nd|rd|th)?),? ?(\d{{4}})?",
    re.IGNORECASE,
)


def day_and_month(text: str, ref: dt.date, nearest: bool) -> dt.date | None:
    """The day ``text`` names when it is a day with its month (:data:`DAY_MONTH`), else ``None``.

    Without a year: ``nearest`` takes the year that puts the day nearest ``ref``, as a message
    means it ("I start on 15 April", said on 26 March 2024, is 15 April 2024; "I started on
    15 April", said on 18 April, too); otherwise the most recent one up to ``ref``, as a
    question about the past means it.
    """
    match = _DAY_MONTH_PARTS.fullmatch(text.strip().lower())
    if not match:
        return None
    day_s, month_s = (match.group(1), match.group(2)) if match.group(1) else (match.group(4), match.group(3))
    month, day = _MONTHS[month_s], int(day_s)
    years = [int(match.group(5))] if match.group(5) else [ref.year - 1, ref.year, ref.year + 1]
    candidates = []
    for year in years:
        try:
            candidates.append(dt.date(year, month, day))
        except ValueError:
            continue  # 31 April, or 29 February outside a leap year
    if not candidates:
        return None
    if len(candidates) == 1:
        return candidates[0]
    if nearest:
        return min(candidates, key=lambda d: (abs((d - ref).days), d > ref))
    past = [d for d in candidates if d <= ref]
    return max(past) if past else min(candidates)


_PHRASE = re.compile(
    r"\b(?:"
    r"(?:the )?day (?:before yesterday|after tomorrow)|yesterday|today|tonight|tomorrow|last night"
    r"|(?:this|last|past|previous|next) (?:week(?:end)?|month|year)"
    rf"|(?:last|this|next) (?:{_DAY_NAMES})\b"
    rf"|on (?:{_DAY_NAMES})\b(?!,? (?:the )?\d|,? (?:{_MONTH_NAMES})\b)"
    rf"|{_COUNT} (?:day|weekend|week|month|year)s? (?:ago|later|from now)"
    rf"|{DAY_MONTH}"
    rf"|(?:in |during )?(?:early |mid |late )?(?:{_MONTH_NAMES})(?:,? \d{{4}})?"
    r"|in \d{4}"
    r")\b",
    re.IGNORECASE,
)


def _the_verb_may(phrase: str) -> bool:
    return phrase.lower() == "may" or phrase.startswith("may ")


# A sentence about what is still to come: "on Thursday" in it is the coming Thursday.
_AHEAD = re.compile(
    r"\b(?:will|won't|shall|going to|gonna|plan(?:ning)? to|hoping to|about to|can't wait)\b"
    r"|'ll\b|\b(?:i'm|i am|we're|we are|he's|she's|they're) \w+ing\b",
    re.IGNORECASE,
)
_SENTENCE_BOUNDS = re.compile(r"[.!?\n]")


def _meant(match: re.Match[str], text: str) -> str:
    """The phrase ``match`` found, as :func:`resolve_phrase` should read it: "on Thursday" is the
    most recent Thursday, or the coming one ("next Thursday") in a sentence about what is still
    to come ("We're flying out on Thursday")."""
    phrase = match.group(0)
    if not phrase.lower().startswith("on "):
        return phrase
    start = max((m.end() for m in _SENTENCE_BOUNDS.finditer(text, 0, match.start())), default=0)
    end = next((m.start() for m in _SENTENCE_BOUNDS.finditer(text, match.end())), len(text))
    return "next " + phrase[3:] if _AHEAD.search(text[start:end]) else phrase


def find_time_phrases(text: str, ref: dt.date) -> list[tuple[str, Span]]:
    """The time phrases in ``text`` that :func:`resolve_phrase` understands, with their spans.

    "may" is only a month when a year or "in" goes with it ("I may go" is not May), or a day
    after it when it is written "May" ("I may 3D-print it" is not 3 May). "on Thursday" is the
    most recent one, or the coming one in a sentence about the future (:func:`_meant`).
    """
    found = []
    for match in _PHRASE.finditer(text):
        phrase = match.group(0)
        if _the_verb_may(phrase):
            continue
        span = resolve_phrase(_meant(match, text), ref)
        if span is not None:
            found.append((phrase, span))
    return found


# A day of the month without its month: "on the 3rd", "Sunday the 12th", "the 24th to the 28th".
# Only after a word that makes it a date (or before "to the 28th"): "the 3rd attempt" is not one.
_DAY_OF_MONTH = re.compile(
    rf"\b(?:(?:on|from|until|till|by|since|to) (?:(?:{_DAY_NAMES}),? )?the (?P<a>\d{{1,2}})(?:st|nd|rd|th)"
    rf"|(?P<wd>{_DAY_NAMES}),? the (?P<b>\d{{1,2}})(?:st|nd|rd|th)"
    rf"|the (?P<c>\d{{1,2}})(?:st|nd|rd|th)(?= (?:to|and|until|till|-|–) the \d))\b"
    rf"(?! (?:of )?(?:{_MONTH_NAMES})\b)",
    re.IGNORECASE,
)


def days_of_month(text: str, ref: dt.date) -> list[tuple[str, Span]]:
    """The days of the month ``text`` names without their month ("Sunday the 12th", said on
    Tuesday 14 May 2024: 12 May 2024), each the day of that number nearest ``ref`` in its
    month, the month before or the month after; of those, one falling on the weekday named when
    one is. :func:`find_time_phrases` leaves these out (so the evidence shown is unchanged);
    the date rules read them as an event's day."""
    found = []
    for match in _DAY_OF_MONTH.finditer(text):
        number = int(match.group("a") or match.group("b") or match.group("c"))
        candidates = []
        for months in (-1, 0, 1):
            year, month = _shift_month(ref, months)
            try:
                candidates.append(dt.date(year, month, number))
            except ValueError:
                continue  # the 31st of a shorter month
        named = match.group("wd") or next(
            (w for w in _WEEKDAYS + list(_WEEKDAY_ABBR) if re.search(rf"\b{w}\b", match.group(0), re.I)), None
        )
        if named:
            weekday = _WEEKDAYS.index(_WEEKDAY_ABBR.get(named.lower(), named.lower()))
            candidates = [d for d in candidates if d.weekday() == weekday] or candidates
        start = max((m.end() for m in _SENTENCE_BOUNDS.finditer(text, 0, match.start())), default=0)
        end = next((m.start() for m in _SENTENCE_BOUNDS.finditer(text, match.end())), len(text))
        sentence = text[start:end]
        if _AHEAD.search(sentence):  # "I'm flying out on the 3rd": the coming one
            candidates = [d for d in candidates if d >= ref] or candidates
        elif _PAST.search(sentence):  # "I turned 34 on the 3rd": the last one
            candidates = [d for d in candidates if d <= ref] or candidates
        if candidates:
            day = min(candidates, key=lambda d: (abs((d - ref).days), d > ref))
            found.append((match.group(0), Span(day, day, "day")))
    return found


# A sentence about what has happened: "on the 3rd" in it is the last one.
_PAST = re.compile(r"\b(?:was|were|did|had|went|ran|got|came|took|made|left|\w+ed)\b", re.IGNORECASE)


def day_text(day: dt.date) -> str:
    """``2023-05-07`` → ``7 May 2023``: how answers and evidence write a date."""
    return f"{day.day} {day.strftime('%B')} {day.year}"


_RELATIVE_DAY = re.compile(rf"(?:(last|this|next|on|past) )?({_DAY_NAMES})", re.IGNORECASE)
_COUNTED = re.compile(rf"({_COUNT}) (week|weekend)s? (ago|later|from now)", re.IGNORECASE)


def anchored(phrase: str, ref: dt.date) -> str | None:
    """What a relative time ``phrase`` said on ``ref`` means, written against that date as
    precisely as the phrase is: "yesterday" → "7 May 2023", "last week" → "the week before
    9 June 2023", "last Friday" → "the Friday before 15 July 2023", "two weekends ago" →
    "two weekends before 17 July 2023", "last month" → "September 2023", "last year" →
    "2022". Month names and years ("in June", "in 2022") are not relative: ``None``, as for
    anything :func:`resolve_phrase` does not understand.
    """
    text = re.sub(r"\s+", " ", phrase.lower().strip(" .,!?")).removeprefix("the ")
    span = resolve_phrase(text, ref)
    if span is None or re.fullmatch(
        rf"(?:in |during |on )?(?:early |mid |late )?(?:{_MONTH_NAMES})(?:,? \d{{4}})?"
        r"|(?:in |during )?\d{4}",
        text,
    ):
        return None
    if _DAY_MONTH_PARTS.fullmatch(text.removeprefix("on ")):
        # A day with its month is written as it is, with the year it means when none is said.
        return None if re.search(r"\d{4}", text) else day_text(span.start)
    weekday = _RELATIVE_DAY.fullmatch(text)
    if weekday:
        name = span.start.strftime("%A")
        return f"the {name} {'after' if span.start > ref else 'before'} {day_text(ref)}"
    if span.precision == "day":
        return day_text(span.start)
    if span.precision == "week":
        counted = _COUNTED.fullmatch(text)
        if counted:
            side = "before" if counted.group(3) == "ago" else "after"
            count, unit = counted.group(1), counted.group(2)
            unit += "" if count in ("a", "an", "one", "1") else "s"
            return f"{count} {unit} {side} {day_text(ref)}"
        kind = "weekend" if "weekend" in text else "week"
        side = "before" if span.end < ref else "after" if span.start > ref else "of"
        return f"the {kind} {side} {day_text(ref)}"
    if span.precision == "month":
        return f"{span.start.strftime('%B')} {span.start.year}"
    return str(span.start.year)


def with_dates(text: str, ref: dt.date) -> str:
    """``text`` (said on ``ref``) with each relative time in it followed by what it means, in
    brackets: "I went to a support group yesterday [7 May 2023]"."""
    out, last = [], 0
    for match in _PHRASE.finditer(text):
        if _the_verb_may(match.group(0)):
            continue
        meaning = anchored(_meant(match, text), ref)
        if meaning:
            out += [text[last : match.end()], f" [{meaning}]"]
            last = match.end()
    return "".join(out) + text[last:]


_BRACKETED = re.compile(r"\s*\[([^\[\]]+)\]")


def absolute(answer: str, said_on: dt.date | None) -> str:
    """``answer`` with its relative times given as what they mean: one followed by its meaning
    in brackets (copied from evidence :func:`with_dates` wrote) becomes the meaning,
    "yesterday [7 May 2023]" → "7 May 2023"; an answer that is only a relative time is read
    against ``said_on``, the day of the message it rests on: "last week" → "the week before
    9 June 2023". A count back ("ten years ago") answers "how long ago" and stays."""
    out, last = [], 0
    for match in _PHRASE.finditer(answer):
        bracket = _BRACKETED.match(answer, match.end())
        if bracket:
            out += [answer[last : match.start()], bracket.group(1).strip()]
            last = bracket.end()
    text = "".join(out) + answer[last:]
    bare = text.strip(" .!")
    if said_on is not None and _PHRASE.fullmatch(bare) and not re.search(r"(?:ago|later|from now)$", bare, re.I):
        return anchored(bare, said_on) or text
    return text


# -- counting between dates (what "how many days/weeks/months ago" means) ---------------------


def _last_day_of_month(day: dt.date) -> bool:
    return (day + dt.timedelta(days=1)).month != day.month


def months_between(start: dt.date, end: dt.date) -> int:
    """Whole calendar months from ``start`` to ``end`` (``end`` ≥ ``start``): 31 January →
    29 February is one month (the end of a shorter month completes it), 15 March → 14 April
    is none."""
    if end < start:
        return -months_between(end, start)
    months = (end.year - start.year) * 12 + end.month - start.month
    if end.day < start.day and not _last_day_of_month(end):
        months -= 1
    return months


def years_between(start: dt.date, end: dt.date) -> int:
    """Whole years from ``start`` to ``end``: 29 February 2020 → 28 February 2021 is one
    (the month's last day completes it), as an age counts birthdays."""
    return months_between(start, end) // 12 if end >= start else -years_between(end, start)


def weeks_between(start: dt.date, end: dt.date) -> int:
    """Whole weeks from ``start`` to ``end`` (20 days is 2 weeks: people count full weeks)."""
    days = (end - start).days
    return days // 7 if days >= 0 else -((-days) // 7)


def count_between(start: dt.date, end: dt.date, unit: str) -> int:
    """Whole ``unit``s ("days", "weeks", "months", "years") from ``start`` to ``end``."""
    if unit == "days":
        return (end - start).days
    if unit == "weeks":
        return weeks_between(start, end)
    if unit == "months":
        return months_between(start, end)
    if unit == "years":
        return years_between(start, end)
    raise ValueError(f"unknown unit {unit!r}")
