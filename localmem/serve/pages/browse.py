"""Reading the store in time: a conversation (a window of it, or around one message), the
timeline per month or week, and one period's conversations and episodes."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from .. import svg
from ..calls import Lanes
from ..markup import clip, e, plural, span, url
from ..params import whole_number
from .layout import layout
from .pieces import window_html

WINDOW = 20  # messages on a conversation page


async def conversation(request: Request, lanes: Lanes) -> Response:
    p = request.query_params
    mem = lanes.reader.memory
    n = whole_number(p.get("n"), "n", WINDOW, 1, 200)
    if p.get("around"):
        window = await lanes.reader(mem.browse.context, p["around"], n)
        focus = [p["around"]]
    else:
        name = p.get("name") or ""
        first = whole_number(p.get("first"), "first", 0, -(2**31), 2**31)
        window = await lanes.reader(mem.browse.conversation, name, first, first + 2 * n)
        focus = []
    name, first, last = window["conversation"], window["first"], window["last"]
    nav = []
    if window["more_before"]:
        nav.append(f'<a href="{e(url("/conversation", name=name, first=first - 2 * n, n=n))}">earlier</a>')
    if window["more_after"]:
        nav.append(f'<a href="{e(url("/conversation", name=name, first=last + 1, n=n))}">later</a>')
    body = (
        f'<p class="conv">Conversation <strong>{e(name)}</strong></p>'
        f'<nav class="pager" aria-label="Conversation">{" · ".join(nav)}</nav>'
        f"{window_html(window, focus, more_link=False)}"
        f'<nav class="pager" aria-label="Conversation, bottom">{" · ".join(nav)}</nav>'
    )
    return layout(request, f"Conversation: {name}", body, "/conversations")


async def timeline(request: Request, lanes: Lanes) -> Response:
    period = request.query_params.get("period") or "month"
    speaker = request.query_params.get("speaker") or None
    periods = await lanes.reader(lanes.reader.memory.browse.timeline, period, speaker=speaker)
    other = "week" if period == "month" else "month"
    total = sum(p["messages"] for p in periods)
    whose = f' said by <strong>{e(speaker)}</strong> (<a href="/timeline">everyone</a>)' if speaker else ""
    rows = "".join(
        f'<tr><td><a href="{e(url("/period", start=p["start"], end=p["end"]))}">{e(p["start"])}</a></td>'
        f'<td class="n">{p["messages"]:,}</td><td class="n">{p["episodes"]:,}</td></tr>'
        for p in periods
    )
    body = (
        f"<p>{plural(total, 'message')}{whose} over {plural(len(periods), e(period))}. Per <strong>{e(period)}</strong> · "
        f'<a href="{e(url("/timeline", period=other, speaker=speaker))}">per {other}</a>. Click a bar (or focus it with '
        f"<kbd>Tab</kbd>, move with <kbd>←</kbd> <kbd>→</kbd>) to open that {e(period)}.</p>"
        f'<p class="legend"><span class="key messages"></span> messages <span class="key episodes"></span> episodes</p>'
        f'<div class="chart" id="chart">{svg.timeline(periods, period)}</div>'
        f'<p id="chart-info" class="live" aria-live="polite"></p>'
        f"<details><summary>As a table</summary><table><thead><tr><th scope=col>{e(period.title())} from</th>"
        f"<th scope=col>Messages</th><th scope=col>Episodes</th></tr></thead><tbody>{rows}</tbody></table></details>"
    )
    return layout(request, f"Timeline of {speaker}" if speaker else "Timeline", body, "/timeline")


def episode_html(ep: dict[str, Any]) -> str:
    """An episode in a list: its title and narrative when the LLM wrote them, else (built
    without the LLM) its time span and first lines."""
    title = ep.get("title") or f"Episode in {ep.get('conversation') or 'a conversation'}"
    head = (
        f'<a href="/memory/{e(ep["id"])}">{e(title)}</a> '
        f'<span class="note">{e(span(ep.get("start"), ep.get("end")))} · {plural(ep["messages"], "message")}</span>'
    )
    if ep.get("narrative"):
        return f'<li class="item">{head}<p class="text">{e(ep["narrative"])}</p></li>'
    opening = ep.get("opening") or []
    lines = "".join(
        f'<li><span class="speaker">{e(m["speaker"])}</span>: {e(clip(m["text"], 160))}</li>' for m in opening
    )
    more = ep["messages"] - len(opening)
    rest = f"and {plural(more, 'more message')} · " if more > 0 else ""
    return (
        f'<li class="item episode">{head}<ul class="opening">{lines}</ul>'
        f'<p class="note">{rest}no summary yet (built without the LLM)</p></li>'
    )


async def period_page(request: Request, lanes: Lanes) -> Response:
    p = request.query_params
    found = await lanes.reader(lanes.reader.memory.browse.period, p.get("start") or "", p.get("end") or "")
    convs = "".join(
        f'<li class="item"><a href="{e(url("/conversation", around=c["first_id"], n=WINDOW))}">{e(c["conversation"])}</a> '
        f'<span class="note">{plural(c["messages"], "message")}, {e(span(c["first"], c["last"]))}</span></li>'
        for c in found["conversations"]
    )
    eps = "".join(episode_html(ep) for ep in found["episodes"])
    body = (
        f'<p><a href="/timeline">back to the timeline</a></p>'
        f'<h2 id="convs">Conversations ({len(found["conversations"])})</h2>'
        + (f'<ul class="list" aria-labelledby="convs">{convs}</ul>' if convs else "<p>None.</p>")
        + f'<h2 id="eps">Episodes ({len(found["episodes"])})</h2>'
        + (f'<ul class="list" aria-labelledby="eps">{eps}</ul>' if eps else "<p>None.</p>")
    )
    return layout(request, period_title(found["start"], found["end"]), body, "/timeline")


def period_title(start: str, end: str) -> str:
    """ "January 2024" for a month, "The week of 8 January 2024" for a week, else the first and
    the last day ([start, end) holds the days before ``end``)."""
    import datetime as dt

    try:
        first, after = dt.date.fromisoformat(start[:10]), dt.date.fromisoformat(end[:10])
    except ValueError:
        return f"From {start} to {end}"
    following = dt.date(first.year + first.month // 12, first.month % 12 + 1, 1)
    if first.day == 1 and after == following:
        return svg.month_name(start)
    if (after - first).days == 7 and first.weekday() == 0:
        return f"The week of {first.day} {svg.FULL_MONTHS[first.month - 1]} {first.year}"
    last = after - dt.timedelta(days=1)
    return f"{first.isoformat()}" if last <= first else f"{first.isoformat()} to {last.isoformat()}"
