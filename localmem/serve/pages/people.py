"""The people: who speaks and what memory knows of whom, and one person's page (what they said
over time, what the LLM's build learnt about them)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ...errors import NotFoundError
from .. import api, svg
from ..calls import Lanes, as_json
from ..markup import day, e, person_link, plural, ref_link, ref_text, url, when
from ..params import whole_number
from .layout import layout


async def people(request: Request, lanes: Lanes) -> Response:
    mem = lanes.reader.memory
    everyone, talkers, owner = await lanes.reader(
        lambda: (api.people_of(mem), mem.browse.speakers(), mem.owner().describe())
    )
    rows = "".join(
        f'<tr><th scope="row"><a href="{person_link(t["speaker"])}">{e(t["speaker"])}</a></th>'
        f'<td class="n">{t["messages"]:,}</td><td>{e(day(t["first"]))}</td><td>{e(day(t["last"]))}</td>'
        f'<td><a href="{e(url("/timeline", speaker=t["speaker"]))}">month by month</a></td></tr>'
        for t in talkers
    )
    speaking = (
        '<h2 id="who">Who speaks</h2><table aria-labelledby="who"><thead><tr><th scope=col>Speaker</th>'
        "<th scope=col>Messages</th><th scope=col>First</th><th scope=col>Last</th><th scope=col>Timeline</th></tr>"
        f"</thead><tbody>{rows}</tbody></table>"
        if rows
        else "<p>No one yet: import an export on the Curate page.</p>"
    )
    items = "".join(
        f'<li class="item"><a href="{person_link(p["name"])}">{e(p["name"])}</a> '
        f'<span class="note">{plural(p["units"], "memory", "memories")}'
        + (f" · also {e(p['aliases'])}" if p.get("aliases") and p["aliases"] != p["name"] else "")
        + "</span></li>"
        for p in everyone
    )
    known = '<h2 id="known-people">What memory knows about people</h2>' + (
        f'<ul class="list people" aria-labelledby="known-people">{items}</ul>'
        if items
        else "<p>Nothing learnt yet. What is known about people (facts, what changed, who they are) is "
        "built with the local LLM (<code>localmem ingest --extract llm</code>, or <code>localmem serve "
        "--extract llm</code>); until then each speaker's page shows what they said.</p>"
    )
    you = f'<p id="owner">You ("I" in questions): {e(owner)} (<code>localmem owner set NAME</code>).</p>'
    return layout(request, "People", you + speaking + known, "/people")


SAID_PAGE = 20  # messages of a speaker on their page


async def person(request: Request, lanes: Lanes) -> Response:
    """What memory knows about a person (with the LLM), and for a speaker what they said, over
    time and the latest first; either alone is enough for a page."""

    name = request.path_params["name"]
    offset = whole_number(request.query_params.get("from"), "from", 0, 0, 10**9)
    mem = lanes.reader.memory

    def load() -> tuple[Any, Any, Any, Any]:
        try:
            prof = as_json(mem.profile(name))
        except NotFoundError:
            prof = None
        said = next((s for s in mem.browse.speakers(10_000) if s.speaker == name), None)
        if said is None:
            return prof, None, [], []
        return (
            prof,
            as_json(said),
            as_json(mem.browse.timeline("month", speaker=name)),
            mem.browse.said_by(name, SAID_PAGE, offset),
        )

    prof, said, months, messages = await lanes.reader(load)
    if prof is None and said is None:
        raise NotFoundError(
            f"no one called {name!r} speaks or is known in namespace '{mem.namespace}'",
            "the People page lists everyone who speaks",
        )
    parts = []
    if said is not None:
        parts.append(
            f'<p class="summary">{e(name)} said {plural(said["messages"], "message")}, '
            f"from {e(day(said['first']))} to {e(day(said['last']))}.</p>"
            f'<h2 id="over-time">Over time</h2><div class="chart" id="chart">{svg.timeline(months, "month")}</div>'
            f'<p id="chart-info" class="live" aria-live="polite"></p>'
        )
        rows = "".join(
            f'<li class="item"><div class="meta"><time datetime="{e(m["time"] or "")}">{e(when(m["time"]))}</time> · '
            f"in {e(m['conversation'])} · {ref_link(m['id'])} · "
            f'<a href="{e(url("/conversation", around=m["id"]))}">in context</a></div>'
            f'<p class="text">{e(m["text"])}</p></li>'
            for m in messages
        )
        pager = []
        if offset:
            pager.append(f'<a href="{person_link(name)}?from={max(offset - SAID_PAGE, 0)}">later</a>')
        if offset + len(messages) < said["messages"]:
            pager.append(f'<a href="{person_link(name)}?from={offset + SAID_PAGE}">earlier</a>')
        shown = f"{offset + 1}–{offset + len(messages)} of {said['messages']:,}" if messages else "none"
        parts.append(
            f'<h2 id="said">What {e(name)} said <span class="note">(the latest first; {shown})</span></h2>'
            f'<ol class="list" aria-labelledby="said">{rows}</ol>'
            f'<nav class="pager" aria-label="Messages">{" · ".join(pager)}</nav>'
        )
    if prof is not None:
        parts.append(person_knowledge(prof))
    elif said is not None:
        parts.append(
            '<h2 id="known">What is known</h2><p class="note">Nothing learnt yet: facts about people are '
            "built with the local LLM (<code>localmem ingest --extract llm</code>).</p>"
        )
    return layout(request, name, "".join(parts), "/people")


def person_knowledge(prof: dict[str, Any]) -> str:
    """What the LLM's build learnt about a person: aliases, summary, facts by aspect, episodes."""
    parts = []
    if prof.get("aliases"):
        parts.append(f"<p>Also called {e(', '.join(prof['aliases']))}.</p>")
    if prof.get("summary"):
        parts.append(f'<p class="summary">{e(prof["summary"])}</p>')
    parts.append('<h2 id="known">What is known</h2>')
    if not prof["knowledge"]:
        parts.append("<p>Nothing yet.</p>")
    for aspect, statements in prof["knowledge"].items():
        rows = "".join(
            f'<li class="item{"" if s["current"] else " old"}"><a href="/memory/{e(s["unit_id"])}">{e(s["text"])}</a>'
            f' <span class="note">{e(day(s["time"]))}'
            + ("" if s["current"] else f", replaced {e(day(s.get('until')))}")
            + (f" · from {', '.join(ref_link(x) for x in s['sources'])}" if s.get("sources") else "")
            + "</span></li>"
            for s in statements
        )
        parts.append(f'<h3>{e(aspect)}</h3><ul class="list">{rows}</ul>')
    eps = prof["episodes"]
    parts.append(f'<h2 id="tl">In {plural(len(eps), "episode")}</h2>{svg.sparkline([ep["time"] for ep in eps])}')
    parts.append(
        '<ol class="list">'
        + "".join(
            f'<li class="item"><time>{e(day(ep["time"]))}</time> <a href="/memory/{e(ep["episode_id"])}">'
            f'{e(ep["title"] or ref_text(ep["episode_id"], "episode"))}</a> <span class="note">{e(ep["role"])}</span></li>'
            for ep in eps
        )
        + "</ol>"
    )
    return "".join(parts)
