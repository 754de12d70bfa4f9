"""Timestamps as they appear in chat exports, normalised to ISO 8601 text.

Stored times are ``YYYY-MM-DDTHH:MM:SS`` (naive, as the source gave them) or
with a UTC offset when the source had one; ISO text sorts chronologically.
"""

from __future__ import annotations

import datetime as dt
import re

# "1:56 pm on 8 May, 2023" (LoCoMo session stamps)
_LOCOMO = re.compile(
    r"^\s*(\d{1,2}):(\d{2})\s*([ap]\.?m\.?)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$", re.I)
_MONTHS = {m.lower(): i for i, m in enumerate(
    ["January", "February", "March", "April", "May", "June", "July", "August", "September",
     "October", "November", "December"], 1)}
_MONTHS.update({name[:3]: num for name, num in list(_MONTHS.items())})
_MONTHS["sept"] = 9

_FORMATS = (
    "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d", "%Y/%m/%d %H:%M:%S", "%Y/%m/%d %H:%M",
    "%Y/%m/%d", "%d %B %Y %H:%M", "%d %B %Y", "%d %b %Y %H:%M", "%d %b %Y", "%B %d, %Y %H:%M",
    "%B %d, %Y", "%b %d, %Y %H:%M", "%b %d, %Y", "%d %B, %Y", "%B %d %Y", "%d.%m.%Y %H:%M",
    "%d.%m.%Y", "%Y-%m-%d %I:%M %p", "%B %d, %Y %I:%M %p", "%d %B %Y %I:%M %p",
    "%A, %B %d, %Y", "%A, %d %B %Y", "%a, %d %b %Y %H:%M:%S", "%Y/%m/%d (%a) %H:%M",
)


def to_iso(value: dt.datetime) -> str:
    value = value.replace(microsecond=0)
    return value.isoformat()


def parse_timestamp(value: object) -> str | None:
    """Parse a timestamp (ISO text, common date formats, LoCoMo stamps, epoch seconds/ms).

    Returns ISO 8601 text, ``None`` for empty input; raises ``ValueError`` when
    the value is not a time.
    """
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


def looks_like_timestamp(text: str) -> str | None:
    """ISO text if the whole of ``text`` (without brackets/rules) is a time, else ``None``."""
    stripped = text.strip().strip("[]()#=-*_ ").strip()
    if not stripped or len(stripped) > 60 or not re.search(r"\d", stripped):
        return None
    try:
        return parse_timestamp(stripped)
    except ValueError:
        return None
