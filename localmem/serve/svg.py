"""Charts drawn by the server as SVG: no script is needed to see them, and each bar is a link."""

from __future__ import annotations

import datetime as dt
import math
from html import escape
from typing import Any, Sequence
from urllib.parse import urlencode

WIDTH = 1000  # the chart's width in its own units: it is drawn at the width of the page
MIN_SLOT = 8  # units per period at the least; more periods than fit make the chart scroll
MAX_BAR = 90  # a few periods do not make bars as wide as the page
TOP = 20  # room above the highest bar for its count
HEIGHT = 170  # the bars' height at most
AXIS = 42  # room below the bars for the month and year labels
LABEL = 34  # units a month label needs ("Sep" at 12 px, and air)
COUNT = 22  # units a count above a bar needs

MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def timeline(periods: Sequence[dict[str, Any]], period: str) -> str:
    """Messages per period as bars (episodes as a darker bar inside each), every bar a link to
    the period's page and labelled with its counts (shown on hover, read by screen readers);
    the count above each bar and the months (or weeks) and years under them where they fit."""
    if not periods:
        return '<p class="empty">Nothing stored yet: import an export on the Curate page.</p>'
    n = len(periods)
    width = max(WIDTH, n * MIN_SLOT)
    slot = width / n
    bar = min(max(slot * 0.78, 2.0), MAX_BAR)
    top = max(max(p["messages"] for p in periods), max(p["episodes"] for p in periods), 1)
    total = TOP + HEIGHT + AXIS
    fixed = f'width="{width}" height="{total}"' if width > WIDTH else 'width="100%"'
    parts = [
        f'<svg class="timeline" role="img" aria-labelledby="tl-title" viewBox="0 0 {width} {total}" '
        f'{fixed} preserveAspectRatio="xMinYMin meet" xmlns="http://www.w3.org/2000/svg">',
        f'<title id="tl-title">Messages and episodes per {escape(period)}, {plural(n, "period")}</title>',
        f'<line x1="0" y1="{TOP + HEIGHT}" x2="{width}" y2="{TOP + HEIGHT}" class="axis"/>',
        f'<line x1="0" y1="{TOP}" x2="{width}" y2="{TOP}" class="grid"/>',
    ]
    every = max(1, math.ceil((2 * LABEL if period == "week" and slot >= 2 * LABEL else LABEL) / slot))
    last_tick = -every  # labels at least `every` periods apart: they never overlap
    for i, p in enumerate(periods):
        x = i * slot + (slot - bar) / 2
        mid = i * slot + slot / 2
        h = max(round(p["messages"] / top * HEIGHT), 1 if p["messages"] else 0)  # none: no bar
        eh = max(round(p["episodes"] / top * HEIGHT), 1 if p["episodes"] else 0)
        start = dt.date.fromisoformat(p["start"])
        label = f"{_label(start, period)}: {plural(p['messages'], 'message')}, {plural(p['episodes'], 'episode')}"
        href = "/period?" + urlencode({"start": p["start"], "end": p["end"]})
        inner = max(bar - 6, 1)
        parts.append(
            f'<a href="{escape(href)}" class="bar" data-start="{escape(p["start"])}" aria-label="{escape(label)}">'
            f"<title>{escape(label)}</title>"
            f'<rect x="{i * slot:.1f}" y="0" width="{slot:.1f}" height="{TOP + HEIGHT}" class="hit"/>'
            f'<rect x="{x:.1f}" y="{TOP + HEIGHT - h}" width="{bar:.1f}" height="{h}" class="messages"/>'
            + (
                f'<rect x="{mid - inner / 2:.1f}" y="{TOP + HEIGHT - eh}" width="{inner:.1f}" height="{eh}" '
                f'class="episodes"/>'
                if eh
                else ""
            )
            + (
                f'<text x="{mid:.1f}" y="{TOP + HEIGHT - h - 5}" class="count">{p["messages"]:,}</text>'
                if p["messages"] and slot >= COUNT
                else ""
            )
            + "</a>"
        )
        before = dt.date.fromisoformat(periods[i - 1]["start"]) if i else None
        tick = _tick(start, period, slot, before)
        if tick and i - last_tick >= every:
            last_tick = i
            parts.append(f'<text x="{mid:.1f}" y="{TOP + HEIGHT + 16}" class="tick">{escape(tick)}</text>')
        if before is None or start.year != before.year:
            parts.append(
                f'<text x="{i * slot + 2:.1f}" y="{TOP + HEIGHT + 34}" class="year">{start.year}</text>'
                f'<line x1="{i * slot:.1f}" y1="{TOP + HEIGHT}" x2="{i * slot:.1f}" y2="{TOP + HEIGHT + 36}" '
                f'class="year-line"/>'
            )
    parts.append("</svg>")
    return "".join(parts)


def _tick(start: dt.date, period: str, slot: float, before: dt.date | None) -> str:
    """The label that may go under a period: its month ("Mar"); for weeks, the day too ("Mar 4")
    when there is room, else the month under the first week of each."""
    if period == "month":
        return MONTHS[start.month - 1]
    if slot >= 2 * LABEL:
        return f"{MONTHS[start.month - 1]} {start.day}"
    return MONTHS[start.month - 1] if before is None or before.month != start.month else ""


FULL_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
               "October", "November", "December")  # fmt: skip


def month_name(start: str) -> str:
    """ "January 2024" for the ISO date of any day of that month."""
    day = dt.date.fromisoformat(start[:10])
    return f"{FULL_MONTHS[day.month - 1]} {day.year}"


def _label(start: dt.date, period: str) -> str:
    if period == "week":
        return f"week of {start.day} {MONTHS[start.month - 1]} {start.year}"
    return f"{MONTHS[start.month - 1]} {start.year}"


def sparkline(times: Sequence[str | None], width: int = 360, height: int = 40) -> str:
    """Dots on a line, one per time (ISO text), for a person's episodes."""
    days = sorted(t[:10] for t in times if t)
    if not days:
        return ""
    first, last = dt.date.fromisoformat(days[0]), dt.date.fromisoformat(days[-1])
    span = max((last - first).days, 1)
    dots = "".join(
        f'<circle cx="{6 + (dt.date.fromisoformat(d) - first).days / span * (width - 12):.1f}" '
        f'cy="{height / 2}" r="4" class="dot"><title>{escape(d)}</title></circle>'
        for d in days
    )
    return (
        f'<svg class="spark" role="img" aria-label="{plural(len(days), "episode")} from {escape(days[0])} to '
        f'{escape(days[-1])}" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'xmlns="http://www.w3.org/2000/svg"><line x1="0" y1="{height / 2}" x2="{width}" y2="{height / 2}" '
        f'class="axis"/>{dots}</svg>'
    )
