"""Charts drawn by the server as SVG: no script is needed to see them, and each bar is a link."""

from __future__ import annotations

from html import escape
from typing import Any, Sequence
from urllib.parse import urlencode

BAR = 14  # px per period
GAP = 3
HEIGHT = 180
AXIS = 34  # room below the bars for the labels


def timeline(periods: Sequence[dict[str, Any]], period: str) -> str:
    """Messages per period as bars (episodes as a darker bar inside each), every bar a link to
    the period's page; labels under the first bar of each year (and month, when by week)."""
    if not periods:
        return '<p class="empty">Nothing stored yet: import an export on the Curate page.</p>'
    top = max(max(p["messages"] for p in periods), max(p["episodes"] for p in periods), 1)
    bar = max(BAR, min(48, 860 // len(periods) - GAP))  # wider bars when there are few
    width = max(len(periods) * (bar + GAP) + GAP, 300)
    parts = [
        f'<svg class="timeline" role="img" aria-labelledby="tl-title" viewBox="0 0 {width} {HEIGHT + AXIS}" '
        f'width="{width}" height="{HEIGHT + AXIS}" xmlns="http://www.w3.org/2000/svg">',
        f'<title id="tl-title">Messages and episodes per {escape(period)}, {len(periods)} periods</title>',
        f'<line x1="0" y1="{HEIGHT}" x2="{width}" y2="{HEIGHT}" class="axis"/>',
    ]
    last_label = ""
    for i, p in enumerate(periods):
        x = GAP + i * (bar + GAP)
        h = max(round(p["messages"] / top * (HEIGHT - 10)), 1 if p["messages"] else 0)  # none: no bar
        eh = max(round(p["episodes"] / top * (HEIGHT - 10)), 1 if p["episodes"] else 0)
        label = f"{_label(p['start'], period)}: {p['messages']} messages, {p['episodes']} episodes"
        href = "/period?" + urlencode({"start": p["start"], "end": p["end"]})
        parts.append(
            f'<a href="{escape(href)}" class="bar" data-start="{escape(p["start"])}" aria-label="{escape(label)}">'
            f"<title>{escape(label)}</title>"
            f'<rect x="{x}" y="0" width="{bar}" height="{HEIGHT}" class="hit"/>'
            f'<rect x="{x}" y="{HEIGHT - h}" width="{bar}" height="{h}" class="messages"/>'
            + (f'<rect x="{x + 3}" y="{HEIGHT - eh}" width="{bar - 6}" height="{eh}" class="episodes"/>' if eh else "")
            + "</a>"
        )
        tick = p["start"][:4] if period == "month" else p["start"][:7]
        if tick != last_label:
            last_label = tick
            text = tick if period == "month" or tick.endswith("-01") or i == 0 else tick[5:]
            parts.append(f'<text x="{x}" y="{HEIGHT + 16}" class="tick">{escape(text)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _label(start: str, period: str) -> str:
    return f"week of {start}" if period == "week" else start[:7]


def sparkline(times: Sequence[str | None], width: int = 360, height: int = 40) -> str:
    """Dots on a line, one per time (ISO text), for a person's episodes."""
    days = sorted(t[:10] for t in times if t)
    if not days:
        return ""
    import datetime as dt

    first, last = dt.date.fromisoformat(days[0]), dt.date.fromisoformat(days[-1])
    span = max((last - first).days, 1)
    dots = "".join(
        f'<circle cx="{6 + (dt.date.fromisoformat(d) - first).days / span * (width - 12):.1f}" '
        f'cy="{height / 2}" r="4" class="dot"><title>{escape(d)}</title></circle>'
        for d in days
    )
    return (
        f'<svg class="spark" role="img" aria-label="{len(days)} episodes from {escape(days[0])} to '
        f'{escape(days[-1])}" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'xmlns="http://www.w3.org/2000/svg"><line x1="0" y1="{height / 2}" x2="{width}" y2="{height / 2}" '
        f'class="axis"/>{dots}</svg>'
    )
