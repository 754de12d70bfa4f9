"""Two pages that show what a store holds without knowing any name first: the conversations,
per source (import), with their counts, dates and people and a way to forget each; and an
overview per source, person and month, with what was built (episodes, facts, vectors) and what
was not. Every number is counted by the store; the page only puts words around it."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from .. import svg
from ..calls import Lanes, as_json
from ..markup import day, e, person_link, plural, source_name, span, url
from .layout import layout

PEOPLE_SHOWN = 4  # names on a conversation's line; the rest are counted
CONVERSATIONS_SHOWN = 2000  # at most on the conversations page
UNIT_WORDS = {"fact": ("fact", "facts"), "gist": ("gist", "gists"), "knowledge": ("piece of knowledge",
              "pieces of knowledge")}  # fmt: skip


def people_line(people: list[dict[str, Any]]) -> str:
    shown = ", ".join(
        f'<a href="{person_link(p["speaker"])}">{e(p["speaker"])}</a> ({p["messages"]:,})'
        for p in people[:PEOPLE_SHOWN]
    )
    rest = len(people) - PEOPLE_SHOWN
    return shown + (f" and {plural(rest, 'other')}" if rest > 0 else "")


async def conversations(request: Request, lanes: Lanes) -> Response:
    """Every conversation, per source: messages, dates, people, episodes; open it or forget it."""
    mem = lanes.reader.memory
    found, sources = await lanes.reader(
        lambda: (mem.browse.conversations_by_source(CONVERSATIONS_SHOWN), as_json(mem.browse.sources()))
    )
    by_source: dict[int, list[dict[str, Any]]] = {}
    for c in found:
        by_source.setdefault(c["source_id"], []).append(c)
    parts = [
        f'<p class="summary">{plural(len(found), "conversation")} from {plural(len(by_source), "source")}. '
        'Open one to read it; "forget" first shows what would go.</p>'
        if found
        else '<p>No conversations yet: import an export on the <a href="/curate">Curate</a> page.</p>'
    ]
    for source in sources:
        convs = by_source.get(source["id"])
        if not convs:
            continue
        rows = "".join(
            f'<li class="item conv-row"><a class="title" href="{e(url("/conversation", around=c["first_id"], n=10))}">'
            f"{e(c['conversation'])}</a> "
            f'<span class="note">{plural(c["messages"], "message")} · {e(span(c["first"], c["last"]))}'
            + (f" · {plural(c['episodes'], 'episode')}" if c["episodes"] else "")
            + f'</span><div class="people">{people_line(c["people"])}</div>'
            f'<a class="forget" href="{e(url("/curate/forget", conversation=c["conversation"]))}">'
            f"forget this conversation…</a></li>"
            for c in convs
        )
        heading = e(source_name(source["kind"], source["uri"]))
        imported = day(source.get("finished_at") or source.get("created_at"))
        parts.append(
            f'<section class="source"><h2>{heading}</h2><p class="note">imported {e(imported)}, '
            f"{plural(source['messages'], 'message')} in {plural(len(convs), 'conversation')}</p>"
            f'<ul class="list convs">{rows}</ul></section>'
        )
    if len(found) >= CONVERSATIONS_SHOWN:
        parts.append(f'<p class="note">The first {CONVERSATIONS_SHOWN:,} conversations are listed.</p>')
    return layout(request, "Conversations", "".join(parts), "/conversations")


def built_html(built: dict[str, Any], messages: int, entities: int) -> str:
    """What was built from the messages, and what was not (with the command that builds it)."""
    units = built["units"]
    rows = [
        (
            "Episodes",
            plural(built["episodes"], "episode"),
            f"{plural(built['summarised'], 'episode')} with a summary by the LLM"
            if built["summarised"]
            else "none has a summary yet: the LLM writes them when messages are imported with <code>--extract llm</code>",
        ),
        (
            "Messages in no episode",
            plural(built["unbuilt"], "message"),
            "all messages are in episodes"
            if not built["unbuilt"]
            else "in open episodes, not built yet: <code>localmem flush</code> closes and builds them",
        ),
    ]
    facts = sum(n for kind, n in units.items() if kind != "episode")
    kinds = ", ".join(plural(n, *UNIT_WORDS.get(k, (k, k + "s"))) for k, n in sorted(units.items()) if k != "episode")
    rows.append(
        (
            "Facts",
            kinds or "none",
            "learnt by the LLM from the episodes"
            if facts
            else "none learnt yet: facts about people and events are built with the LLM "
            "(<code>localmem ingest --extract llm</code>)",
        )
    )
    rows.append(("People and things", plural(entities, "name"), "found by the LLM" if entities else "none found yet"))
    vectors = built["vectors"]
    if vectors is None:
        rows.append(("Vectors", "none", "no embedder has run: search finds messages by their words only"))
    else:
        missing = max(messages - vectors["messages"], 0)
        rows.append(
            (
                "Vectors",
                f"{plural(vectors['messages'], 'message')}, {plural(vectors['units'], 'built memory', 'built memories')}",
                "every message has one: search finds them by meaning too"
                if not missing
                else f"{plural(missing, 'message')} without one yet",
            )
        )
    body = "".join(f'<tr><th scope="row">{a}</th><td class="n">{b}</td><td>{c}</td></tr>' for a, b, c in rows)
    return f'<table class="built" aria-labelledby="built"><tbody>{body}</tbody></table>'


async def overview(request: Request, lanes: Lanes) -> Response:
    """What the store holds per source, person and month, and what was built from it."""
    mem = lanes.reader.memory

    def load() -> tuple[Any, ...]:
        return (
            mem.stats(),
            as_json(mem.browse.sources()),
            as_json(mem.browse.speakers(12)),
            as_json(mem.browse.timeline("month")),
            mem.browse.built(),
        )

    stats, sources, speakers, months, built = await lanes.reader(load)
    if not stats["messages"]:
        body = '<p>The store is empty: import an export on the <a href="/curate">Curate</a> page.</p>'
        return layout(request, "Overview", body, "/overview")
    src_rows = "".join(
        f"<tr><th scope=row>{e(source_name(s['kind'], s['uri']))}</th><td class=n>{s['messages']:,}</td>"
        f"<td>{e(day(s.get('finished_at') or s.get('created_at')))}</td></tr>"
        for s in sources
        if s["messages"]
    )
    people_rows = "".join(
        f'<tr><th scope=row><a href="{person_link(p["speaker"])}">{e(p["speaker"])}</a></th>'
        f"<td class=n>{p['messages']:,}</td><td>{e(day(p['first']))} to {e(day(p['last']))}</td></tr>"
        for p in speakers
    )
    busiest = max(months, key=lambda m: m["messages"]) if months else None
    body = (
        f'<p class="summary">{plural(stats["messages"], "message")} in '
        f'<a href="/conversations">{plural(stats["conversations"], "conversation")}</a> from '
        f"{plural(stats['sources'], 'source')}, said from {e(day(stats.get('first_message_at')))} "
        f"to {e(day(stats.get('last_message_at')))}.</p>"
        '<h2 id="built">What was built, and what was not</h2>'
        + built_html(built, stats["messages"], stats["entities"])
        + '<h2 id="src">Per source</h2><table aria-labelledby="src"><thead><tr><th scope=col>Source</th>'
        f"<th scope=col>Messages</th><th scope=col>Imported</th></tr></thead><tbody>{src_rows}</tbody></table>"
        '<h2 id="ppl">Per person</h2><table aria-labelledby="ppl"><thead><tr><th scope=col>Who</th>'
        f"<th scope=col>Messages</th><th scope=col>When</th></tr></thead><tbody>{people_rows}</tbody></table>"
        + (
            f'<p class="note"><a href="/people">All {plural(len(speakers), "person", "people")} and more</a></p>'
            if len(speakers) >= 12
            else ""
        )
        + '<h2 id="months">Per month</h2>'
        + (
            f"<p>The busiest month: {e(svg.month_name(busiest['start']))}, "
            f"{plural(busiest['messages'], 'message')}.</p>"
            if busiest
            else ""
        )
        + f'<div class="chart" id="chart">{svg.timeline(months, "month")}</div>'
        '<p id="chart-info" class="live" aria-live="polite"></p>'
        '<p><a href="/timeline">The timeline</a>, per month or week.</p>'
    )
    return layout(request, "Overview", body, "/overview")
