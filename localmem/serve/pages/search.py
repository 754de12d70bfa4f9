"""The first page, search & ask: the search form with its filters, the hits, and an answer with
the messages it rests on among those around them (streamed to the page's script as it is made,
or whole without the script)."""

from __future__ import annotations

import json
from typing import Any, AsyncIterator, Sequence

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from ...errors import LocalmemError
from ...text import labels
from .. import api
from ..calls import Lanes, as_json
from ..markup import day, e, plural, url
from .layout import layout
from .pieces import CONTEXT_AROUND, hit_html, terms, thread_rows

SEARCH_K = 10  # hits on the search page


def merged_windows(answer: dict[str, Any], windows: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The cited messages with the messages around them, one entry per conversation (in the
    order of the first citation in each): overlapping or touching windows become one run, and
    no message is shown twice. Each entry: ``conversation``, ``cited`` (ids), ``runs`` (lists
    of messages in order)."""
    groups: dict[str, dict[str, Any]] = {}
    for c in answer.get("citations") or []:
        group = groups.setdefault(c["conversation"], {"conversation": c["conversation"], "cited": [], "seen": {}})
        group["cited"].append(c["id"])
        window = windows.get(c["id"])
        for m in window["messages"] if window else []:
            group["seen"].setdefault(m["id"], m)
        if window is None:  # its window could not be read: the citation alone
            alone = {"id": c["id"], "speaker": c["speaker"], "time": c["time"], "text": c["text"], "seq": None}
            group["seen"].setdefault(c["id"], alone)
    out = []
    for group in groups.values():
        messages = sorted(group.pop("seen").values(), key=lambda m: (m.get("seq") is None, m.get("seq") or 0))
        runs: list[list[dict[str, Any]]] = []
        for m in messages:
            last = runs[-1][-1] if runs else None
            if (
                last is not None
                and m.get("seq") is not None
                and last.get("seq") is not None
                and m["seq"] <= last["seq"] + 1
            ):
                runs[-1].append(m)
            else:
                runs.append([m])
        out.append({**group, "runs": runs})
    return out


def answer_html(answer: dict[str, Any], windows: dict[str, dict[str, Any]], words: Sequence[str] = ()) -> str:
    """The answer, and the cited messages highlighted among the messages around them, one
    window per conversation (the query's words marked)."""
    if answer["refused"]:
        evidence = answer.get("evidence") or []
        why_not = {
            "no evidence": "nothing stored matched the question",
            "model": "the messages found do not say",
            "someone else": "the messages found are about someone else",
            "no citation": "the model could not point at a message that says it",
            "invalid reply": "the model's reply could not be read",
        }.get(answer.get("refusal") or "", answer.get("refusal") or "")
        looked = "".join(hit_html(h, words) for h in evidence[:8])
        read = f" and read {plural(len(evidence), 'message or fact', 'messages or facts')}" if evidence else ""
        return (
            f'<section class="answer refused" aria-live="polite"><h2>Not in memory</h2>'
            f"<p>Searched this namespace for <q>{e(answer['question'])}</q>{read}: {e(why_not)}.</p>"
            + (f'<details><summary>What was read</summary><ol class="hits">{looked}</ol></details>' if looked else "")
            + "</section>"
        )
    cites = answer.get("citations") or []
    parts = [
        f'<section class="answer" aria-live="polite"><h2>Answer</h2><p class="answer-text">{e(answer["answer"])}</p>'
    ]
    if answer.get("confidence") is not None:
        parts.append(
            f'<p class="confidence" title="the model\'s own estimate: {answer["confidence"]:.2f}">'
            f"{e(labels.confidence(answer['confidence']))}</p>"
        )
    groups = merged_windows(answer, windows)
    where = f" in {plural(len(groups), 'conversation')}" if len(groups) > 1 else ""
    parts.append(f"<h3>It rests on {plural(len(cites), 'message')}{where}</h3>")
    for group in groups:
        cited = group["cited"]
        parts.append(
            f'<div class="cite"><p class="conv">in <strong>{e(group["conversation"])}</strong>'
            + (f" · {len(cited)} cited" if len(cited) > 1 else "")
            + "</p>"
        )
        runs = [f'<ol class="thread">{thread_rows(run, cited, words, "cited")}</ol>' for run in group["runs"]]
        parts.append('<p class="gap" aria-hidden="true">⋯</p>'.join(runs))
        parts.append(
            f'<a class="more" href="{e(url("/conversation", around=cited[0], n=10))}">more of this conversation</a>'
        )
        parts.append("</div>")
    parts.append("</section>")
    return "".join(parts)


async def _windows(lanes: Lanes, answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    mem = lanes.reader.memory

    def load() -> dict[str, dict[str, Any]]:
        out = {}
        for c in answer.get("citations") or []:
            try:
                out[c["id"]] = mem.browse.context(c["id"], CONTEXT_AROUND).to_dict()
            except LocalmemError:
                pass
        return out

    return await lanes.reader(load)


FILTERS = ("speaker", "conversation", "since", "until")


def filters_of(params: Any) -> dict[str, str]:
    """The search filters a page was given (the CLI's --speaker, --conversation, --since, --until)."""
    return {name: str(params.get(name)).strip() for name in FILTERS if str(params.get(name) or "").strip()}


def search_form(q: str, chosen: dict[str, str] | None = None, speakers: Sequence[str] = (),
                conversations: Sequence[str] = (), note: str = "") -> str:  # fmt: skip
    chosen = chosen or {}

    def options(name: str, values: Sequence[str], anyone: str) -> str:
        picked = chosen.get(name, "")
        items = [f'<option value="">{e(anyone)}</option>']
        items += [f'<option value="{e(v)}"{" selected" if v == picked else ""}>{e(v)}</option>' for v in values]
        if picked and picked not in values:
            items.append(f'<option value="{e(picked)}" selected>{e(picked)}</option>')
        return "".join(items)

    opened = " open" if chosen else ""
    count = f" ({len(chosen)} set)" if chosen else ""
    return f"""<form class="search" action="/" method="get" role="search">
<label for="q">Search or ask your memory</label>
<div class="row"><input id="q" name="q" type="search" value="{e(q)}" autocomplete="off"
 placeholder="Where did Priya find a flat?" required>
<button name="do" value="search" type="submit">Search</button>
<button name="do" value="ask" type="submit" class="secondary" id="ask-button">Ask</button></div>
<details class="filters"{opened}><summary>Filters{count}</summary><div class="grid">
<div><label for="f-speaker">Said by</label><select id="f-speaker" name="speaker">{options("speaker", speakers, "anyone")}</select></div>
<div><label for="f-conv">In conversation</label><select id="f-conv" name="conversation">{options("conversation", conversations, "any")}</select></div>
<div><label for="f-since">From</label><input id="f-since" name="since" type="date" value="{e(chosen.get("since", "")[:10])}"></div>
<div><label for="f-until">To</label><input id="f-until" name="until" type="date" value="{e(chosen.get("until", "")[:10])}"></div>
</div><p class="note">Search and ask look only among the messages that pass (as <code>localmem search --speaker … --since …</code>).</p></details>
{note}</form><div id="ask-live" class="live" aria-live="polite"></div>"""


async def filter_choices(request: Request, lanes: Lanes) -> tuple[list[str], list[str]]:
    """The speakers and conversations the filters offer (200 of each, the largest first). Read
    again only when the store changed (SQLite's data_version): counting them on every page
    would cost a scan of the messages."""
    mem = lanes.reader.memory
    state = request.app.state

    def load() -> tuple[list[str], list[str]]:
        version = mem.conn.run("data_version").fetchall()[0][0]  # PostgreSQL's too
        cached = getattr(state, "filter_choices", None)
        if cached is not None and cached[0] == version:
            return cached[1]
        choices = mem.browse.names(200)
        state.filter_choices = (version, choices)
        return choices

    return await lanes.reader(load)


async def home(request: Request, lanes: Lanes) -> Response:
    q = (request.query_params.get("q") or "").strip()
    do = request.query_params.get("do") or "search"
    chosen = filters_of(request.query_params)
    mem = lanes.reader.memory
    speakers, conversations = await filter_choices(request, lanes)
    body = [search_form(q, chosen, speakers, conversations, model_note(request))]
    words = terms(q)
    if q and do == "ask":
        answer = as_json(await lanes.writer(lanes.writer.memory.ask, q, **chosen))
        body.append(answer_html(answer, await _windows(lanes, answer), words))
    elif q:
        hits = as_json(await lanes.reader(mem.search, q, k=SEARCH_K, **chosen))
        among = " among the filtered messages" if chosen else ""
        body.append(f'<h2 id="results">{plural(len(hits), "result")} for <q>{e(q)}</q>{among}</h2>')
        body.append(
            f'<ol class="hits list" aria-labelledby="results">{"".join(hit_html(h, words, True) for h in hits)}</ol>'
            if hits
            else f"<p>Nothing stored matches <q>{e(q)}</q>{among}.</p>"
        )
    else:
        stats, recent = await lanes.reader(lambda: (mem.stats(), as_json(mem.recent(8))))
        body.append(
            f'<p class="summary">{plural(stats["messages"], "message")} in '
            f"{plural(stats['conversations'], 'conversation')}, "
            f"from {e(day(stats.get('first_message_at')))} to {e(day(stats.get('last_message_at')))}.</p>"
        )
        if recent:
            body.append('<h2 id="recent">Latest messages</h2><ol class="hits list" aria-labelledby="recent">')
            body.append("".join(hit_html(h) for h in reversed(recent)) + "</ol>")
    return layout(request, "Search & ask", "".join(body), "/")


def model_words(load: Any) -> str:
    """Where the model stands, in words, for the page (which never waits for it)."""
    size = f" (a {load.size / 1e9:.1f} GB file)" if getattr(load, "size", None) else ""
    if load.mode == "background":
        if load.state == "loading":
            return (
                f"The model{size} is loading in the background (for {load.since():.0f} s): search and browse "
                "do not wait for it; a question asked now waits until it is ready."
            )
        if load.state == "ready":
            took = f" in {load.seconds:.1f} s" if load.seconds is not None else ""
            return f"The model{size} was loaded in the background as the server started{took}: questions are answered at once."
        if load.state == "failed":
            return f"The model could not be loaded ({load.error}); a question will say why."
    if load.mode == "first-ask":
        return (
            "The model is loaded by the first question (serve_preload is off): that answer waits for it; "
            "nothing is taken from memory until then."
        )
    return ""


def model_note(request: Request) -> str:
    words = model_words(request.app.state.model)
    state = request.app.state.model.state or request.app.state.model.mode
    return f'<p class="note model-state" data-state="{e(state)}">{e(words)}</p>' if words else ""


async def ask_stream(request: Request, lanes: Lanes) -> Response:
    """For the page's script: ask's events as NDJSON (each stage as it starts, with the time),
    and last the answer as rendered HTML."""
    q = (request.query_params.get("q") or "").strip()
    chosen = filters_of(request.query_params)
    words = terms(q)

    async def events() -> AsyncIterator[bytes]:
        async for event in api.ask_events(lanes, q, {"now": None, **chosen}, model=request.app.state.model):
            if event["event"] == "answer":
                answer = event["answer"]
                event = {"event": "html", "html": answer_html(answer, await _windows(lanes, answer), words)}
            yield (json.dumps(event, ensure_ascii=False) + "\n").encode()

    return StreamingResponse(events(), media_type=api.NDJSON)
